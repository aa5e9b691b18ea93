#!/usr/bin/env bash
# A cold `cargo build --release` (every dependency compiled afresh, in a target
# directory of its own), and the same build with less optimisation: how far the
# shipped build is from a time goal, and how much of it no setting of the profile can
# remove. Run it on a quiet machine; each variant is one whole build (minutes).
#
#   bench/cold-build.sh [VARIANT...]
#
# VARIANT (default: release no-lto opt1 opt0):
#   release  the shipped profile as it is (fat LTO, one codegen unit)
#   no-lto   without LTO, 16 codegen units (the profile's other settings kept)
#   opt1     no LTO, 16 codegen units, opt-level 1 for every crate
#   opt0     no LTO, 256 codegen units, opt-level 0: the floor of any release build
#            of this crate graph on this machine (the compilers' front ends, the
#            build scripts and the C code of the dependencies)
# Prints, per variant: the wall time, the CPU time (user + system), and when the last
# dependency finished (from cargo's --timings report), so that "the dependencies
# alone" can be read against the cores the machine has.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(release no-lto opt1 opt0)
OUT=$(mktemp -d /tmp/troupe-cold-build.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

flags_of() {
  case $1 in
    release) ;;
    no-lto) echo "--config profile.release.lto=false --config profile.release.codegen-units=16" ;;
    opt1) echo "--config profile.release.lto=false --config profile.release.codegen-units=16 --config profile.release.opt-level=1" ;;
    opt0) echo "--config profile.release.lto=false --config profile.release.codegen-units=256 --config profile.release.opt-level=0" ;;
    *) echo "unknown variant: $1" >&2; exit 2 ;;
  esac
}

echo "cores: $(nproc); rustc: $(rustc --version)"
for v in "${VARIANTS[@]}"; do
  flags=$(flags_of "$v")
  rm -rf "$OUT/target"
  # shellcheck disable=SC2086
  ( cd "$HERE" && CARGO_TARGET_DIR="$OUT/target" /usr/bin/time -f '%e %U %S' -o "$OUT/time" \
      cargo build --release --quiet --timings $flags ) 2> "$OUT/log" || { cat "$OUT/log" >&2; exit 1; }
  read -r wall user sys < "$OUT/time"
  deps_done=$(python3 - "$OUT/target/cargo-timings/cargo-timing.html" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", text, re.S).group(1))
# Troupe's own crates (troupe, troupe-protocol, troupe-engine) are not dependencies.
deps = [u["start"] + u["duration"] for u in units if not u["name"].startswith("troupe")]
print(f"{max(deps):.0f}")
EOF
)
  printf '%-8s wall %6.0f s  CPU %6.0f s  dependencies done at %s s\n' \
    "$v" "$wall" "$(echo "$user + $sys" | bc -l)" "$deps_done"
done

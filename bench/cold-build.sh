#!/usr/bin/env bash
# Cold builds as a newcomer meets them: every dependency compiled afresh, in a target
# directory of its own. Run it on a quiet machine; each step is minutes.
#
#   bench/cold-build.sh [STEP...]
#
# STEP (default: demo tests):
#   demo     the README's first command, `cargo run -- demo` (dev profile)
#   tests    after demo, in the same target directory: the test command's builds
#            (`cargo test --workspace --exclude mcp-fixture --all-targets --features
#            test-hooks,bench --no-run`, then `cargo build -p mcp-fixture`), and how many
#            of demo's dependencies the first compiles again (0 when it reuses them all)
#   release  `cargo build --release` (what `cargo install --path .` builds), in a fresh
#            target directory
#   dist     `cargo build --profile dist` (fat LTO, one codegen unit), likewise
# Prints per step: wall time, CPU time (user + system), the peak resident memory of the
# largest single process (a compiler or the linker), and the units compiled.
# env: KEEP=1 keeps the scratch directory; CARGO_BUILD_JOBS as for cargo.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
STEPS=("$@")
[ ${#STEPS[@]} -gt 0 ] || STEPS=(demo tests)
OUT=$(mktemp -d /tmp/troupe-cold-build.XXXXXX)
trap 'if [ "${KEEP:-0}" = 1 ]; then echo "kept $OUT" >&2; else rm -rf "$OUT"; fi' EXIT

# Runs `cargo ARGS...` in target directory $1 (fresh unless the step reuses demo's),
# timed; its stderr (cargo's "Compiling" lines) goes to $OUT/<name>.log.
timed_cargo() {
  local name=$1 target=$2
  shift 2
  (cd "$HERE" && CARGO_TARGET_DIR="$target" /usr/bin/time -f '%e %U %S %M' -o "$OUT/$name.time" \
    cargo "$@") >"$OUT/$name.out" 2>"$OUT/$name.log" || {
    cat "$OUT/$name.log" >&2
    exit 1
  }
}

# The packages a log compiled (name and version), one per line, sorted.
compiled() {
  sed -n 's/^ *Compiling \([^ ]*\) \(v[^ ]*\).*/\1 \2/p' "$OUT/$1.log" | sort -u
}

report() {
  local name=$1 what=$2 wall user sys rss
  read -r wall user sys rss <"$OUT/$name.time"
  printf '%-8s wall %4.0f s (%dm%02ds)  CPU %5.0f s  peak RSS %5.2f GB  %3d packages compiled  %s\n' \
    "$name" "$wall" "$((${wall%.*} / 60))" "$((${wall%.*} % 60))" "$(echo "$user + $sys" | bc -l)" \
    "$(echo "$rss / 1048576" | bc -l)" "$(compiled "$name" | wc -l)" "$what"
}

echo "cores: $(nproc); $(rustc --version); $(cargo --version)"
for step in "${STEPS[@]}"; do
  case $step in
    demo)
      rm -rf "$OUT/target"
      timed_cargo demo "$OUT/target" run -- demo
      report demo "cargo run -- demo"
      ;;
    tests)
      [ -f "$OUT/demo.log" ] || { echo "tests: run after the demo step" >&2; exit 2; }
      timed_cargo tests "$OUT/target" test --workspace --exclude mcp-fixture --all-targets \
        --features test-hooks,bench --no-run
      report tests "cargo test --workspace --exclude mcp-fixture --all-targets --features test-hooks,bench --no-run"
      timed_cargo fixture "$OUT/target" build -p mcp-fixture
      report fixture "cargo build -p mcp-fixture"
      # Dependencies of the demo build compiled again by the test build (the workspace's
      # own crates are rebuilt as test targets, so they do not count).
      again=$(comm -12 <(compiled demo) <(compiled tests) | grep -v -E '^(troupe|troupe-protocol|troupe-engine) ' || true)
      if [ -z "$again" ]; then
        echo "tests    recompiled none of demo's $(compiled demo | grep -c -v -E '^(troupe|troupe-protocol|troupe-engine) ') dependencies"
      else
        echo "tests    recompiled $(echo "$again" | wc -l) of demo's dependencies:" $again
      fi
      ;;
    release)
      rm -rf "$OUT/target-release"
      timed_cargo release "$OUT/target-release" build --release
      report release "cargo build --release"
      ;;
    dist)
      rm -rf "$OUT/target-dist"
      timed_cargo dist "$OUT/target-dist" build --profile dist
      report dist "cargo build --profile dist"
      ;;
    *)
      echo "unknown step: $step (demo, tests, release, dist)" >&2
      exit 2
      ;;
  esac
done

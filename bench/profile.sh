#!/usr/bin/env bash
# What the runtime costs per call, in instructions and allocations, measured so that a
# loaded machine does not change the figures: callgrind counts the instructions of the
# whole `troupe -p` process and the calls into Rust's global allocator (alloc, realloc)
# for N1 and N2 parallel read_file calls; the difference divided by N2 - N1 is the cost
# of one call (start-up and the model turns cancel out). Needs valgrind and python3.
#
#   bench/profile.sh [N1] [N2]      (default 1000 3000)
set -euo pipefail
N1=${1:-1000}
N2=${2:-3000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PEER=${PEER_SCRIPTS:-$HERE/../shared/peers/gemini-cli}
OUT=$(mktemp -d /tmp/troupe-profile.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release --quiet --manifest-path "$HERE/Cargo.toml"
TROUPE=${TROUPE:-${CARGO_TARGET_DIR:-$HERE/target}/release/troupe}
export TROUPE_HOME=$OUT/home HOME=$OUT/home
mkdir -p "$OUT/home"

# Calls into the global allocator recorded in a callgrind file.
allocs() {
  python3 - "$1" <<'PY'
import re, sys
names, total, pending = {}, 0, None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3).strip()
        pending = m.group(2) if m.group(1) == "cfn" else None
        continue
    if pending and line.startswith("calls="):
        if re.search(r"__rust_(alloc|alloc_zeroed|realloc)$", names.get(pending, "")):
            total += int(line.split()[0][6:])
        pending = None
print(total)
PY
}

run() { # n -> "instructions allocations"
  local n=$1
  local dir=$OUT/p$n
  python3 "$PEER/make_script.py" parallel "$dir" "$n" > /dev/null
  (cd "$dir/ws" && valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$n" \
     "$TROUPE" -p x --fake-responses ../responses.jsonl -o json --yolo > "$OUT/o.$n" 2> "$OUT/e.$n")
  if ! grep -q "\"totalSuccess\": $n" "$OUT/o.$n"; then
    echo "run of $n calls failed" >&2
    # The FileSystem actor opens files with openat2(RESOLVE_BENEATH); a valgrind without
    # that system call makes every read fail with ENOSYS.
    if grep -q "os error 38" "$OUT/o.$n"; then
      echo "valgrind does not implement openat2 (ENOSYS): every read failed; use a valgrind that implements openat2" >&2
    fi
    exit 1
  fi
  echo "$(grep -o 'Collected : [0-9]*' "$OUT/e.$n" | awk '{print $3}') $(allocs "$OUT/cg.$n")"
}

read -r I1 A1 <<< "$(run "$N1")"
read -r I2 A2 <<< "$(run "$N2")"
awk -v i1="$I1" -v i2="$I2" -v a1="$A1" -v a2="$A2" -v n1="$N1" -v n2="$N2" 'BEGIN {
  printf "instructions: %d calls %.1f M, %d calls %.1f M -> %.0f per call, %.1f M fixed\n", n1, i1/1e6, n2, i2/1e6, (i2-i1)/(n2-n1), (i1 - n1*(i2-i1)/(n2-n1))/1e6
  printf "allocations:  %d calls %d, %d calls %d -> %.1f per call\n", n1, a1, n2, a2, (a2-a1)/(n2-n1)
}'

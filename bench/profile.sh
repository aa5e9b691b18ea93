#!/usr/bin/env bash
# What the runtime costs per call, in instructions and allocations, measured so that a
# loaded machine does not change the figures: valgrind counts (callgrind: instructions;
# dhat: allocations) of the whole `troupe -p` process for N1 and N2 parallel read_file
# calls, and the difference divided by N2 - N1 (start-up and the model turns cancel out).
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

count() { # tool n -> figure
  local tool=$1 n=$2
  local dir=$OUT/p$n
  [ -d "$dir" ] || python3 "$PEER/make_script.py" parallel "$dir" "$n" > /dev/null
  (cd "$dir/ws" && valgrind --tool="$tool" --"$tool"-out-file="$OUT/$tool.$n" \
     "$TROUPE" -p x --fake-responses ../responses.jsonl -o json --yolo > "$OUT/o.$tool.$n" 2> "$OUT/e.$tool.$n")
  grep -q "\"totalSuccess\": $n" "$OUT/o.$tool.$n" || { echo "run of $n calls failed" >&2; exit 1; }
  case $tool in
    callgrind) grep -o 'Collected : [0-9]*' "$OUT/e.$tool.$n" | awk '{print $3}' ;;
    dhat) grep -o 'Total: *[0-9,]* bytes in *[0-9,]* blocks' "$OUT/e.$tool.$n" | awk '{gsub(",","",$5); print $5}' ;;
  esac
}

I1=$(count callgrind "$N1"); I2=$(count callgrind "$N2")
A1=$(count dhat "$N1"); A2=$(count dhat "$N2")
awk -v i1="$I1" -v i2="$I2" -v a1="$A1" -v a2="$A2" -v n1="$N1" -v n2="$N2" 'BEGIN {
  printf "instructions: %d calls %.1f M, %d calls %.1f M -> %.0f per call, %.1f M fixed\n", n1, i1/1e6, n2, i2/1e6, (i2-i1)/(n2-n1), (i1 - n1*(i2-i1)/(n2-n1))/1e6
  printf "allocations:  %d calls %d, %d calls %d -> %.1f per call\n", n1, a1, n2, a2, (a2-a1)/(n2-n1)
}'

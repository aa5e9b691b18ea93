#!/usr/bin/env bash
# N parallel read_file calls in one model turn: Troupe against the real gemini-cli 0.61,
# on the same workspace and the same fake-responses script, in the same run.
#
#   bench/vs-gemini.sh [N] [RUNS]      (default N=1000, RUNS=3; medians are printed)
#
# gemini-cli comes from ../shared/peers/gemini-cli/run.sh (npm install on first use,
# about 30 s; set SKIP_GEMINI=1 to measure Troupe alone). gemini-cli's side needs /usr/bin/time.
# PROFILE=dist (default) builds the packagers' binary (fat LTO); SKIP_BUILD=1 TROUPE=path uses one.
# Troupe's time and peak RSS come from bench/timed.py (python3).
set -euo pipefail
N=${1:-1000}
RUNS=${2:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PEER=${PEER_SCRIPTS:-$HERE/../shared/peers/gemini-cli}
OUT=$(mktemp -d /tmp/troupe-vs-gemini.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

PROFILE=${PROFILE:-dist}
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --profile "$PROFILE" --quiet --manifest-path "$HERE/Cargo.toml"
TROUPE=${TROUPE:-${CARGO_TARGET_DIR:-$HERE/target}/$PROFILE/troupe}
python3 "$PEER/make_script.py" parallel "$OUT" "$N"
mkdir -p "$OUT/home"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Troupe is timed as gemini-cli is (/usr/bin/time in the peer's run.sh: from spawning
# the process to reaping it), at microsecond resolution: bench/timed.py. Its binary is
# first dropped from the page cache, so that a fresh build is loaded as an installed one.
python3 "$HERE/bench/timed.py" --evict "$TROUPE"
for i in $(seq "$RUNS"); do
  HOME=$OUT/home python3 "$HERE/bench/timed.py" "$OUT/t$i" --cd "$OUT/ws" --stdout "$OUT/o$i.json" -- \
     "$TROUPE" -p "Do the scripted task." --fake-responses "$OUT/responses.jsonl" -o json --yolo
  grep -q "\"totalSuccess\": $N" "$OUT/o$i.json" || { echo "troupe run $i did not succeed" >&2; exit 1; }
done
T_WALL=$(for i in $(seq "$RUNS"); do cut -d' ' -f1 "$OUT/t$i"; done | median)
T_RSS=$(for i in $(seq "$RUNS"); do cut -d' ' -f2 "$OUT/t$i"; done | median)
echo "troupe:     N=$N wall ${T_WALL}s peak RSS $((T_RSS / 1024)) MB (median of $RUNS)"

if [ "${SKIP_GEMINI:-0}" = 1 ]; then exit 0; fi
for i in $(seq "$RUNS"); do
  OUT="$OUT/g$i" bash "$PEER/run.sh" parallel "$N" > /dev/null 2>&1 || true
  if [ ! -f "$OUT/g$i/time.txt" ]; then echo "gemini-cli did not run (see $PEER/README.md)"; exit 0; fi
  W=$(grep 'Elapsed (wall clock)' "$OUT/g$i/time.txt" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  M=$(grep 'Maximum resident' "$OUT/g$i/time.txt" | awk '{print $NF}')
  echo "$W $M" > "$OUT/gt$i"
done
G_WALL=$(for i in $(seq "$RUNS"); do cut -d' ' -f1 "$OUT/gt$i"; done | median)
G_RSS=$(for i in $(seq "$RUNS"); do cut -d' ' -f2 "$OUT/gt$i"; done | median)
echo "gemini-cli: N=$N wall ${G_WALL}s peak RSS $((G_RSS / 1024)) MB (median of $RUNS)"
awk -v g="$G_WALL" -v t="$T_WALL" -v gm="$G_RSS" -v tm="$T_RSS" \
  'BEGIN { printf "ratio:      gemini-cli/troupe wall %.1fx, memory %.1fx\n", g/t, gm/tm }'

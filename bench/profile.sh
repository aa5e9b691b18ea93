#!/usr/bin/env bash
# What the runtime costs per call, measured so that a loaded machine changes the figures
# little: CPU time (not wall time) and allocator calls, each as a ratio against the bare
# loop doing the same reads in the same process and run.
#
#   bench/profile.sh [N] [REPEAT]      (default 1000 3)
#
# 1. CPU: `troupe bench --calls N`, REPEAT times. The bench reads the process's CPU
#    clock over the turn (all threads) and the bare loop's thread CPU clock
#    (`turn_cpu_ms`, `floor_cpu_ms`, `cpu_overhead_per_call_us`, `cpu_ratio` in its
#    JSON); medians are printed.
# 2. Allocations: uprobes on the global allocator's entry points (mimalloc's
#    `mi_malloc_aligned`, `mi_zalloc_aligned`, `mi_realloc_aligned`, or libc's
#    malloc/calloc/realloc if the binary has no mimalloc), recorded with `perf record`
#    for one `troupe bench --calls N --files 100` and counted per thread: the bare loop
#    runs on its own thread (`bench-bare-loop`); every other thread is the runtime.
#    Runtime allocations are counted for N and 2N calls and differenced, so start-up,
#    shutdown and the 100-file workspace cancel out (building and parsing the scripted
#    model's N calls is counted: a real model's answer is parsed too).
# 3. Where the CPU goes (PROFILE=1): `perf record -e cpu-clock --call-graph dwarf` of a
#    whole `troupe -p` run of N parallel reads (the bench/vs-gemini.sh workload), and the
#    functions with the most CPU time (inclusive). Slow to report (minutes for N=5000).
#
# Needs perf (root, for the uprobes; tracefs is mounted if missing) and python3.
# valgrind cannot run troupe (3.19 has no `openat2`, which the FileSystem actor uses).
set -euo pipefail
N=${1:-1000}
REPEAT=${2:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PEER=${PEER_SCRIPTS:-$HERE/../shared/peers/gemini-cli}
OUT=$(mktemp -d /tmp/troupe-profile.XXXXXX)
trap 'perf probe -q -d "probe_troupe_prof:*" >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
PROFILE=${PROFILE:-dist}
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --profile "$PROFILE" --quiet --manifest-path "$HERE/Cargo.toml"
TROUPE=${TROUPE:-${CARGO_TARGET_DIR:-$HERE/target}/$PROFILE/troupe}
export TROUPE_HOME=$OUT/home HOME=$OUT/home
mkdir -p "$OUT/home"

# 1. CPU time per call against the bare loop.
for i in $(seq "$REPEAT"); do
  "$TROUPE" bench --calls "$N" > "$OUT/cpu$i.json"
done
python3 - "$N" "$OUT"/cpu*.json <<'PY'
import json, statistics, sys
n = int(sys.argv[1])
runs = [json.load(open(f)) for f in sys.argv[2:]]
def med(key):
    return statistics.median(r[key] for r in runs)
turn, floor = med("turn_cpu_ms"), med("floor_cpu_ms")
print(f"CPU, {n} parallel read_file calls (median of {len(runs)} runs):")
print(f"  turn {turn:.1f} ms = {turn * 1e3 / n:.1f} µs per call; bare loop {floor:.2f} ms = {floor * 1e3 / n:.2f} µs per read")
print(f"  overhead {med('cpu_overhead_per_call_us'):.1f} µs CPU per call, turn = {med('cpu_ratio'):.1f}× the bare loop's CPU")
print(f"  (wall: turn {med('turn_wall_ms'):.1f} ms, bare loop {med('floor_bare_loop_ms'):.2f} ms, overhead {med('overhead_per_call_us'):.1f} µs per call)")
PY

# 2. Allocator calls per call against the bare loop.
if ! perf probe -q -l >/dev/null 2>&1; then
  echo "allocations: perf probe is not available (needs root)"; exit 0
fi
[ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
PROBES=()
SYMBOLS=$(nm "$TROUPE" 2>/dev/null || true)
for f in mi_malloc_aligned mi_zalloc_aligned mi_realloc_aligned; do
  if grep -q " T $f\$" <<< "$SYMBOLS"; then
    perf probe -q -x "$TROUPE" --add "probe_troupe_prof:$f=$f" && PROBES+=("probe_troupe_prof:$f")
  fi
done
if [ ${#PROBES[@]} = 0 ]; then
  LIBC=$(ldd "$TROUPE" | awk '/libc.so/ {print $3}')
  for f in malloc calloc realloc; do
    perf probe -q -x "$LIBC" --add "probe_troupe_prof:$f=$f" && PROBES+=("probe_troupe_prof:$f")
  done
fi
EVENTS=$(IFS=,; echo "${PROBES[*]}")
count() { # calls -> "runtime bare" allocator calls
  perf record -q -o "$OUT/alloc.data" -e "$EVENTS" "$TROUPE" bench --calls "$1" --files 100 > /dev/null 2>&1
  perf script -i "$OUT/alloc.data" -F comm 2>/dev/null | awk '
    $1 == "bench-bare-loop" { bare++ ; next } { rt++ } END { print rt + 0, bare + 0 }'
}
read -r R1 B1 <<< "$(count "$N")"
read -r R2 B2 <<< "$(count $((2 * N)))"
awk -v r1="$R1" -v r2="$R2" -v b1="$B1" -v b2="$B2" -v n="$N" 'BEGIN {
  per = (r2 - r1) / n; bare = b2 / (2 * n)
  printf "allocations (allocator calls, all threads but the bare loop; %d and %d calls differenced):\n", n, 2 * n
  printf "  %.1f per call; bare loop %.1f per read: %.0f× the bare loop\n", per, bare, (bare > 0 ? per / bare : 0)
}'

# 3. Where the CPU goes.
[ "${PROFILE:-0}" = 1 ] || exit 0
python3 "$PEER/make_script.py" parallel "$OUT/p" "$N" > /dev/null
(cd "$OUT/p/ws" && perf record -q -o "$OUT/cpu.data" -e cpu-clock -F 5000 --call-graph dwarf,8192 \
   "$TROUPE" -p x --fake-responses ../responses.jsonl -o json --yolo > "$OUT/p.out" 2>/dev/null)
echo "CPU by thread (whole troupe -p process, $N reads):"
perf report -i "$OUT/cpu.data" --no-children --sort comm -g none --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
echo "functions with the most CPU (inclusive), troupe's own:"
perf report -i "$OUT/cpu.data" --children --sort symbol -g none --stdio 2>/dev/null \
  | grep -E '^ +[0-9].*troupe::' | head -30 | cut -c1-160

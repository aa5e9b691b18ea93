#!/usr/bin/env bash
# N subagents in ONE process: Troupe against the real gemini-cli 0.61, both talking to the
# same loopback fake Gemini API (examples/agents_server.rs, a port of bench/agents_server.py),
# which answers by request body:
# the parent's first turn calls invoke_agent N times (agent "generalist", prompt
# "bench-child-<i>"); each child calls read_file on f<i%64>.txt, then complete_task; the
# parent then answers with text. All N children run at once on both sides.
#
#   bench/agents-vs-gemini.sh [N] [RUNS]     (default N=200, RUNS=3; medians are printed)
#
# env: TROUPE=path      binary to measure (default: a private copy of target/dist/troupe;
#                       this script never builds Troupe)
#      PEER_DIR=/tmp/peer  gemini-cli 0.61 npm install dir (see ../shared/peers/gemini-cli/README.md)
#      SKIP_GEMINI=1    measure Troupe alone      GEMINI_RUNS=k  runs on gemini-cli's side (default RUNS)
#      TIMEOUT=600      seconds allowed per run   KEEP=1  keep the scratch dir (requests, outputs)
#      SERVER=rust      the fake API: rust (default; examples/agents_server.rs) or python
#                       (bench/agents_server.py: same answers and checks, but it was the limit
#                       of Troupe's runs: at N=200 its 402 requests spanned 0.30 s of Troupe's
#                       0.35 s; the Rust server spends about 25 ms of CPU on them)
#      SERVER_BIN=path  the Rust server to use (default: built here with
#                       `cargo build --release --example agents_server`, honouring CARGO_TARGET_DIR)
# Troupe runs with -c agents.max_concurrent=N (its default is 8; gemini-cli has no such cap and
# starts all N at once); model.max_concurrent_requests stays at its default 0 (no limit).
# Each run gets a fresh HOME and its own server, inside `unshare -n` (loopback only) when
# permitted. Both sides are timed by bench/timed.py (spawn to reap; peak RSS from wait4).
# A run counts only if the server gave N complete_task answers (one per child, each child's
# read_file response holding its file), the parent's last request held N invoke_agent
# functionResponses carrying N distinct child results, and the CLI's response text says so.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SELF=$HERE/bench/agents-vs-gemini.sh
PEER_DIR=${PEER_DIR:-/tmp/peer}
GEMINI_JS=$PEER_DIR/node_modules/@google/gemini-cli/bundle/gemini.js
TIMEOUT=${TIMEOUT:-600}
PROMPT="bench-parent: start the agents"

# ---- one run: SIDE (troupe|gemini) N TAG, in $OUT; possibly inside `unshare -n` ----
if [ "${1:-}" = __one ]; then
  SIDE=$2 N=$3 TAG=$4 R=$OUT/$4
  ip link set lo up 2>/dev/null || true
  rm -rf "$R"; mkdir -p "$R/home/.gemini"
  if [ "$SERVER" = python ]; then SRV_CMD=(python3 "$HERE/bench/agents_server.py"); else SRV_CMD=("$SERVER_BIN"); fi
  "${SRV_CMD[@]}" --agents "$N" --port-file "$R/port" --stats "$R/stats.json" \
    --log-dir "$R/reqs" --log-children 2 --max-seconds $((TIMEOUT + 60)) 2> "$R/server.log" &
  SRV=$!
  TPID=
  cleanup() {
    if [ -n "$TPID" ]; then for c in $(pgrep -P "$TPID" 2>/dev/null); do kill "$c" 2>/dev/null || true; done; fi
    if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; fi
  }
  trap cleanup EXIT
  for _ in $(seq 200); do [ -f "$R/port" ] && break; sleep 0.05; done
  [ -f "$R/port" ] || { echo "${SRV_CMD[*]} did not start: $(cat "$R/server.log")" >&2; exit 1; }
  export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$(cat "$R/port") GEMINI_API_KEY=dummy
  export HOME=$R/home NO_COLOR=1
  if [ "$SIDE" = troupe ]; then
    export TROUPE_HOME=$R/home/.troupe
    CMD=("$TROUPE" -p "$PROMPT" -o json --yolo -c "agents.max_concurrent=$N")
  else
    export GEMINI_CLI_HOME=$R/home GEMINI_CLI_NO_RELAUNCH=true GEMINI_TELEMETRY_ENABLED=false
    # run.sh's offline settings; experimental.enableAgents defaults to true in 0.61
    # (settings schema: "Enable local and remote subagents"), set here so it stays on.
    cat > "$R/home/.gemini/settings.json" <<'EOF'
{
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "tools": {"disableLLMCorrection": true},
  "ide": {"enabled": false},
  "experimental": {"enableAgents": true}
}
EOF
    CMD=(node "$GEMINI_JS" -m gemini-2.5-flash -p "$PROMPT" -o json --yolo --skip-trust)
  fi
  python3 "$HERE/bench/timed.py" "$R/time" --cd "$OUT/ws" --stdout "$R/out.json" -- "${CMD[@]}" \
    2> "$R/stderr.log" &
  TPID=$!
  ( trap 'kill "$SL" 2>/dev/null; exit 0' TERM; sleep "$TIMEOUT" & SL=$!; wait "$SL"
    for c in $(pgrep -P "$TPID" 2>/dev/null); do kill "$c" 2>/dev/null || true; done ) &
  DOG=$!
  rc=0; wait "$TPID" || rc=$?
  TPID=
  kill "$DOG" 2>/dev/null || true; wait "$DOG" 2>/dev/null || true
  kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true
  SRV=
  if [ "$rc" != 0 ]; then
    why=; [ "$rc" = 241 ] && why=" (killed by SIGTERM: TIMEOUT=${TIMEOUT}s passed)"   # timed.py exits -15
    echo "$SIDE run $TAG: exit code $rc$why; see $R/stderr.log:" >&2; tail -5 "$R/stderr.log" >&2; exit 1
  fi
  # verify: server-side counts and the CLI's own report
  python3 - "$SIDE" "$N" "$R" <<'EOF'
import json, sys
side, n, r = sys.argv[1], int(sys.argv[2]), sys.argv[3]
st = json.load(open(f"{r}/stats.json"))
out = json.load(open(f"{r}/out.json"))
k = st["kinds"]
last = st["parent_last_request"] or {}
want = f"bench-done: {n} invoke_agent responses, {n} distinct child results"
checks = {
    "complete_task answers": k.get("child-complete", 0) == n and st["children_completed"] == n,
    "read_file contents reached the children": st["children_got_file"] == n,
    "parent's last request: N invoke_agent functionResponses":
        last.get("invoke_agent_responses") == n and last.get("distinct_child_results") == n,
    "response text": out.get("response", "").strip() == want,
}
stats = out.get("stats", {})
if side == "troupe":
    g = stats.get("agents", {}).get("generalist", {})
    checks["stats.agents.generalist count/GOAL"] = g.get("count") == n and g.get("terminationReasons", {}).get("GOAL") == n
else:
    by = stats.get("tools", {}).get("byName", {})
    checks["stats.tools invoke_agent/complete_task success"] = (
        by.get("invoke_agent", {}).get("success") == n and by.get("complete_task", {}).get("success") == n)
bad = [c for c, ok in checks.items() if not ok]
extra = {kk: v for kk, v in k.items() if kk not in ("parent-start", "parent-final", "child-read", "child-complete")}
per = ", ".join(f"{c} children x {q}" for q, c in st["requests_per_child"].items())
summary = (f"{st['requests']} requests ({per} requests each; parent {k.get('parent-start', 0)}+{k.get('parent-final', 0)}; "
           f"other {extra or 'none'}; {st['connections']} TCP connections; peak in flight {st['peak_inflight']}; "
           f"first request to last answer {st['span_seconds']}s)")
open(f"{r}/summary", "w").write(summary + "\n")
if bad:
    sys.exit(f"{side} run {r}: FAILED checks: {bad}; {summary}; response: {out.get('response')!r}")
EOF
  exit 0
fi

# ---- driver ----
N=${1:-200}
RUNS=${2:-3}
GEMINI_RUNS=${GEMINI_RUNS:-$RUNS}
export OUT=$(mktemp -d /tmp/troupe-agents-vs-gemini.XXXXXX) TIMEOUT HERE
# the scratch dir (workspace, per-run outputs, sample request bodies) is kept on failure or KEEP=1
trap 'rc=$?; if [ "${KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then echo "kept $OUT" >&2; else rm -rf "$OUT"; fi' EXIT

if [ -z "${TROUPE:-}" ]; then
  SRC=${CARGO_TARGET_DIR:-$HERE/target}/dist/troupe
  [ -x "$SRC" ] || { echo "no Troupe binary at $SRC: build it (cargo build --profile dist) or set TROUPE=path" >&2; exit 1; }
  cp "$SRC" "$OUT/troupe"   # a private copy: a rebuild during the runs cannot swap it
  TROUPE=$OUT/troupe
fi
[ -x "$TROUPE" ] || { echo "TROUPE=$TROUPE is not an executable" >&2; exit 1; }
export TROUPE
command -v python3 > /dev/null || { echo "python3 is required" >&2; exit 1; }
SERVER=${SERVER:-rust}
case $SERVER in
  python) SERVER_BIN= ;;
  rust)
    if [ -z "${SERVER_BIN:-}" ]; then
      echo "building the fake API: cargo build --release --example agents_server" >&2
      (cd "$HERE" && cargo build --release --example agents_server) >&2
      SRC=${CARGO_TARGET_DIR:-$HERE/target}/release/examples/agents_server
      cp "$SRC" "$OUT/agents_server"   # a private copy, as for Troupe
      SERVER_BIN=$OUT/agents_server
    fi
    [ -x "$SERVER_BIN" ] || { echo "SERVER_BIN=$SERVER_BIN is not an executable" >&2; exit 1; } ;;
  *) echo "SERVER=$SERVER: rust or python" >&2; exit 1 ;;
esac
export SERVER SERVER_BIN

mkdir -p "$OUT/ws"
for k in $(seq 0 63); do
  f=$(printf 'f%03d.txt' "$k")
  printf 'bench-file-%d\nThis is %s, one of the 64 files the subagents read.\n' "$k" "$f" > "$OUT/ws/$f"
done
if unshare -n true 2>/dev/null; then NETNS=(unshare -n); ISOL="unshare -n"
else NETNS=(); ISOL="no network isolation (unshare -n not permitted)"; fi

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# side runs label: prints "WALL RSS_KB" medians
measure() {
  local side=$1 runs=$2 i
  for i in $(seq "$runs"); do
    "${NETNS[@]}" bash "$SELF" __one "$side" "$N" "$side$i" || { echo "$side run $i failed (N=$N)" >&2; exit 1; }
  done
  W=$(for i in $(seq "$runs"); do cut -d' ' -f1 "$OUT/$side$i/time"; done | median)
  M=$(for i in $(seq "$runs"); do cut -d' ' -f2 "$OUT/$side$i/time"; done | median)
}

echo "N=$N subagents (generalist: read_file, then complete_task) in one process; $ISOL; $(nproc) cores; fake API: $SERVER server"
python3 "$HERE/bench/timed.py" --evict "$TROUPE"
measure troupe "$RUNS"; T_WALL=$W T_RSS=$M
printf 'troupe:     N=%s wall %.3fs peak RSS %s MB (median of %s; -c agents.max_concurrent=%s)\n' \
  "$N" "$T_WALL" "$((T_RSS / 1024))" "$RUNS" "$N"
echo "            requests: $(cat "$OUT/troupe1/summary")"

if [ "${SKIP_GEMINI:-0}" = 1 ]; then exit 0; fi
if [ ! -f "$GEMINI_JS" ] || ! command -v node > /dev/null; then
  echo "gemini-cli: not installed at $PEER_DIR (no $GEMINI_JS or no node); install it as in"
  echo "            ../shared/peers/gemini-cli/README.md (npm install @google/gemini-cli@0.61.0), or set PEER_DIR"
  exit 0
fi
measure gemini "$GEMINI_RUNS"; G_WALL=$W G_RSS=$M
printf 'gemini-cli: N=%s wall %.3fs peak RSS %s MB (median of %s)\n' "$N" "$G_WALL" "$((G_RSS / 1024))" "$GEMINI_RUNS"
echo "            requests: $(cat "$OUT/gemini1/summary")"
awk -v g="$G_WALL" -v t="$T_WALL" -v gm="$G_RSS" -v tm="$T_RSS" \
  'BEGIN { printf "ratio:      gemini-cli/troupe wall %.1fx, memory %.1fx\n", g/t, gm/tm }'

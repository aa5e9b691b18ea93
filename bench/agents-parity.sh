#!/usr/bin/env bash
# Byte-level parity of what Troupe and the real gemini-cli 0.61 send back to the model around
# invoke_agent, in one scripted sequential conversation served by bench/agents_parity_server.py
# (loopback fake Gemini API that answers by request body and logs every request):
#   parent r0: invoke_agent {"agent_name":"generalist","prompt":"parity-child: read notes.txt and report"}
#     child r0: read_file {"file_path": "notes.txt"}   child r1: complete_task {"result":{"response":"notes.txt says hello"}}
#   parent r1: invoke_agent {"agent_name":"no_such_agent","prompt":"x"}
#   parent r2: text "done"
# Then it compares, between the two clients:
#   (1) the parent's functionResponse for the generalist call   (2) the one for no_such_agent
#   (3) the child's first request: system instruction (summary), first user text, tool
#       declarations (names, complete_task schema)              (4) the child's read_file functionResponse
# and prints the values and a verdict per item (identical / differs).
#
#   bench/agents-parity.sh
#
# env: TROUPE=path     binary (default: a private copy of target/release/troupe; never builds)
#      PEER_DIR=/tmp/peer  gemini-cli 0.61 npm install dir (../shared/peers/gemini-cli/README.md)
#      READ_PATH=rel|abs   file_path the child's read_file gets: "notes.txt" (default) or the
#                          absolute workspace path (the workspace path is the same on both sides)
#      TIMEOUT=300     seconds per run    KEEP=1  keep the scratch dir (request logs, outputs)
#      OUT=dir         scratch dir (default mktemp); request bodies land in $OUT/<side>/reqs/
# Both sides run in the same workspace path ($OUT/ws, recreated before each run, holding
# notes.txt = "hello\n"), each with its own HOME and server, inside `unshare -n` when permitted.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
SELF=$HERE/bench/agents-parity.sh
PEER_DIR=${PEER_DIR:-/tmp/peer}
GEMINI_JS=$PEER_DIR/node_modules/@google/gemini-cli/bundle/gemini.js
TIMEOUT=${TIMEOUT:-300}
READ_PATH=${READ_PATH:-rel}
PROMPT="parity-parent: delegate the scripted task"

# ---- one run: SIDE (troupe|gemini), in $OUT/SIDE; possibly inside `unshare -n` ----
if [ "${1:-}" = __one ]; then
  SIDE=$2 R=$OUT/$2
  ip link set lo up 2>/dev/null || true
  rm -rf "$R" "$OUT/ws"; mkdir -p "$R/home/.gemini" "$OUT/ws"
  printf 'hello\n' > "$OUT/ws/notes.txt"
  RP=notes.txt; [ "$READ_PATH" = abs ] && RP=$OUT/ws/notes.txt
  python3 "$HERE/bench/agents_parity_server.py" --log-dir "$R/reqs" --port-file "$R/port" \
    --read-path "$RP" --max-seconds $((TIMEOUT + 60)) 2> "$R/server.log" &
  SRV=$!
  trap 'kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true' EXIT
  for _ in $(seq 200); do [ -f "$R/port" ] && break; sleep 0.05; done
  [ -f "$R/port" ] || { echo "agents_parity_server.py did not start: $(cat "$R/server.log")" >&2; exit 1; }
  export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$(cat "$R/port") GEMINI_API_KEY=dummy
  export HOME=$R/home NO_COLOR=1
  if [ "$SIDE" = troupe ]; then
    export TROUPE_HOME=$R/home/.troupe
    CMD=("$TROUPE" -p "$PROMPT" -o json --yolo --skip-trust)
  else
    export GEMINI_CLI_HOME=$R/home GEMINI_CLI_NO_RELAUNCH=true GEMINI_TELEMETRY_ENABLED=false
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
  rc=0
  (cd "$OUT/ws" && timeout "$TIMEOUT" "${CMD[@]}" > "$R/out.json" 2> "$R/stderr.log" < /dev/null) || rc=$?
  echo "$rc" > "$R/rc"
  exit 0
fi

# ---- driver ----
export OUT=${OUT:-$(mktemp -d /tmp/troupe-agents-parity.XXXXXX)} TIMEOUT HERE READ_PATH
mkdir -p "$OUT"
trap 'rc=$?; if [ "${KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then echo "kept $OUT" >&2; else rm -rf "$OUT"; fi' EXIT
if [ -z "${TROUPE:-}" ]; then
  SRC=${CARGO_TARGET_DIR:-$HERE/target}/release/troupe
  [ -x "$SRC" ] || { echo "no Troupe binary at $SRC: build it or set TROUPE=path" >&2; exit 1; }
  cp "$SRC" "$OUT/troupe-bin"   # a private copy: a rebuild during the run cannot swap it
  TROUPE=$OUT/troupe-bin
fi
[ -x "$TROUPE" ] || { echo "TROUPE=$TROUPE is not an executable" >&2; exit 1; }
[ -f "$GEMINI_JS" ] && command -v node > /dev/null || {
  echo "gemini-cli 0.61 not installed at $PEER_DIR (see ../shared/peers/gemini-cli/README.md)" >&2; exit 1; }
export TROUPE
if unshare -n true 2>/dev/null; then NETNS=(unshare -n); ISOL="unshare -n"
else NETNS=(); ISOL="no network isolation (unshare -n not permitted)"; fi

echo "agents parity: troupe=$TROUPE gemini-cli=$GEMINI_JS; READ_PATH=$READ_PATH; $ISOL"
for side in troupe gemini; do
  "${NETNS[@]}" bash "$SELF" __one "$side"
  echo "$side: exit $(cat "$OUT/$side/rc"), $(ls "$OUT/$side/reqs" | wc -l) requests logged in $OUT/$side/reqs"
done

python3 - "$OUT" <<'EOF'
import json, os, re, sys, difflib
out = sys.argv[1]
ws = os.path.join(out, "ws")


def load(side):
    d = os.path.join(out, side, "reqs")
    return [(f, json.load(open(os.path.join(d, f)))) for f in sorted(os.listdir(d))]


def norm(v, side):
    """Replaces what necessarily differs (scratch HOME, temp dirs, dates) by placeholders."""
    s = json.dumps(v, ensure_ascii=False)
    s = s.replace(os.path.join(out, side, "home"), "<HOME>").replace(ws, "<WS>")
    s = re.sub(r"/tmp/troupe-agents-parity\.[A-Za-z0-9]+", "<OUT>", s)
    s = re.sub(r"\b20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?\b", "<TIME>", s)
    return json.loads(s)


def responses(body, name):
    rs = []
    for c in body.get("contents", []):
        for p in c.get("parts", []):
            fr = p.get("functionResponse")
            if fr and fr.get("name") == name:
                rs.append(fr)
    return rs


def strip_id(fr):
    return {k: v for k, v in fr.items() if k != "id"}


def pick(side):
    reqs = load(side)
    parent = [b for f, b in reqs if b["kind"] == "parent"]
    child = [b for f, b in reqs if b["kind"] == "child"]
    last = parent[-1]["body"] if parent else {}
    ia = responses(last, "invoke_agent")
    r = {"kinds": [f.split("-", 1)[1][:-5] for f, _ in reqs]}
    r["ids"] = [fr.get("id") for fr in ia]
    r["1 generalist functionResponse"] = strip_id(ia[0]) if len(ia) > 0 else None
    r["2 no_such_agent functionResponse"] = strip_id(ia[1]) if len(ia) > 1 else None
    c0 = next((b["body"] for b in child if b["round"] == 0), {})
    si = c0.get("systemInstruction") or c0.get("system_instruction") or {}
    si_text = "".join(p.get("text", "") for p in si.get("parts", [])) if isinstance(si, dict) else str(si)
    r["si_text"] = si_text
    users = [c for c in c0.get("contents", []) if c.get("role") == "user"]
    r["3b child first user message"] = [p for p in users[0]["parts"]] if users else None
    decls = [d for t in c0.get("tools", []) for d in t.get("functionDeclarations", [])]
    r["3c child tool names"] = [d["name"] for d in decls]
    r["3d complete_task declaration"] = next((d for d in decls if d["name"] == "complete_task"), None)
    r["decls"] = {d["name"]: d for d in decls}
    c1 = next((b["body"] for b in child if b["round"] == 1), {})
    rf = responses(c1, "read_file")
    r["4 child read_file functionResponse"] = strip_id(rf[0]) if rf else None
    r["3e child first request other keys"] = sorted(k for k in c0 if k not in ("contents",))
    r["3f child generationConfig"] = c0.get("generationConfig")
    r["response"] = json.load(open(os.path.join(out, side, "out.json"))).get("response") \
        if os.path.getsize(os.path.join(out, side, "out.json")) else None
    return {k: (norm(v, side) if k not in ("kinds", "ids") else v) for k, v in r.items()}


t, g = pick("troupe"), pick("gemini")
print(f"\nrequest sequence  troupe: {t['kinds']}\n                  gemini: {g['kinds']}")
print(f"invoke_agent functionResponse ids  troupe: {t['ids']}  gemini: {g['ids']}  (ignored)")
print(f"final response  troupe: {t['response']!r}  gemini: {g['response']!r}")
verdict = {}


def show(key):
    a, b = t[key], g[key]
    same = json.dumps(a, sort_keys=False, ensure_ascii=False) == json.dumps(b, sort_keys=False, ensure_ascii=False)
    same_unordered = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    verdict[key] = "identical" if same else ("differs (key order only)" if same_unordered else "differs")
    print(f"\n== ({key}): {verdict[key]}")
    if same:
        print("  both:  " + json.dumps(a, ensure_ascii=False))
    else:
        print("  troupe: " + json.dumps(a, ensure_ascii=False))
        print("  gemini: " + json.dumps(b, ensure_ascii=False))


show("1 generalist functionResponse")
show("2 no_such_agent functionResponse")
# (3a) system instruction: summary + line diff
ta, ga = t["si_text"], g["si_text"]
verdict["3a child system instruction"] = "identical" if ta == ga else "differs"
print(f"\n== (3a child system instruction): {verdict['3a child system instruction']}")
for side, s in (("troupe", ta), ("gemini", ga)):
    heads = [l for l in s.splitlines() if l.startswith("#")]
    print(f"  {side}: {len(s)} chars, {len(s.splitlines())} lines, headings {heads[:12]}{' ...' if len(heads) > 12 else ''}")
    print(f"          starts {s[:160]!r}")
if ta != ga:
    d = list(difflib.unified_diff(ga.splitlines(), ta.splitlines(), "gemini", "troupe", n=0, lineterm=""))
    print(f"  diff (gemini -> troupe), {len(d)} lines, first 40:")
    for l in d[:40]:
        print("    " + l[:200])
show("3b child first user message")
show("3c child tool names")
show("3d complete_task declaration")
for name in sorted(set(t["decls"]) & set(g["decls"])):
    if name != "complete_task" and t["decls"][name] != g["decls"][name]:
        print(f"  (note: declaration of {name} also differs)")
show("3e child first request other keys")
show("3f child generationConfig")
show("4 child read_file functionResponse")
print("\nverdict:")
for k, v in verdict.items():
    print(f"  {k}: {v}")
print("overall: " + ("identical" if all(v == "identical" for v in verdict.values()) else
                     "differs: " + ", ".join(k for k, v in verdict.items() if v != "identical")))
EOF

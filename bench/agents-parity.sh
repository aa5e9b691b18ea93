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
# plus, for context, (5) the child's and (6) the parent's whole last history, and prints the
# wire text of each (compact JSON, key order kept; ids shown as <ID>, scratch paths as
# <HOME>/<WS>) and a verdict per item: identical / differs (key order only) / differs.
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
  echo "$side: exit $(cat "$OUT/$side/rc"), $(ls "$OUT/$side/reqs" | grep -c '\.json$') requests logged in $OUT/$side/reqs"
  [ "$(cat "$OUT/$side/rc")" = 0 ] || { echo "  $side failed; stderr tail:" >&2; tail -5 "$OUT/$side/stderr.log" >&2; }
done

python3 - "$OUT" <<'EOF'
import json, os, re, sys, difflib
out = sys.argv[1]
ws = os.path.join(out, "ws")


def wire(v):
    """The compact form both clients put on the wire (checked below against the raw bodies)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def load(side):
    d = os.path.join(out, side, "reqs")
    reqs, roundtrip = [], True
    for f in sorted(x for x in os.listdir(d) if x.endswith(".json")):
        meta = json.load(open(os.path.join(d, f)))
        raw = open(os.path.join(d, f[:-5] + ".raw"), "rb").read().decode("utf-8")
        roundtrip &= (raw == wire(json.loads(raw))) if raw else True
        reqs.append((f[4:-5], meta))
    return reqs, roundtrip


def norm(s, side):
    """Replaces what necessarily differs (scratch HOME, dates) by placeholders, in wire text."""
    s = s.replace(os.path.join(out, side, "home"), "<HOME>").replace(ws, "<WS>")
    return re.sub(r"\b20\d\d-\d\d-\d\d\b", "<DATE>", s)


def function_parts(body, key, name):
    return [p[key] for c in body.get("contents", []) for p in c.get("parts", [])
            if key in p and p[key].get("name") == name]


def id_blind(fr):
    """Same object, same key order, with the id value (if any) replaced by "<ID>"."""
    return {k: ("<ID>" if k == "id" else v) for k, v in fr.items()}


def id_blind_contents(contents):
    """contents with every functionCall/functionResponse id value replaced by "<ID>"."""
    return [{k: ([{pk: (id_blind(pv) if pk in ("functionCall", "functionResponse") else pv)
                   for pk, pv in p.items()} for p in v] if k == "parts" else v)
             for k, v in c.items()} for c in contents]


def pick(side):
    reqs, roundtrip = load(side)
    parent = [m for _, m in reqs if m["kind"] == "parent"]
    child = [m for _, m in reqs if m["kind"] == "child"]
    last = parent[-1]["body"] if parent else {}
    ia = function_parts(last, "functionResponse", "invoke_agent")
    c0 = next((m["body"] for m in child if m["round"] == 0), {})
    c1 = next((m["body"] for m in child if m["round"] == 1), {})
    p0 = parent[0]["body"] if parent else {}
    rf = function_parts(c1, "functionResponse", "read_file")
    rc = function_parts(c1, "functionCall", "read_file")
    text = lambda si: "".join(p.get("text", "") for p in (si or {}).get("parts", []))
    decls = [d for t in c0.get("tools", []) for d in t.get("functionDeclarations", [])]
    users = [c for c in c0.get("contents", []) if c.get("role") == "user"]
    r = {
        "kinds": [k for k, _ in reqs], "roundtrip": roundtrip,
        "ids": {"invoke_agent functionResponse": [fr.get("id") for fr in ia],
                "child read_file functionCall": [fc.get("id") for fc in rc],
                "child read_file functionResponse": [fr.get("id") for fr in rf]},
        "1 generalist functionResponse": id_blind(ia[0]) if len(ia) > 0 else None,
        "2 no_such_agent functionResponse": id_blind(ia[1]) if len(ia) > 1 else None,
        "si": text(c0.get("systemInstruction")), "parent_si": text(p0.get("systemInstruction")),
        "3b child first user message": users[0] if users else None,
        "3c child tool names": [d["name"] for d in decls],
        "3d complete_task declaration": next((d for d in decls if d["name"] == "complete_task"), None),
        "decls": {d["name"]: d for d in decls},
        "3e child request top-level keys": list(c0),
        "3f child generationConfig": c0.get("generationConfig"),
        "4 child read_file functionResponse": id_blind(rf[0]) if rf else None,
        "5 child round-1 contents": id_blind_contents(c1.get("contents", [])),
        "6 parent round-2 contents": id_blind_contents(last.get("contents", [])),
    }
    o = os.path.join(out, side, "out.json")
    r["response"] = json.load(open(o)).get("response") if os.path.getsize(o) else None
    for k in list(r):
        if k[0].isdigit():
            r[k] = norm(wire(r[k]), side)
    r["si"], r["parent_si"] = norm(r["si"], side), norm(r["parent_si"], side)
    return r


t, g = pick("troupe"), pick("gemini")
print(f"\nrequest sequence  troupe: {t['kinds']}\n                  gemini: {g['kinds']}")
print(f"raw bodies are compact JSON that re-serializes byte-identically: troupe {t['roundtrip']}, "
      f"gemini {g['roundtrip']} (if both True, the wire text below is the exact bytes sent)")
print(f"final response    troupe: {t['response']!r}  gemini: {g['response']!r}")
print("ids (shown as <ID> in the comparison; key position kept):")
for k in t["ids"]:
    print(f"  {k}:  troupe {t['ids'][k]}  gemini {g['ids'][k]}")
verdict = {}


def show(key):
    a, b = t[key], g[key]
    if a == b:
        verdict[key] = "identical"
    elif json.dumps(json.loads(a), sort_keys=True) == json.dumps(json.loads(b), sort_keys=True):
        verdict[key] = "differs (key order only)"
    else:
        verdict[key] = "differs"
    print(f"\n== ({key}): {verdict[key]}")
    if a == b:
        print("  both:   " + a)
    else:
        print("  troupe: " + a)
        print("  gemini: " + b)


show("1 generalist functionResponse")
show("2 no_such_agent functionResponse")
# (3a) system instruction: summary, and what the child gets beyond the parent's prompt
k = "3a child system instruction"
verdict[k] = "identical" if t["si"] == g["si"] else "differs"
print(f"\n== ({k}): {verdict[k]}")
for side, r in (("troupe", t), ("gemini", g)):
    s, ps = r["si"], r["parent_si"]
    heads = [l for l in s.splitlines() if l.startswith("# ")]
    print(f"  {side}: {len(s)} chars, {len(s.splitlines())} lines; first line {s.splitlines()[0][:90]!r}...")
    print(f"          '# ' headings: {heads}")
    print(f"          same as the parent's: {s == ps}; mentions complete_task: {'complete_task' in s}; "
          f"mentions invoke_agent: {'invoke_agent' in s}")
    if s != ps:
        d = [l for l in list(difflib.unified_diff(ps.splitlines(), s.splitlines(), n=0, lineterm=""))[2:]
             if l[:1] in "+-"]
        print(f"          child vs parent: {sum(l[0] == '-' for l in d)} lines only in the parent's, "
              f"{sum(l[0] == '+' for l in d)} only in the child's; child's last 8 lines:")
        for l in s.splitlines()[-8:]:
            print("            | " + l[:160])
show("3b child first user message")
show("3c child tool names")
a, b = json.loads(t["3c child tool names"]), json.loads(g["3c child tool names"])
print(f"  only troupe: {[n for n in a if n not in b]}  only gemini: {[n for n in b if n not in a]}")
show("3d complete_task declaration")
same = [n for n in a if n in b and t["decls"][n] == g["decls"][n]]
print(f"  (other shared declarations byte-identical: {same or 'none'})")
show("3e child request top-level keys")
show("3f child generationConfig")
show("4 child read_file functionResponse")
print("\n-- beyond the four items: the whole history the child and the parent send last --")
show("5 child round-1 contents")
show("6 parent round-2 contents")
print("\nverdict:")
for k, v in verdict.items():
    print(f"  {k}: {v}")
print("overall: " + ("identical" if all(v == "identical" for v in verdict.values()) else
                     "differs: " + ", ".join(k.split(" ", 1)[0] for k, v in verdict.items() if v != "identical")))
EOF

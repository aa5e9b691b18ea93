#!/usr/bin/env python3
"""Wire differential: the functionResponses Troupe and the real gemini-cli 0.61 send back
to the model, on the same scripted conversations, through a loopback Gemini API.

For each scenario both clients run `-p` in the same workspace path (recreated before each
run) against a stdlib HTTP server on 127.0.0.1 that answers the scenario's scripted model
turns in order (the turn is the number of model-role entries in `contents`) and logs every
request body. The last main request of each side holds every functionResponse of the
conversation; they are compared in order, id-blind, with the scratch paths replaced by
<WS> and <HOME>.

    bench/wire-parity.sh [SCENARIO ...]     # runs inside `unshare -n` when permitted
    python3 bench/wire_parity.py --list

env: TROUPE=path (default target/release/troupe, else target/debug/troupe; never builds)
     PEER_DIR=/tmp/peer (gemini-cli 0.61 npm install, ../shared/peers/gemini-cli/README.md)
     KEEP=1 keep the scratch dir; TIMEOUT=240 seconds per run
     --record DIR: write gemini-cli's answers per scenario to DIR/<scenario>.json (the
       fixtures of tests/suite/wire_parity.rs: tests/fixtures/gemini/wire-parity/)
Exit status: 0 when every compared functionResponse is identical or listed in KNOWN
(a difference recorded in docs/differences-from-gemini-cli.md), 1 otherwise.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER_DIR = os.environ.get("PEER_DIR", "/tmp/peer")
GEMINI_JS = os.path.join(PEER_DIR, "node_modules/@google/gemini-cli/bundle/gemini.js")
TIMEOUT = int(os.environ.get("TIMEOUT", "240"))


def call(name, args):
    return {"functionCall": {"name": name, "args": args}}


SKILL = """---
name: demo-skill
description: Explains the demo project. Use when asked about the demo.
---

# Demo

Read `notes/ref.md` first.
"""

# name -> workspace files, home files, scripted model turns (lists of parts), approval mode
SCENARIOS = {
    "skills": {
        "ws": {".gemini/skills/demo-skill/SKILL.md": SKILL,
               ".gemini/skills/demo-skill/notes/ref.md": "reference\n"},
        "turns": [[call("activate_skill", {"name": "demo-skill"})],
                  [call("activate_skill", {"name": "no-such-skill"})]],
    },
    "topic": {
        "ws": {"a.txt": "alpha\n"},
        "turns": [[call("update_topic", {"title": "Reading", "summary": "Reading a.txt to learn what it holds.",
                                         "strategic_intent": "Read the file"})],
                  [call("update_topic", {"title": "Answering", "strategic_intent": "Answer"})]],
    },
    "wait": {
        "ws": {"a.txt": "alpha\n", "b.txt": "beta\n"},
        "turns": [[call("read_file", {"file_path": "a.txt"}),
                   call("read_file", {"file_path": "b.txt", "wait_for_previous": True})],
                  [call("read_file", {"file_path": "a.txt", "wait_for_previous": False})]],
    },
    "plan": {
        "ws": {"a.txt": "alpha\n"},
        "approval": "default",
        "turns": [[call("enter_plan_mode", {"reason": "Design the change first"})],
                  [call("write_file", {"file_path": "b.txt", "content": "beta\n"})],
                  [call("read_file", {"file_path": "a.txt"})],
                  [call("enter_plan_mode", {"reason": "Again"})]],
    },
}

# (scenario, index of the functionResponse) -> the row of docs/differences-from-gemini-cli.md
KNOWN = {("plan", 3): "plan mode: `enter_plan_mode` while in plan mode"}

# Troupe writes every functionResponse {"id", "name", "response"}; gemini-cli writes the main
# session's {"name", "response", "id"}. A row of docs/differences-from-gemini-cli.md.
KEY_ORDER = "functionResponse key order, a known row"

USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


def chunk(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash"}


class Server:
    """Serves one scenario's turns; logs every request body in arrival order."""

    def __init__(self, marker, turns):
        self.marker, self.turns, self.log, self.lock = marker, turns, [], threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                method = self.path.split("?")[0].rsplit(":", 1)[-1]
                data, ctype = outer.answer(method, raw)
                data = data.encode()
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, method, raw):
        body = json.loads(raw or b"{}")
        main = method == "streamGenerateContent" and self.marker in raw.decode("utf-8", "replace")
        with self.lock:
            self.log.append({"method": method, "main": main, "body": body})
        if method == "countTokens":
            return json.dumps({"totalTokens": 1}), "application/json"
        if not main:  # utility calls (next speaker, loop check, routing): a JSON text that lets it go on
            reply = json.dumps({"next_speaker": "user", "reasoning": "parity", "model_choice": "flash",
                                "unproductive_state_confidence": 0.0,
                                "unproductive_state_analysis": "parity"})
            c = chunk([{"text": reply}])
        else:
            rnd = sum(1 for c in body.get("contents", []) if c.get("role") == "model")
            parts = self.turns[rnd] if rnd < len(self.turns) else [{"text": "done"}]
            c = chunk(parts)
        if method == "streamGenerateContent":
            return f"data: {json.dumps(c)}\r\n\r\n", "text/event-stream"
        return json.dumps(c), "application/json"

    def close(self):
        self.httpd.shutdown()


GEMINI_SETTINGS = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "tools": {"disableLLMCorrection": True},
    "ide": {"enabled": False},
}


def write_tree(root, files):
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


def run_side(side, name, sc, out, troupe):
    ws, home = os.path.join(out, "ws"), os.path.join(out, side, "home")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(home, ".gemini"), exist_ok=True)
    write_tree(ws, sc.get("ws", {}))
    write_tree(home, sc.get("home", {}))
    marker = f"wire-parity {name}: follow the script"
    srv = Server(marker, sc["turns"])
    env = dict(os.environ, HOME=home, NO_COLOR="1", GOOGLE_GEMINI_BASE_URL=srv.url, GEMINI_API_KEY="dummy")
    approval = sc.get("approval", "yolo")
    if side == "troupe":
        env["TROUPE_HOME"] = os.path.join(home, ".troupe")
        cmd = [troupe, "-p", marker, "-o", "json", "--approval-mode", approval, "--skip-trust"]
    else:
        env.update(GEMINI_CLI_HOME=home, GEMINI_CLI_NO_RELAUNCH="true", GEMINI_TELEMETRY_ENABLED="false")
        with open(os.path.join(home, ".gemini/settings.json"), "w") as f:
            json.dump(GEMINI_SETTINGS, f)
        cmd = ["node", GEMINI_JS, "-m", "gemini-2.5-flash", "-p", marker, "-o", "json",
               "--approval-mode", approval, "--skip-trust"]
    try:
        p = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, err = "timeout", ""
    srv.close()
    with open(os.path.join(out, side, f"{name}.requests.json"), "w") as f:
        json.dump(srv.log, f, indent=1)
    mains = [r["body"] for r in srv.log if r["main"]]
    last = mains[-1] if mains else {}
    responses = [p["functionResponse"] for c in last.get("contents", []) for p in c.get("parts", [])
                 if "functionResponse" in p]
    text = json.dumps([{k: ("<ID>" if k == "id" else v) for k, v in fr.items()} for fr in responses],
                      separators=(",", ":"), ensure_ascii=False)
    text = text.replace(home, "<HOME>").replace(os.path.realpath(ws), "<WS>").replace(ws, "<WS>")
    text = re.sub(r"\b[0-9a-f]{64}\b", "<HASH>", text)
    return rc, err, json.loads(text)


def main(argv):
    if "--list" in argv:
        print("\n".join(SCENARIOS))
        return 0
    record = argv[argv.index("--record") + 1] if "--record" in argv else None
    argv = [a for a in argv if a not in ("--record", record)]
    names = [a for a in argv if not a.startswith("-")] or list(SCENARIOS)
    troupe = os.environ.get("TROUPE") or next(
        (p for p in (os.path.join(HERE, "target", k, "troupe") for k in ("release", "debug")) if os.access(p, os.X_OK)),
        None)
    troupe = troupe and os.path.abspath(troupe)
    if not troupe or not os.path.isfile(GEMINI_JS):
        print(f"need a troupe binary (TROUPE=) and gemini-cli 0.61 at {GEMINI_JS}", file=sys.stderr)
        return 2
    out = tempfile.mkdtemp(prefix="troupe-wire-parity.")
    ok = True
    for name in names:
        sc = SCENARIOS[name]
        res = {side: run_side(side, name, sc, out, troupe) for side in ("troupe", "gemini")}
        (trc, terr, tfr), (grc, gerr, gfr) = res["troupe"], res["gemini"]
        print(f"\n### {name}: troupe exit {trc}, gemini exit {grc}; "
              f"{len(tfr)} / {len(gfr)} functionResponses")
        if record and grc == 0:  # gemini-cli's answers, the oracle of tests/suite/wire_parity.rs
            os.makedirs(record, exist_ok=True)
            with open(os.path.join(record, f"{name}.json"), "w") as f:
                json.dump({"scenario": name, "approval": sc.get("approval", "yolo"), "ws": sc.get("ws", {}),
                           "turns": sc["turns"], "gemini_function_responses": gfr},
                          f, indent=1, ensure_ascii=False)
                f.write("\n")
        for side, rc, err in (("troupe", trc, terr), ("gemini", grc, gerr)):
            if rc != 0:
                print(f"  {side} stderr tail: {err.strip().splitlines()[-3:]}")
        for i in range(max(len(tfr), len(gfr))):
            a = tfr[i] if i < len(tfr) else None
            b = gfr[i] if i < len(gfr) else None
            exact = json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)
            same = a == b  # equal but for the order of keys
            known = KNOWN.get((name, i))
            if exact:
                verdict = "identical"
            elif same:
                verdict = f"identical but for key order ({KEY_ORDER})"
            else:
                verdict = f"differs (known: {known})" if known else "DIFFERS"
            ok &= same or bool(known)
            print(f"  [{i}] {(a or b or {}).get('name')}: {verdict}")
            if not same:
                print("     troupe: " + json.dumps(a, ensure_ascii=False)[:1500])
                print("     gemini: " + json.dumps(b, ensure_ascii=False)[:1500])
    if os.environ.get("KEEP") == "1":
        print(f"\nkept {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)
    print("\noverall: " + ("identical or known" if ok else "differs"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Loopback fake Gemini API for the subagents benchmark (bench/agents-vs-gemini.sh), stdlib only.

Unlike ../shared/peers/gemini-cli/fake_gemini_server.py, which serves a JSONL script in
strict order, this server answers each request by what its body holds, so N subagents can
send in any order:

  parent (body holds "bench-parent", the -p prompt):
    no model-role turn in `contents` yet -> N functionCall parts
        invoke_agent {"agent_name": "generalist", "prompt": "bench-child-<i>"}
    later                                -> text "bench-done: <k> invoke_agent responses,
                                            <m> distinct child results"
  child i (body holds "bench-child-<i>" and not "bench-parent"):
    no model-role turn yet               -> functionCall read_file {"file_path": "f<i%64 as %03d>.txt"}
    later                                -> functionCall complete_task {"result": {"response": "done-<i>"}}
  anything else (utility calls: next-speaker check, generateContent, loop detection, ...)
    -> a JSON text answer that lets the client go on; counted and logged.

  POST /v1beta/models/M:streamGenerateContent?alt=sse -> "data: <chunk>\\r\\n\\r\\n"
  POST /v1beta/models/M:generateContent               -> one GenerateContentResponse
  POST /v1beta/models/M:countTokens                   -> {"totalTokens": 1}
Every chunk carries usageMetadata (promptTokenCount 100, candidatesTokenCount 10).

The counts by kind and the checks (complete_task answers given, functionResponses of
invoke_agent in the parent's last request, files whose contents reached the children) are
written as JSON to --stats on exit (SIGTERM/SIGINT, or --max-seconds) and, at most every
0.2 s, while it runs. --log-dir keeps sample request bodies: every parent request, the
first --log-children children's requests and every request of another kind.

Usage: agents_server.py --agents N [--port 0] [--port-file F] [--stats F] [--log-dir D]
                        [--log-children 3] [--max-seconds 900]
Binds 127.0.0.1 only. Exits by itself after --max-seconds.
"""
import argparse
import json
import os
import re
import signal
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--agents", type=int, required=True)
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--port-file")
ap.add_argument("--stats")
ap.add_argument("--log-dir")
ap.add_argument("--log-children", type=int, default=3)
ap.add_argument("--max-seconds", type=float, default=900)
args = ap.parse_args()
if args.log_dir:
    os.makedirs(args.log_dir, exist_ok=True)

N = args.agents
FILES = 64
PARENT = "bench-parent"
CHILD_RE = re.compile(r"bench-child-(\d+)")
RESULT_RE = re.compile(r"done-(\d+)")
FILE_RE = re.compile(r"bench-file-(\d+)")
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}

lock = threading.Lock()
kinds = Counter()  # request kind -> count
per_child = Counter()  # child index -> model requests
completed = set()  # children given complete_task
files_seen = set()  # children whose second request held their file's contents
state = {"req": 0, "connections": 0, "inflight": 0, "peak_inflight": 0, "t0": None, "t_last": None,
         "parent_last": None, "dirty": False}


def file_name(i):
    return f"f{i % FILES:03d}.txt"


def chunk(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash"}


def call(name, fargs):
    return {"functionCall": {"name": name, "args": fargs}}


def model_turns(body):
    return sum(1 for c in body.get("contents", []) if c.get("role") == "model")


def function_responses(body, name):
    """functionResponse parts named `name` in the last user turn."""
    contents = body.get("contents", [])
    for c in reversed(contents):
        if c.get("role") == "user":
            return [p["functionResponse"] for p in c.get("parts", [])
                    if "functionResponse" in p and p["functionResponse"].get("name") == name]
    return []


def snapshot():
    return {
        "agents": N,
        "requests": state["req"],
        "connections": state["connections"],
        "kinds": dict(sorted(kinds.items())),
        "children_seen": len(per_child),
        "children_completed": len(completed),
        "children_got_file": len(files_seen),
        "requests_per_child": dict(sorted(Counter(per_child.values()).items())),
        "parent_last_request": state["parent_last"],
        "peak_inflight": state["peak_inflight"],
        "span_seconds": round((state["t_last"] or 0) - (state["t0"] or 0), 3),
    }


def write_stats():
    if not args.stats:
        return
    with lock:
        data = json.dumps(snapshot(), indent=1)
        state["dirty"] = False
    tmp = args.stats + ".tmp"
    with open(tmp, "w") as f:
        f.write(data + "\n")
    os.replace(tmp, args.stats)


def log_body(name, path, body):
    if args.log_dir:
        with open(os.path.join(args.log_dir, name + ".json"), "w") as f:
            json.dump({"path": path, "body": body}, f, indent=1)


def answer(method, path, raw):
    """Returns (kind, list of chunks)."""
    text = raw.decode("utf-8", "replace")
    body = json.loads(raw or b"{}")
    if method != "streamGenerateContent":
        # Non-stream calls are utility calls (next-speaker check, loop detection,
        # routing classifier, ...): answer JSON that says "go on / the user speaks".
        reply = json.dumps({"next_speaker": "user", "reasoning": "bench",
                            "unproductive_state_confidence": 0.0,
                            "unproductive_state_analysis": "bench", "model_choice": "flash"})
        return "other:" + method, [chunk([{"text": reply}])]
    turns = model_turns(body)
    if PARENT in text:
        if turns == 0:
            parts = [call("invoke_agent", {"agent_name": "generalist", "prompt": f"bench-child-{i}"})
                     for i in range(N)]
            return "parent-start", [chunk(parts)]
        resp = function_responses(body, "invoke_agent")
        results = set()
        for r in resp:
            results.update(int(m) for m in RESULT_RE.findall(json.dumps(r)))
        with lock:
            state["parent_last"] = {"model_turns": turns, "invoke_agent_responses": len(resp),
                                    "distinct_child_results": len(results)}
        return "parent-final", [chunk([{"text": f"bench-done: {len(resp)} invoke_agent responses, "
                                                f"{len(results)} distinct child results"}])]
    m = CHILD_RE.search(text)
    if m:
        i = int(m.group(1))
        with lock:
            per_child[i] += 1
        if turns == 0:
            return "child-read", [chunk([call("read_file", {"file_path": file_name(i)})])]
        got = [int(x) for x in FILE_RE.findall(json.dumps(function_responses(body, "read_file")))]
        with lock:
            if i % FILES in got:
                files_seen.add(i)
            first = i not in completed
            completed.add(i)
        kind = "child-complete" if first else "child-complete-again"
        return kind, [chunk([call("complete_task", {"result": {"response": f"done-{i}"}})])]
    return "other:stream", [chunk([{"text": "bench: nothing to do."}])]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # keep stderr quiet
        pass

    def setup(self):  # one handler per TCP connection
        super().setup()
        with lock:
            state["connections"] += 1

    def send(self, code, data, ctype="application/json"):
        data = data.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send(404, json.dumps({"error": {"code": 404, "message": "fake server: POST only"}}))

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        method = path.rsplit(":", 1)[-1]  # streamGenerateContent | generateContent | countTokens
        now = time.monotonic()
        with lock:
            state["req"] += 1
            n = state["req"]
            state["t0"] = state["t0"] or now
            state["inflight"] += 1
            state["peak_inflight"] = max(state["peak_inflight"], state["inflight"])
        try:
            if method == "countTokens":
                with lock:
                    kinds["countTokens"] += 1
                return self.send(200, json.dumps({"totalTokens": 1}))
            try:
                kind, chunks = answer(method, self.path, raw)
            except Exception as e:  # a body we cannot read: say so, count it
                with lock:
                    kinds["bad-request"] += 1
                return self.send(400, json.dumps({"error": {"code": 400, "message": f"fake server: {e}"}}))
            with lock:
                kinds[kind] += 1
                seq = kinds[kind]
            if args.log_dir:
                body = json.loads(raw or b"{}")
                if kind.startswith("parent") or kind.startswith("other"):
                    log_body(f"{kind.replace(':', '-')}-{seq:03d}", self.path, body)
                else:
                    i = int(CHILD_RE.search(raw.decode("utf-8", "replace")).group(1))
                    if i < args.log_children:
                        log_body(f"child-{i:04d}-{kind}-{seq:04d}", self.path, body)
            if method == "streamGenerateContent":
                return self.send(200, "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks),
                                 "text/event-stream")
            return self.send(200, json.dumps(chunks[0]))
        finally:
            with lock:
                state["inflight"] -= 1
                state["t_last"] = time.monotonic()
                state["dirty"] = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4096  # N clients may connect at once


srv = Server(("127.0.0.1", args.port), Handler)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
threading.Thread(target=srv.serve_forever, daemon=True).start()
if args.port_file:
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
deadline = time.monotonic() + args.max_seconds  # bounded lifetime
while not stop.is_set() and time.monotonic() < deadline:
    stop.wait(0.2)
    if state["dirty"]:
        write_stats()
srv.shutdown()
write_stats()

#!/usr/bin/env python3
"""Loopback fake Gemini API for bench/agents-parity.sh, stdlib only.

Answers each request by what its body holds (a sequential invoke_agent conversation), and
logs EVERY request body, so the functionResponse parts two clients send can be compared:

  parent (body holds "parity-parent"), round = number of model-role turns in `contents`:
    0  -> functionCall invoke_agent {"agent_name": "generalist",
                                     "prompt": "parity-child: read notes.txt and report"}
    1  -> functionCall invoke_agent {"agent_name": "no_such_agent", "prompt": "x"}
    2+ -> text "done"
  child (body holds "parity-child" and not "parity-parent"):
    0  -> functionCall read_file {"file_path": <--read-path, default "notes.txt">}
    1+ -> functionCall complete_task {"result": {"response": "notes.txt says hello"}}
  anything else (utility calls: next-speaker check, routing, loop detection, ...)
    -> a JSON text answer that lets the client go on.

  POST /v1beta/models/M:streamGenerateContent?alt=sse -> "data: <chunk>\\r\\n\\r\\n"
  POST /v1beta/models/M:generateContent               -> one GenerateContentResponse
  POST /v1beta/models/M:countTokens                   -> {"totalTokens": 1}

Every request is saved as LOGDIR/NNN-<kind>.json = {"path", "kind", "round", "body"}
and, byte for byte as received, as LOGDIR/NNN-<kind>.raw
(NNN = arrival order; kind = parent-r<k> | child-r<k> | other-<method>).

Usage: agents_parity_server.py --log-dir D [--port 0] [--port-file F] [--read-path P]
                               [--max-seconds 600]
Binds 127.0.0.1 only. Exits by itself after --max-seconds, or on SIGTERM/SIGINT.
"""
import argparse
import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--log-dir", required=True)
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--port-file")
ap.add_argument("--read-path", default="notes.txt")
ap.add_argument("--max-seconds", type=float, default=600)
args = ap.parse_args()
os.makedirs(args.log_dir, exist_ok=True)

PARENT = "parity-parent"
CHILD = "parity-child"
CHILD_PROMPT = "parity-child: read notes.txt and report"
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
lock = threading.Lock()
state = {"req": 0}


def chunk(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash"}


def call(name, fargs):
    return {"functionCall": {"name": name, "args": fargs}}


def answer(method, raw):
    """Returns (kind, round, list of chunks)."""
    text = raw.decode("utf-8", "replace")
    body = json.loads(raw or b"{}")
    if method != "streamGenerateContent":
        reply = json.dumps({"next_speaker": "user", "reasoning": "parity",
                            "unproductive_state_confidence": 0.0,
                            "unproductive_state_analysis": "parity", "model_choice": "flash"})
        return "other-" + method, None, [chunk([{"text": reply}])]
    rnd = sum(1 for c in body.get("contents", []) if c.get("role") == "model")
    if PARENT in text:
        if rnd == 0:
            parts = [call("invoke_agent", {"agent_name": "generalist", "prompt": CHILD_PROMPT})]
        elif rnd == 1:
            parts = [call("invoke_agent", {"agent_name": "no_such_agent", "prompt": "x"})]
        else:
            parts = [{"text": "done"}]
        return "parent", rnd, [chunk(parts)]
    if CHILD in text:
        if rnd == 0:
            parts = [call("read_file", {"file_path": args.read_path})]
        else:
            parts = [call("complete_task", {"result": {"response": "notes.txt says hello"}})]
        return "child", rnd, [chunk(parts)]
    return "other-stream", None, [chunk([{"text": "parity: nothing to do."}])]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):  # keep stderr quiet
        pass

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
        with lock:
            state["req"] += 1
            n = state["req"]
        if method == "countTokens":
            kind, rnd, chunks = "countTokens", None, None
        else:
            try:
                kind, rnd, chunks = answer(method, raw)
            except Exception as e:  # a body we cannot read: say so
                kind, rnd, chunks = "bad-request", None, None
                err = str(e)
        try:
            body = json.loads(raw or b"{}")
        except Exception:
            body = raw.decode("utf-8", "replace")
        label = kind if rnd is None else f"{kind}-r{rnd}"
        with open(os.path.join(args.log_dir, f"{n:03d}-{label}.json"), "w") as f:
            json.dump({"path": self.path, "kind": kind, "round": rnd, "body": body}, f, indent=1)
        with open(os.path.join(args.log_dir, f"{n:03d}-{label}.raw"), "wb") as f:
            f.write(raw)  # the body exactly as sent, for byte-level comparison
        if kind == "countTokens":
            return self.send(200, json.dumps({"totalTokens": 1}))
        if kind == "bad-request":
            return self.send(400, json.dumps({"error": {"code": 400, "message": f"fake server: {err}"}}))
        if method == "streamGenerateContent":
            return self.send(200, "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks),
                             "text/event-stream")
        return self.send(200, json.dumps(chunks[0]))


srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
srv.daemon_threads = True
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
threading.Thread(target=srv.serve_forever, daemon=True).start()
if args.port_file:
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
stop.wait(args.max_seconds)  # bounded lifetime
srv.shutdown()

"""Writes <out>/ws (a git repo with text, CRLF, long-line, binary, image and ignored
files) and <out>/responses.jsonl (one turn of parallel read/search calls, then text)."""
import json, os, sys, subprocess
out = sys.argv[1]
ws = os.path.join(out, "ws")
def write(rel, data):
    p = os.path.join(ws, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
os.makedirs(ws, exist_ok=True)
subprocess.run(["git", "init", "-q", ws], check=True)
write(".gitignore", "secret.txt\n*.log\n")
write("secret.txt", "s\n")
write("a.log", "needle in log\n")
write("README.md", "# readme\n")
write("big.txt", "".join(f"line {i}\n" for i in range(1, 2501)))
write("crlf.txt", "one\r\ntwo\r\n")
write("long.txt", "short\n" + "x" * 2100 + "\nend")
write("blob.dat", bytes([1, 2, 0, 3]))
write("pic.png", bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0]))
write("src/app.py", "".join("def needle():\n" if i == 20 else f"x{i} = {i}\n" for i in range(1, 40)))
write("src/util.py", "needle = 1\nneedle = 2\n")
write("src/Zeta.py", "z\n")
write("src/alpha.py", "a\n")
def call(name, **args):
    return {"functionCall": {"name": name, "args": args}}
calls = [
    call("list_directory", dir_path="."),
    call("list_directory", dir_path=".", ignore=["*.md"], file_filtering_options={"respect_git_ignore": False}),
    call("list_directory", dir_path="nowhere"),
    call("read_file", file_path="big.txt"),
    call("read_file", file_path="big.txt", start_line=10, end_line=12),
    call("read_file", file_path="crlf.txt"),
    call("read_file", file_path="long.txt"),
    call("read_file", file_path="blob.dat"),
    call("read_file", file_path="secret.txt"),
    call("read_file", file_path="missing.txt"),
    call("glob", pattern="src/*.py"),
    call("glob", pattern="*.zzz"),
    call("grep_search", pattern="needle"),
    call("grep_search", pattern="needle", names_only=True),
    call("grep_search", pattern="nothing_here", include_pattern="*.py"),
    call("grep_search", pattern="needle", dir_path="src", context=1),
    call("read_file", file_path="pic.png"),
    call("list_directory", dir_path="src"),
    call("read_file", file_path="src"),
]
def chunk(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}}
with open(os.path.join(out, "responses.jsonl"), "w") as f:
    f.write(json.dumps({"method": "generateContentStream", "response": [chunk(calls)]}) + "\n")
    f.write(json.dumps({"method": "generateContentStream", "response": [chunk([{"text": "done"}])]}) + "\n")

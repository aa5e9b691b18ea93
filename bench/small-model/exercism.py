#!/usr/bin/env python3
"""Exercism Python exercises on a local model: Troupe beside Aider, same model, same budget.

Each exercise is copied into a fresh folder per agent: the stub (`<name>.py`), its unit
tests (`<name>_test.py`) and the instructions. Both agents get the same request (the
instructions, then which file to change). The tests run with `python3 -m unittest`;
when they fail, the agent gets a second attempt with the last lines of the test output
(pass@2, as Aider's benchmark does), in the same conversation (`--resume latest` /
`--restore-chat-history`). A run whose test file changed counts as failed and harmful.

    python3 bench/small-model/exercism.py --exercism DIR --url http://127.0.0.1:8080 \\
        --exercises bob,book-store,... [--agents troupe,aider] [--budget 600] [--out FILE]

DIR is a checkout of github.com/exercism/python (its `exercises/practice/`); `--exercises
tune12` and `--exercises heldout` name the lists below (tune on names that do not start
with `a`; the `a…` ones are kept for an independent check). One JSON line per
(agent, exercise) goes to --out, and a summary table to stdout.

env: TROUPE=path (default target/release/troupe), AIDER=path (default `aider` on PATH),
     MODEL=openai/qwen2.5-coder-1.5b-instruct (Aider's model name for the server)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# 12 to tune on (names not starting with "a"), small enough for a 1.5B model's window.
TUNE12 = ["bob", "collatz-conjecture", "darts", "difference-of-squares", "grains", "hamming",
          "isogram", "leap", "pangram", "raindrops", "reverse-string", "two-fer"]
# kept for an independent check
HELDOUT = ["acronym", "armstrong-numbers", "atbash-cipher", "all-your-base", "allergies", "anagram"]

TEST_TAIL_LINES = 40


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def exercise_files(exercism, name):
    """(stub file name, test file name, instructions text) of one practice exercise."""
    src = os.path.join(exercism, "exercises", "practice", name)
    meta = json.loads(read(os.path.join(src, ".meta", "config.json")))
    stub = meta["files"]["solution"][0]
    test = meta["files"]["test"][0]
    docs = [os.path.join(src, ".docs", n) for n in ("instructions.md", "instructions.append.md")]
    instructions = "\n\n".join(read(p).strip() for p in docs if os.path.exists(p))
    return src, stub, test, instructions


def request(instructions, stub, test):
    return (f"{instructions}\n\n####\n\nUse the instructions above to change {stub}. Keep the names "
            f"of its functions and classes: the unit tests in {test} use them. Use only the Python "
            f"standard library.")


def retry_request(test_output, stub):
    return (f"{test_output}\n####\n\nThe unit tests above failed. The tests are right; do not change "
            f"them. Fix the code in {stub} so that they pass.")


def run_tests(work, test):
    try:
        p = subprocess.run([sys.executable, "-m", "unittest", "-q", test[:-3]], cwd=work,
                           capture_output=True, text=True, timeout=120)
        out = (p.stdout + p.stderr).strip().splitlines()
        return p.returncode == 0, "\n".join(out[-TEST_TAIL_LINES:])
    except subprocess.TimeoutExpired:
        return False, "the tests did not finish in 120 s"


def troupe_attempt(work, prompt, url, seconds, first):
    binary = os.environ.get("TROUPE") or os.path.join(HERE, "target", "release", "troupe")
    cmd = [binary, "-p", prompt, "-o", "json", "--yolo"] + ([] if first else ["--resume", "latest"])
    env = dict(os.environ, OPENAI_BASE_URL=url.rstrip("/") + "/v1", NO_COLOR="1")
    started = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=seconds)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    spent = time.monotonic() - started
    tokens, status, response = None, None, None
    try:
        result = json.loads(out)
        status = (result.get("error") or {}).get("type", "success")
        response = (result.get("response") or "")[:300]
        models = result.get("stats", {}).get("models", {})
        tokens = sum(m.get("tokens", {}).get("prompt", 0) + m.get("tokens", {}).get("candidates", 0)
                     for m in models.values()) or None
    except (json.JSONDecodeError, AttributeError):
        pass
    return {"rc": rc, "status": status, "seconds": round(spent, 1), "tokens": tokens, "response": response}


def count(text):
    """Aider's token counts: `912`, `1,234` or `1.1k`."""
    text = text.replace(",", "")
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


def aider_attempt(work, prompt, url, seconds, first, stub, test):
    binary = os.environ.get("AIDER") or shutil.which("aider") or "aider"
    model = os.environ.get("MODEL", "openai/qwen2.5-coder-1.5b-instruct")
    cmd = [binary, "--model", model, "--openai-api-base", url.rstrip("/") + "/v1",
           "--openai-api-key", "none", "--edit-format", "whole", "--yes-always", "--no-git",
           "--no-show-model-warnings", "--no-check-update", "--no-analytics", "--no-pretty",
           "--no-stream", "--map-tokens", "0", "--chat-history-file", ".aider.chat.history.md",
           "--read", test, "--message", prompt, stub] + ([] if first else ["--restore-chat-history"])
    started = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=seconds,
                           stdin=subprocess.DEVNULL)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = "", "timeout"
    spent = time.monotonic() - started
    sent = sum(count(a) + count(b) for a, b in re.findall(r"Tokens: ([\d.,]+k?) sent, ([\d.,]+k?) received", out))
    return {"rc": rc, "status": None, "seconds": round(spent, 1), "tokens": sent or None}


def one(agent, name, args, root):
    src, stub, test, instructions = exercise_files(args.exercism, name)
    work = os.path.join(root, agent, name)
    os.makedirs(work)
    for f in (stub, test):
        shutil.copy(os.path.join(src, f), os.path.join(work, f))
    test_before = read(os.path.join(work, test))
    deadline = time.monotonic() + args.budget
    attempts, prompt, passed = [], request(instructions, stub, test), False
    for k in range(2):
        left = deadline - time.monotonic()
        if left < 5:
            break
        if agent == "troupe":
            a = troupe_attempt(work, prompt, args.url, left, k == 0)
        else:
            a = aider_attempt(work, prompt, args.url, left, k == 0, stub, test)
        passed, output = run_tests(work, test)
        a["passed"] = passed
        attempts.append(a)
        if passed:
            break
        prompt = retry_request(output, stub)
    harmed = read(os.path.join(work, test)) != test_before
    return {"agent": agent, "exercise": name, "passed": passed and not harmed,
            "pass_at_1": bool(attempts and attempts[0]["passed"]) and not harmed,
            "test_file_changed": harmed, "attempts": attempts,
            "seconds": round(sum(a["seconds"] for a in attempts), 1),
            "tokens": sum(a["tokens"] or 0 for a in attempts) or None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exercism", required=True)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--exercises", default="tune12")
    ap.add_argument("--agents", default="troupe,aider")
    ap.add_argument("--budget", type=float, default=600, help="seconds per exercise (both attempts)")
    ap.add_argument("--out", default="exercism-results.jsonl")
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    args = ap.parse_args()
    names = {"tune12": TUNE12, "heldout": HELDOUT}.get(args.exercises) or args.exercises.split(",")
    if any(n.startswith("a") for n in names) and args.exercises != "heldout":
        print("note: exercises starting with 'a' are the held-out check; tune on the others", file=sys.stderr)
    root = tempfile.mkdtemp(prefix="troupe-exercism.")
    rows = []
    with open(args.out, "a") as out:
        for name in names:  # one exercise at a time, agents in turn: the same machine load for both
            for agent in args.agents.split(","):
                row = one(agent, name, args, root)
                rows.append(row)
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"{agent:7} {name:24} {'PASS' if row['passed'] else 'fail':4} "
                      f"@1={'y' if row['pass_at_1'] else 'n'} {row['seconds']:7.1f}s tokens={row['tokens']}"
                      f"{'  TEST FILE CHANGED' if row['test_file_changed'] else ''}", flush=True)
    print("\nagent    passed  pass@1  test files changed  seconds")
    for agent in args.agents.split(","):
        mine = [r for r in rows if r["agent"] == agent]
        print(f"{agent:7} {sum(r['passed'] for r in mine):3}/{len(mine):<3} {sum(r['pass_at_1'] for r in mine):4}"
              f"   {sum(r['test_file_changed'] for r in mine):6}            {sum(r['seconds'] for r in mine):8.0f}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"kept {root}")


if __name__ == "__main__":
    main()

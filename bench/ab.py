#!/usr/bin/env python3
"""Two Troupe builds against each other, interleaved, on the two headline workloads.

    bench/ab.py OLD_TROUPE NEW_TROUPE [PAIRS] [N]     (defaults: 20 pairs, N=1000)

1. The whole `troupe -p` process of N parallel read_file calls on gemini-cli's
   fake-responses script (the Troupe side of bench/vs-gemini.sh), timed by
   bench/timed.py: wall time and peak RSS of each run.
2. `troupe bench --calls N --repeat 3` in process: `overhead_per_call_us` (the wall time
   per call over the bare loop) and `turn_cpu_ms`.

The two binaries take turns (old, new, old, new, ...; the order flips every pair), so a
slow phase of the machine falls on both. Each side has a HOME of its own, kept across its
runs as a user's is (a first, unmeasured run registers the project there, as
bench/vs-gemini.sh's first run does); the session files a run leaves are removed before
the next, so retention's listing does not grow. Prints the medians of each side and the
ratio new / old (below 1: the new build is faster).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.environ.get("PEER_SCRIPTS", os.path.join(HERE, "..", "..", "shared", "peers", "gemini-cli"))


def clear_sessions(home):
    for dirpath, _, files in os.walk(os.path.join(home, ".troupe")):
        if os.path.basename(dirpath) == "chats":
            for name in files:
                os.remove(os.path.join(dirpath, name))


def process_run(troupe, work, n, tag, home):
    clear_sessions(home)
    out = os.path.join(work, f"t-{tag}")
    stdout = os.path.join(work, f"o-{tag}.json")
    env = dict(os.environ, HOME=home)
    subprocess.run(
        [sys.executable, os.path.join(HERE, "timed.py"), out, "--cd", os.path.join(work, "ws"),
         "--stdout", stdout, "--", troupe, "-p", "Do the scripted task.",
         "--fake-responses", os.path.join(work, "responses.jsonl"), "-o", "json", "--yolo"],
        check=True, env=env)
    with open(stdout) as f:
        if f'"totalSuccess": {n}' not in f.read():
            raise SystemExit(f"{troupe}: the run did not succeed")
    wall, rss, _ = open(out).read().split()
    return float(wall) * 1e3, int(rss) / 1024


def bench_run(troupe, work, n, home):
    env = dict(os.environ, HOME=home)
    report = os.path.join(home, "bench.json")
    subprocess.run([troupe, "bench", "--calls", str(n), "--repeat", "3", "--json", report],
                   check=True, env=env, stdout=subprocess.DEVNULL, cwd=work)
    with open(report) as f:
        row = json.load(f)
    if "cells" in row:  # --repeat: the median of the repeats
        row = row["cells"][0]["median"]
    return float(row["overhead_per_call_us"]), float(row["turn_cpu_ms"])


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    work = tempfile.mkdtemp(prefix="troupe-ab-")
    subprocess.run([sys.executable, os.path.join(PEER, "make_script.py"), "parallel", work, str(n)],
                   check=True, stdout=subprocess.DEVNULL)
    for binary in (old, new):
        subprocess.run([sys.executable, os.path.join(HERE, "timed.py"), "--evict", binary], check=True)
    sides = {"old": old, "new": new}
    homes = {side: tempfile.mkdtemp(prefix=f"ab-home-{side}-", dir=work) for side in sides}
    for side, binary in sides.items():
        process_run(binary, work, n, f"warm-{side}", homes[side])
    results = {side: {"wall": [], "rss": [], "overhead": [], "cpu": []} for side in sides}
    for i in range(pairs):
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for side in order:
            binary = sides[side]
            wall, rss = process_run(binary, work, n, f"{i}-{side}", homes[side])
            overhead, cpu = bench_run(binary, work, n, homes[side])
            r = results[side]
            r["wall"].append(wall)
            r["rss"].append(rss)
            r["overhead"].append(overhead)
            r["cpu"].append(cpu)
    print(f"{pairs} interleaved pairs, N={n}")
    for key, label in (("wall", "-p process wall ms"), ("rss", "-p peak RSS MB"),
                       ("overhead", "bench overhead us/call"), ("cpu", "bench turn CPU ms")):
        o = statistics.median(results["old"][key])
        w = statistics.median(results["new"][key])
        print(f"{label:24} old {o:9.3f}  new {w:9.3f}  new/old {w / o:6.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs one command the way /usr/bin/time does, at microsecond resolution.

    bench/timed.py OUT_FILE [--cd DIR] [--stdout FILE] -- COMMAND ARGS...
    bench/timed.py --evict FILE


Writes "WALL_SECONDS PEAK_RSS_KB EXIT_CODE" to OUT_FILE. The clock starts just before
the child is spawned and stops when wait4 returns it, and the peak RSS is the child's
own (wait4's rusage), so the figure is the process's life as its parent sees it.

gemini-cli's side of bench/vs-gemini.sh is timed by /usr/bin/time inside the peer's
run.sh (fork, exec, wait). Troupe's side used to be timed around a bash subshell that
started /usr/bin/time, which added about 1.5 ms of shell and exec to Troupe's figure
only; /usr/bin/time's own clock has 10 ms steps, too coarse for a 20 ms process.

--evict drops FILE's pages from the page cache. A binary the linker has just written
sits whole in the cache, and the kernel maps cached pages around each page a process
touches, so a fresh build showed about 1.5 MB more peak RSS than the same bytes read
back from disk (19.1 against 20.6 MB at 1,000 reads). Evicted once before the runs,
the binary is loaded as an installed one is after a reboot.
"""
import os
import subprocess
import sys
import time


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main(argv):
    if len(argv) == 2 and argv[0] == "--evict":
        evict(argv[1])
        return 0
    if "--" not in argv:
        sys.exit("usage: timed.py OUT_FILE [--cd DIR] [--stdout FILE] -- COMMAND ARGS... | --evict FILE")
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    out_file, cwd, stdout_path = opts[0], None, None
    rest = opts[1:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--cd":
            cwd = value
        elif flag == "--stdout":
            stdout_path = value
        else:
            sys.exit(f"timed.py: unknown option {flag}")
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=stdout, stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    with open(out_file, "w") as f:
        f.write(f"{wall:.6f} {usage.ru_maxrss} {child.returncode}\n")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

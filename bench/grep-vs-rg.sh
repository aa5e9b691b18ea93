#!/usr/bin/env bash
# grep_search against ripgrep on a generated tree, in the same run.
#
# Generates FILES files (default 50,000, ~10.5 KB each: ~525 MB) under /tmp, with a
# .git directory, a .gitignore, a hidden directory and a build/ directory (all of
# which both tools must skip), then times troupe's search engine (examples/bench_grep,
# dist build, PROFILE to change it; the code grep_search runs) and `rg` with the same pattern, thread
# count and ignore rules. Prints wall times, the ratio and the peak RSS of both
# (wall from bench/timed.py, to the microsecond; RSS from one /usr/bin/time run), after
# checking both found the same number of matching lines.
# The tree is deleted on exit.
#
# Usage: bench/grep-vs-rg.sh [FILES] [RUNS]
set -euo pipefail

FILES=${1:-50000}
RUNS=${2:-11}
THREADS=${THREADS:-4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v rg >/dev/null; then
    apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null
fi

TREE=$(mktemp -d /tmp/troupe-grep-bench.XXXXXX)
trap 'rm -rf "$TREE"' EXIT

PROFILE=${PROFILE:-dist}
echo "building bench_grep ($PROFILE)..." >&2
[ "${SKIP_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --profile "$PROFILE" --example bench_grep -q)
BENCH="${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE/examples/bench_grep"

echo "generating $FILES files in $TREE..." >&2
python3 - "$TREE" "$FILES" <<'PY'
import os, random, sys
root, files = sys.argv[1], int(sys.argv[2])
rng = random.Random(4)
words = ["alpha", "beta", "gamma", "delta", "value", "result", "buffer", "index",
         "return", "struct", "self", "match", "string", "vector", "handle", "error",
         "config", "thread", "parser", "token", "stream", "socket", "module", "trait"]
pool = []
for _ in range(4000):
    n = rng.randint(4, 16)
    pool.append("    " * rng.randint(0, 3) + " ".join(rng.choice(words) for _ in range(n)) + ";\n")
def body(i, needle):
    lines = rng.choices(pool, k=150)
    if needle:
        lines[rng.randrange(150)] = f"    let found = needle_{i}(frobnicate_widget);\n"
    return "".join(lines)
os.makedirs(os.path.join(root, ".git"))
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("*.gen\nvendor/\n")
per_dir = 100
for i in range(files):
    d = os.path.join(root, f"pkg{i // per_dir:04d}")
    if i % per_dir == 0:
        os.makedirs(d)
    with open(os.path.join(d, f"mod{i % per_dir:03d}.rs"), "w") as f:
        f.write(body(i, i % 97 == 0))
# Everything below must be skipped by both tools.
for sub, name in [("vendor", "lib.rs"), ("pkg0000", "x.gen"), (".cache", "c.rs"),
                  ("build", "out.rs"), ("dist", "d.rs"), ("logs", "run.log")]:
    os.makedirs(os.path.join(root, sub), exist_ok=True)
    with open(os.path.join(root, sub, name), "w") as f:
        for k in range(50):
            f.write(f"needle_{k}(frobnicate_widget)\n")
PY
SIZE=$(du -sm --apparent-size "$TREE" | cut -f1)
COUNT=$(find "$TREE" -type f | wc -l)
echo "tree: $COUNT files, ${SIZE} MB of content"

# gemini-cli's default excludes, passed to rg as globs (troupe applies them itself).
RG_GLOBS=(--glob '!**/.vscode/**' --glob '!**/.idea/**' --glob '!**/dist/**'
          --glob '!**/build/**' --glob '!**/coverage/**' --glob '!**/__pycache__/**'
          --glob '!*.log' --glob '!*.tmp')

wall() { # prints the seconds one run takes, to the microsecond (bench/timed.py)
    local out
    out=$(mktemp)
    python3 "$ROOT/bench/timed.py" "$out" --stdout /dev/null -- "$@" 2>/dev/null
    cut -d' ' -f1 "$out"
    rm -f "$out"
}

peak_rss() { # prints the peak RSS (KB) of one run, from GNU time: a child forked from
    # python (bench/timed.py) starts its peak count at python's own ~14 MB
    local out
    out=$(mktemp)
    /usr/bin/time -f '%M' -o "$out" "$@" >/dev/null 2>&1
    tail -1 "$out"
    rm -f "$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

run_case() { # name, pattern, extra rg flag, extra bench flag
    local name=$1 pattern=$2 rg_flag=$3 bench_flag=$4
    local rg_cmd=(rg -n --threads "$THREADS" "${RG_GLOBS[@]}" $rg_flag -e "$pattern" "$TREE")
    local tr_cmd=("$BENCH" --dir "$TREE" --pattern "$pattern" --threads "$THREADS" $bench_flag)
    local rg_lines tr_matches
    rg_lines=$("${rg_cmd[@]}" | wc -l)
    tr_matches=$("${tr_cmd[@]}" 2>&1 >/dev/null | sed -n 's/^bench_grep: \([0-9]*\) matches.*/\1/p')
    if [ "$rg_lines" != "$tr_matches" ]; then
        echo "MISMATCH for $name: rg $rg_lines lines, troupe $tr_matches matches" >&2
        exit 1
    fi
    local rg_times=() tr_times=() rg_rss tr_rss
    for _ in $(seq "$RUNS"); do
        rg_times+=("$(wall "${rg_cmd[@]}")")
        tr_times+=("$(wall "${tr_cmd[@]}")")
    done
    rg_rss=$(peak_rss "${rg_cmd[@]}")
    tr_rss=$(peak_rss "${tr_cmd[@]}")
    local rg_med tr_med
    rg_med=$(printf '%s\n' "${rg_times[@]}" | median)
    tr_med=$(printf '%s\n' "${tr_times[@]}" | median)
    printf '%-22s matches=%-6s rg=%7.4fs troupe=%7.4fs ratio=%5.2f  peakRSS rg=%6.1fMB troupe=%6.1fMB  (runs rg: %s | troupe: %s)\n' \
        "$name" "$rg_lines" "$rg_med" "$tr_med" "$(echo "$tr_med / $rg_med" | bc -l)" \
        "$(echo "$rg_rss / 1024" | bc -l)" "$(echo "$tr_rss / 1024" | bc -l)" \
        "${rg_times[*]}" "${tr_times[*]}"
}

# Warm the page cache so both tools read from memory.
rg -c zzzz_never "$TREE" >/dev/null || true

echo "rg: $(rg --version | sed -n 1p); threads: $THREADS; runs per tool: $RUNS (median shown)"
run_case "rare literal-ish" 'needle_[0-9]+' "" ""
run_case "case-insensitive word" 'FROBNICATE_\w+' "--ignore-case" "--ignore-case"
run_case "common regex" 'parser\s+token\s+stream' "" ""

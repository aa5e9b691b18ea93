#!/usr/bin/env bash
# The issue-10 measurement: N parallel write_file calls (default 200), each rewriting
# a 5 MB file whose every line changes, in one batch. Prints the wall time and the
# peak resident memory of troupe. Usage: bench/rewrite_5mb.sh [N] [troupe binary]
# (default target/dist/troupe; build it with `cargo build --profile dist`). TROUPE_ARGS adds
# arguments (e.g. "--log-requests FILE", as the black-box test runs it).
set -euo pipefail
n="${1:-200}"
bin="${2:-${CARGO_TARGET_DIR:-target}/dist/troupe}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws" "$work/home"
python3 - "$work" "$n" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
lines = 5 * 1024 * 1024 // 51
line = lambda tag, i: f"{tag}{i:09d}{'x' * 40}\n"
old = "".join(line("a", i) for i in range(lines))
new = "".join(line("b", i) for i in range(lines))
for i in range(n):
    open(f"{work}/ws/big{i}.txt", "w").write(old)
def turn(parts):
    return {"method": "generateContentStream", "response": [{"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}]}]}
calls = [{"functionCall": {"name": "write_file", "args": {"file_path": f"big{i}.txt", "content": new}}} for i in range(n)]
with open(f"{work}/script.jsonl", "w") as f:
    f.write(json.dumps(turn(calls)) + "\n")
    f.write(json.dumps(turn([{"text": "done"}])) + "\n")
PY
cd "$work/ws"
start=$(date +%s.%N)
env -i PATH="$PATH" HOME="$work/home" TROUPE_HOME="$work/home/.troupe" \
  /usr/bin/time -f "%M" -o "$work/rss" \
  ${PERF:-} "$bin" --fake-responses "$work/script.jsonl" -p go --approval-mode yolo -o json ${TROUPE_ARGS:-} >"$work/out.json"
end=$(date +%s.%N)
changed=$(grep -l '^b000000000' "$work"/ws/big*.txt | wc -l)
echo "files: $n, rewritten: $changed"
echo "wall time: $(echo "$end - $start" | bc) s"
echo "peak RSS: $(( $(cat "$work/rss") / 1024 )) MiB"

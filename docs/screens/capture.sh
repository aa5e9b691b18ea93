#!/bin/sh
# Regenerates confirmation.txt and stats.txt: runs `troupe` (debug build) in a private
# tmux server on a scripted model and saves the terminal as text. Needs tmux.
# EDIT_TOOL=test_edit uses the test-only edit tool instead of replace.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${TROUPE_BIN:-$here/../../target/debug/troupe}
tool=${EDIT_TOOL:-replace}
work=$(mktemp -d)
trap 'tmux -S "$work/sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/ws/src" "$work/home"
cat > "$work/ws/src/pricing.py" <<'PY'
"""Prices and discounts for the shop."""

TAX_RATE = 0.2


def net(price):
    return price


def gross(price):
    return price * (1 + TAX_RATE)


def discount(price, percent):
    if percent < 0 or percent > 100:
        raise ValueError("percent must be between 0 and 100")
    return price * (100 - percent) / 100


def total(prices):
    return sum(gross(p) for p in prices)
PY
python3 - "$work" "$tool" <<'PY'
import json, sys
work, tool = sys.argv[1], sys.argv[2]
def turn(parts, p=1200, c=80):
    return {"method": "generateContentStream", "response": [{"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": p, "candidatesTokenCount": c, "totalTokenCount": p + c}}]}
old = 'TAX_RATE = 0.2\n'
new = '# VAT, as a fraction of the net price.\nTAX_RATE = 0.21\n'
turns = [
    turn([{"text": "I'll look at the pricing module first.\n"},
          {"functionCall": {"name": "read_file", "args": {"file_path": "src/pricing.py"}}},
          {"functionCall": {"name": "glob", "args": {"pattern": "**/*.py"}}}]),
    turn([{"text": "The tax rate is hard-coded at 20%; I'll update it to 21%.\n"},
          {"functionCall": {"name": tool, "args": {"file_path": "src/pricing.py", "instruction": "Raise VAT to 21%",
                                                   "old_string": old, "new_string": new}}}], 1500, 120),
    turn([{"text": "Done: `TAX_RATE` is now `0.21`, with a comment saying what it is.\n"}], 1700, 40),
]
with open(f"{work}/script.jsonl", "w") as f:
    for t in turns:
        f.write(json.dumps(t) + "\n")
PY
tmux -S "$work/sock" -f /dev/null new-session -d -x 100 -y 40 -s t \
  "cd '$work/ws' && env -i PATH='$PATH' HOME='$work/home' TROUPE_HOME='$work/home/.troupe' TROUPE_TEST_TOOLS=1 NO_COLOR=1 TERM=screen '$bin' --fake-responses '$work/script.jsonl'; sleep 60"
wait_for() {
  i=0
  until tmux -S "$work/sock" capture-pane -p -t t | grep -qF -- "$1"; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "timed out waiting for: $1" >&2; exit 1; }
    sleep 0.1
  done
}
wait_for "Type a request"
tmux -S "$work/sock" send-keys -t t -l "Raise VAT to 21% in the pricing module"
tmux -S "$work/sock" send-keys -t t Enter
wait_for "Allow once"
tmux -S "$work/sock" capture-pane -p -t t | sed "s|$work|/tmp/demo|g" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$here/confirmation.txt"
tmux -S "$work/sock" send-keys -t t Enter
wait_for "Done:"
tmux -S "$work/sock" send-keys -t t -l "/stats"
tmux -S "$work/sock" send-keys -t t Enter
wait_for "Corrections"
tmux -S "$work/sock" capture-pane -p -t t -S - | sed "s|$work|/tmp/demo|g" | sed -n '/> \/stats/,$p' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$here/stats.txt"
echo "wrote $here/confirmation.txt and $here/stats.txt"

#!/usr/bin/env bash
# Differential check of the read/search tools against the real gemini-cli 0.61 (the peer
# in /work/shared/peers/gemini-cli, installed under $PEER_DIR): the same tree and the
# same scripted model turn (19 parallel list_directory/read_file/glob/grep_search calls)
# go to both; the functionResponses each model received are compared call by call.
# Known difference: grep_search lists files in path order, ripgrep in walk order.
#
# Usage: bench/read-search-vs-gemini.sh      (needs node + the peer install; offline)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PEER=/work/shared/peers/gemini-cli
PEER_DIR=${PEER_DIR:-/tmp/peer}
WORK=$(mktemp -d /tmp/troupe-peer-diff.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
(cd "$ROOT" && cargo build -q)
python3 "$ROOT/bench/peer-diff/make_tree.py" "$WORK/peer"
python3 "$ROOT/bench/peer-diff/make_tree.py" "$WORK/troupe"
mkdir -p "$WORK/peer/home/.gemini" "$WORK/peer/reqs" "$WORK/troupe/home"
cat > "$WORK/peer/home/.gemini/settings.json" <<'JSON'
{"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},
 "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "tools": {"disableLLMCorrection": true}, "ide": {"enabled": false}}
JSON
OUT=$WORK/peer TRANSPORT=server FORMAT=json TELEMETRY=0 PEER_DIR=$PEER_DIR \
    timeout 300 unshare -n "$PEER/run.sh" __inner
(cd "$WORK/troupe/ws" && env -i PATH="$PATH" HOME="$WORK/troupe/home" \
    TROUPE_HOME="$WORK/troupe/home/.troupe" timeout 60 "$ROOT/target/debug/troupe" \
    -p "Do it" --yolo -o json --fake-responses ../responses.jsonl \
    --log-requests ../requests.jsonl > ../out.json)
cd "$WORK" && python3 "$ROOT/bench/peer-diff/compare.py" "$WORK"

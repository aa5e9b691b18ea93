#!/usr/bin/env bash
# Wire differential against the real gemini-cli 0.61 (see bench/wire_parity.py):
#   bench/wire-parity.sh [SCENARIO ...]      # all scenarios by default; --list names them
# Runs inside a network namespace with only loopback when `unshare -n` is permitted.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = __inner ]; then
  shift
  ip link set lo up 2>/dev/null || true
  exec python3 "$HERE/wire_parity.py" "$@"
fi
if unshare -n true 2>/dev/null; then exec unshare -n bash "$0" __inner "$@"; fi
echo "note: unshare -n not permitted; running without network isolation" >&2
exec python3 "$HERE/wire_parity.py" "$@"

#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (cargo-fuzz / libFuzzer) and fails if any
# crashes, leaks or times out. Each target starts from its checked-in seed corpus,
# copied to a temporary directory so the repository's corpus does not grow.
#
#   fuzz/run.sh SECONDS [TARGET...]      (all targets when none is named)
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). Works on the stable
# toolchain: RUSTC_BOOTSTRAP=1 lets stable rustc take the sanitizer flags cargo-fuzz
# passes (a nightly toolchain works too). Crash inputs land in fuzz/artifacts/<target>/
# (not checked in); reproduce one with `fuzz/run.sh --repro TARGET FILE`.
# FUZZ_TARGET_DIR (default fuzz/target) holds the build, FUZZ_RSS_MB (default 2048)
# bounds each target's memory, FUZZ_TIMEOUT (default 20 s) each input's time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

targets_all=(edit_matcher sse_gemini openai_stream fake_responses shell_command path_resolution sanitize)

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "fuzz/run.sh: ERROR: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)." >&2
    exit 2
fi
export RUSTC_BOOTSTRAP=1
# Its own target directory (the instrumented build shares nothing with the main one).
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$here/target}"
# Unoptimised, debug assertions on (see Cargo.toml): quick to build, for CI. A long run
# should set FUZZ_RELEASE=1 (optimised, debug assertions still on: many times the
# executions per second, after a longer build).
if [ "${FUZZ_RELEASE:-0}" = 1 ]; then build_flags=(-O -a); else build_flags=(--dev); fi

dict_of() {
    case "$1" in
        sse_gemini | openai_stream) echo "$here/dict/json_stream.dict" ;;
        *) [ -f "$here/dict/$1.dict" ] && echo "$here/dict/$1.dict" ;;
    esac
}

if [ "${1:-}" = "--repro" ]; then
    target="$2"
    file="$3"
    exec cargo fuzz run "${build_flags[@]}" "$target" "$file"
fi

seconds="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${targets_all[@]}")

cargo fuzz build "${build_flags[@]}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tmp"
failed=()
summary=()
for target in "${targets[@]}"; do
    mkdir -p "$work/corpus/$target"
    cp -R "$here/corpus/$target/." "$work/corpus/$target/"
    args=(-max_total_time="$seconds" -rss_limit_mb="${FUZZ_RSS_MB:-2048}"
        -timeout="${FUZZ_TIMEOUT:-20}" -print_final_stats=1)
    case "$target" in
        edit_matcher) args+=(-max_len=1024) ;;
        sse_gemini | openai_stream | fake_responses) args+=(-max_len=2048) ;;
        *) args+=(-max_len=4096) ;;
    esac
    dict="$(dict_of "$target" || true)"
    [ -n "$dict" ] && args+=(-dict="$dict")
    log="$work/$target.log"
    echo "== $target: ${seconds} s"
    status=0
    # The path target's workspace is made under TMPDIR, which is removed on exit.
    TMPDIR="$work/tmp" cargo fuzz run "${build_flags[@]}" "$target" "$work/corpus/$target" \
        -- "${args[@]}" >"$log" 2>&1 || status=$?
    execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
    corpus="$(ls "$work/corpus/$target" | wc -l)"
    if [ "$status" -ne 0 ]; then
        failed+=("$target")
        echo "   FAILED (exit $status); the end of its log:"
        tail -40 "$log" | sed 's/^/   | /'
        summary+=("$target: FAILED after ${execs:-?} executions")
    else
        summary+=("$target: ${execs:-?} executions in ${seconds} s, no crash (corpus ${corpus} inputs)")
    fi
done

echo "== fuzz summary (${seconds} s per target)"
printf '   %s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz/run.sh: ${#failed[@]} target(s) failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi

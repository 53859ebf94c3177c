#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS seconds each, one after
# the other (one libFuzzer process at a time), and reports per target the
# executions, exec/s, corpus size and any crash, timeout or OOM.
#
#   fuzz/run.sh SECONDS
#
# Needs the nightly toolchain (`cargo +nightly`); installs cargo-fuzz when it
# is missing. Seeds live in fuzz/seeds/<target> (committed); they are copied
# into the scratch corpus fuzz/corpus/<target> (git-ignored), which is what
# libFuzzer grows. Logs and findings go to fuzz/artifacts/<target>/
# (git-ignored). Exits non-zero when any target found something.
#
# Environment:
#   FUZZ_TARGETS      targets to run (default: "parse_head conn_loop multipart")
#   FUZZ_BUILD_FLAGS  extra `cargo fuzz` build flags
#                     (default: --debug-assertions, so overflow checks and
#                     debug_assert! are live)
set -euo pipefail

if [[ $# -ne 1 || ! $1 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS" >&2
    exit 2
fi
secs=$1

cd "$(dirname "$0")/.."

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

targets=${FUZZ_TARGETS:-parse_head conn_loop multipart}
read -r -a build_flags <<<"${FUZZ_BUILD_FLAGS---debug-assertions}"

# Longest input per target. parse_head: past the 16 KiB head limit.
# conn_loop: past the 20 KiB read buffer (16 KiB head + 4 KiB body slack)
# plus the split header, so pipelined heads can end at the buffer's edge.
max_len_for() {
    case $1 in
        parse_head) echo 20000 ;;
        conn_loop) echo 24576 ;;
        # multipart: each input is also read a byte at a time.
        multipart) echo 4096 ;;
        *) echo 20000 ;;
    esac
}

failed=()
for target in $targets; do
    corpus=fuzz/corpus/$target
    artifacts=fuzz/artifacts/$target
    log=$artifacts/fuzz.log
    mkdir -p "$corpus" "$artifacts"
    stamp=$artifacts/.started
    touch "$stamp"
    cp -n fuzz/seeds/"$target"/* "$corpus"/ 2>/dev/null || true

    echo "== $target: building"
    (cd fuzz && cargo +nightly fuzz build "${build_flags[@]}" "$target")

    echo "== $target: fuzzing for ${secs}s (log: $log)"
    set +e
    (cd fuzz && cargo +nightly fuzz run "${build_flags[@]}" "$target" "corpus/$target" -- \
        -max_total_time="$secs" \
        -timeout=10 \
        -rss_limit_mb=2048 \
        -max_len="$(max_len_for "$target")" \
        -print_final_stats=1) >"$log" 2>&1
    rc=$?
    set -e

    echo "== $target: exit code $rc"
    # The last status line ("#N DONE ..." or the last "#N pulse/NEW ...").
    grep -E '^#[0-9]+' "$log" | tail -n 1 || true
    grep -E '^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log" || true
    echo "corpus files: $(find "$corpus" -type f | wc -l)"
    findings=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) -newer "$stamp" 2>/dev/null || true)
    if [[ $rc -ne 0 || -n $findings ]]; then
        failed+=("$target")
        echo "!! $target FOUND A PROBLEM"
        grep -E '^==[0-9]+==|^SUMMARY|panicked at|Test unit written to|^Base64|ERROR: libFuzzer' "$log" | head -n 20 || true
        for f in $findings; do
            echo "   finding: $f"
        done
        echo "   minimise: (cd fuzz && cargo +nightly fuzz tmin ${build_flags[*]} $target <finding relative to fuzz/>)"
    else
        echo "== $target: no findings"
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "FAILED targets: ${failed[*]}"
    exit 1
fi
echo "all targets clean"

#!/usr/bin/env bash
# The crate on Windows, under Wine: clippy for x86_64-pc-windows-gnu, the
# test suite (`cargo test`, then with all features), and examples/testolope
# served to curl and wrk and stopped with Ctrl-C.
# Installs what it needs: mingw-w64, wine64, the target's std, and the
# ProcessPrng shim Debian's Wine 8 lacks (ci/wine/, built here).
#
#   bash ci/windows.sh          everything
#   bash ci/windows.sh test     the test suite only
#   bash ci/windows.sh serve    testolope only
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-pc-windows-gnu
what=${1:-all}

need_apt=()
command -v x86_64-w64-mingw32-gcc >/dev/null || need_apt+=(mingw-w64)
command -v wine >/dev/null || need_apt+=(wine64 wine)
command -v curl >/dev/null || need_apt+=(curl)
command -v wrk >/dev/null || need_apt+=(wrk)
if ((${#need_apt[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

# A Wine prefix of our own, with the shim: Rust's std (1.78 on) seeds its
# hash maps from ProcessPrng (bcryptprimitives.dll), which Wine 8 lacks.
export WINEPREFIX="$PWD/target/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="bcryptprimitives=n;mscoree=;mshtml="
shim="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [[ ! -f "$shim" || ci/wine/bcryptprimitives.c -nt "$shim" ]]; then
    mkdir -p "$WINEPREFIX"
    wineboot --init >/dev/null 2>&1
    x86_64-w64-mingw32-gcc -O2 -shared -o "$shim" ci/wine/bcryptprimitives.c ci/wine/bcryptprimitives.def
fi
# Wine's server outlives each program by default; one for the whole run.
# It is stopped, and waited for, on the way out: while it lives it writes
# into the prefix (the registry on exit), and a run failed when .ci/run
# removed the prefix under it ("rm: cannot remove 'target/wine-prefix':
# Directory not empty", 2026-11-27).
wineserver --persistent=60 2>/dev/null || true
stop_wine() { wineserver -k 2>/dev/null || true; wineserver -w 2>/dev/null || true; }
trap stop_wine EXIT
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine

if [[ $what == all || $what == test ]]; then
    echo "== clippy for $target"
    cargo clippy --target "$target" --all-targets --all-features -- -D warnings
    # Every test target runs (--no-fail-fast); a target that failed is run
    # again whole, up to twice, and reported loudly: a target that fails
    # three times fails the run. A target fails under Wine now and then
    # without a fault of the crate's (issue 21, 2026-11-25): Wine's client
    # lost its server once ("wine client error:0: recvmsg: Connection reset
    # by peer", tests/examples.rs, all features). tests/pool.rs
    # with_every_thread_blocked_new_clients_get_backpressure_not_threads
    # failed now and then: a server bug (a worker's accept pass counted the
    # connection it was about to serve as queued, and refused a client with
    # 503), fixed in the commit after addb971, with a deterministic test.
    # tests/no_request_lost.rs repeated_shutdowns_lose_no_request_sent_
    # before_them failed too, 1 run in 8: a server bug that Wine's slow
    # reads exposed (fixed in e4f1c2f; 0 failures in 80 runs since).
    suite() {
        local log attempt target_args
        local -a failed
        log=$(mktemp)
        if cargo test --target "$target" --no-fail-fast "$@" 2>&1 | tee "$log"; then
            return 0
        fi
        # cargo names each failed target the way it is run again:
        # "error: test failed, to rerun pass `--test pool`".
        mapfile -t failed < <(sed -nE 's/^error: test failed, to rerun pass `(.*)`$/\1/p' "$log" | sort -u)
        if ((${#failed[@]} == 0)); then
            echo "windows: the suite failed, not a test target (a build?)" >&2
            return 1
        fi
        echo "windows: FLAKY? these test targets failed under Wine:" >&2
        printf '  %s\n' "${failed[@]}" >&2
        sed -nE 's/^test (.*) \.\.\. FAILED$/  failed: \1/p' "$log" | sort -u >&2
        for target_args in "${failed[@]}"; do
            for attempt in 2 3; do
                echo "windows: running $target_args again, attempt $attempt of 3" >&2
                # shellcheck disable=SC2086 # "--test pool" is two arguments
                if cargo test --target "$target" "$@" $target_args; then
                    echo "windows: FLAKY: $target_args passed at attempt $attempt; its failure above happened before" >&2
                    continue 2
                fi
            done
            return 1
        done
        return 0
    }
    echo "== cargo test for $target, under Wine"
    suite
    echo "== cargo test --all-features for $target, under Wine"
    suite --all-features
fi

if [[ $what == all || $what == serve ]]; then
    echo "== testolope for $target, under Wine"
    cargo build --release --target "$target" --example testolope
    log=$(mktemp)
    port=18090
    wine "target/$target/release/examples/testolope.exe" "127.0.0.1:$port" >"$log" 2>&1 &
    server=$!
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/testolope" && break
        sleep 0.2
    done
    body=$(curl -sS "http://127.0.0.1:$port/testolope")
    nokeep=$(curl -sS -D - -o /dev/null "http://127.0.0.1:$port/testolope-nokeepalive" | tr -d '\r')
    echo "keep-alive: $body"
    grep -qi '^connection: close' <<<"$nokeep" || { echo "windows: /testolope-nokeepalive did not close" >&2; exit 1; }
    for path in testolope testolope-nokeepalive; do
        out=$(wrk -t2 -c16 -d3s "http://127.0.0.1:$port/$path")
        echo "$out" | grep -E 'Requests/sec|Latency|Socket errors|Non-2xx' || true
        if grep -q 'Socket errors\|Non-2xx' <<<"$out"; then
            echo "windows: wrk saw errors on /$path" >&2
            exit 1
        fi
    done
    # Ctrl-C (Wine turns SIGINT into the console's CTRL_C_EVENT) with a
    # request in the handler: it is answered, and the process exits 0.
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    printf 'GET /sleep HTTP/1.1\r\nHost: t\r\n\r\n' >&3
    kill -INT "$server"
    reply=$(timeout 20 cat <&3 | tr -d '\r' || true)
    exec 3<&-
    status=0
    timeout 30 tail --pid="$server" -f /dev/null || true
    wait "$server" || status=$?
    cat "$log"
    grep -q '^HTTP/1.1 200 OK' <<<"$reply" && grep -q 'Slept$' <<<"$reply" ||
        { echo "windows: the request in flight at Ctrl-C was not answered: $reply" >&2; exit 1; }
    grep -q 'testolope stopped' "$log" || { echo "windows: Ctrl-C did not stop testolope gracefully" >&2; exit 1; }
    [[ $status == 0 ]] || { echo "windows: testolope exited with $status after Ctrl-C" >&2; exit 1; }
    echo "windows: testolope served and stopped on Ctrl-C"
fi

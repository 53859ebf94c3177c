#!/usr/bin/env bash
# Replays the llhttp request corpus (../shared/conformance) against the echo
# example, whole and in 3-byte fragments, and fails when either run passes
# fewer than CONFORMANCE_MIN_PASS of the strict request cases.
#
# The strict request cases are what replay.py runs by default (llhttp types
# `request` and `request-finish`, 136 cases); its last line is the tally,
# `N passed, M failed`.
#
# Environment:
#   CONFORMANCE_PORT      port for the echo server (default: a free one)
#   CONFORMANCE_MIN_PASS  strict request cases each run must pass (default 135:
#                         all but the deliberate difference listed below)
set -euo pipefail

root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
shared="$root/../shared/conformance"
min_pass="${CONFORMANCE_MIN_PASS:-135}"
cd "$root"

# Failures httpool chooses on purpose (see tests/rfc9112.rs): prints why for
# such a case id, nothing for others. Listed so the output tells them from
# regressions; they still count as failures. (A function, not an associative
# array: macOS's bash is 3.2.)
deliberate() {
    case $1 in
    "request/sample.md:317") echo "no HTTP/0.9 (RFC 9112 has no HTTP/0.9 request line): 400" ;;
    esac
}

cargo build --release --example echo
target_dir="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
echo_bin="$target_dir/release/examples/echo"

port="${CONFORMANCE_PORT:-$(python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')}"

logs="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$logs"
}
trap cleanup EXIT

"$echo_bin" "127.0.0.1:$port" 2>"$logs/server.log" &
server_pid=$!

# Wait (at most ~10 s) until the server accepts connections.
ready=""
for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "echo server exited early:" >&2
        cat "$logs/server.log" >&2
        exit 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        ready=yes
        break
    fi
    sleep 0.1
done
if [[ -z "$ready" ]]; then
    echo "echo server did not accept on 127.0.0.1:$port within 10 s" >&2
    exit 1
fi

# Runs one replay; prints its failures and tally; sets $passed.
replay() {
    local name="$1"
    shift
    local log="$logs/$name.txt"
    echo "== replay ($name): replay.py llhttp_cases.jsonl --port $port --inject-host $*"
    # replay.py exits 1 when any case fails; the tally decides here.
    python3 "$shared/replay.py" "$shared/llhttp_cases.jsonl" \
        --port "$port" --inject-host "$@" >"$log" || true
    local id why
    while read -r _ id rest; do
        why="$(deliberate "$id")"
        if [[ -n "$why" ]]; then
            echo "  deliberate  $id  ($why)"
        else
            echo "  FAIL        $id  $rest"
        fi
    done < <(grep '^FAIL ' "$log" || true)
    local tally
    tally="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" || true)"
    if [[ -z "$tally" ]]; then
        echo "replay ($name) printed no tally:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
    echo "== $name: $tally (strict request cases)"
    passed="${tally%% *}"
}

passed=0
replay plain
plain_passed=$passed
replay split3 --split 3
split_passed=$passed

echo
echo "strict request cases passed: plain $plain_passed, --split 3 $split_passed (need $min_pass each)"
if ((plain_passed < min_pass || split_passed < min_pass)); then
    echo "conformance: FAILED" >&2
    exit 1
fi
echo "conformance: ok"

#!/usr/bin/env bash
# Real clients against the web toolkit's examples (issue 52): sessions
# (examples/login) and CORS (examples/cors). All on 127.0.0.1:
#
#   python    requests (ci/web_clients.py): a requests.Session signs in
#             with the form, reads the private page, signs out; a cookie
#             with one character changed and one kept past the logout are
#             refused; a login rotates the session id
#   browser   headless Chromium driven by selenium (ci/web_browser.py):
#             examples/cors's page on one origin fetches its API on another
#             (a simple GET, a preflighted PUT with a custom header, a PUT
#             whose header the API refuses, a credentialed POST and GET),
#             then the same page from an origin the API does not allow,
#             whose every fetch the browser must block; then the login form,
#             the private page and the logout
#
#   bash ci/web.sh
#
# Installs what is missing (`apt-get update` once, only if something must
# be installed): python3 with requests and selenium (from pip, else
# Debian's python3-* packages and Debian's python3), chromium and
# chromium-driver. Builds the two examples (debug). Ends with
# `web: N passed, M failed` and exits 1 if anything failed.
#
# Environment: KEEP_TMP (0; 1 keeps the temporary directory with the logs).
set -euo pipefail
cd "$(dirname "$0")/.."

KEEP_TMP=${KEEP_TMP:-0}

say() { echo "web: $*" >&2; }

# ---------------------------------------------------------------- installs
PY=python3
py_modules='import requests, selenium'
need_apt=()
command -v python3 >/dev/null || need_apt+=(python3)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if ! { command -v python3 >/dev/null && python3 -c "$py_modules" 2>/dev/null; }; then
    if ! { command -v python3 >/dev/null && python3 -m pip install -q requests selenium >/dev/null 2>&1; }; then
        # Debian's own python3 with Debian's packages.
        need_apt+=(python3-requests python3-selenium)
        PY=/usr/bin/python3
    fi
fi
if ((${#need_apt[@]})); then
    say "installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
"$PY" -c "$py_modules" || {
    say "FAIL: requests or selenium is not importable by $PY"
    exit 1
}

# ---------------------------------------------------------------- harness
tmp="$(mktemp -d -t httpool-web.XXXXXX)"
servers=()
cleanup() {
    local pid
    for pid in "${servers[@]}"; do
        kill "$pid" 2>/dev/null || true
        # Bounded: a server that ignores TERM gets KILL after ~5 s.
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ $KEEP_TMP == 1 ]]; then
        say "logs kept in $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT

passed=0
failed=0
not_ok() {
    echo "NOT OK - $*" >&2
    failed=$((failed + 1))
}

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# listening PID PORT NAME: waits (at most 10 s) until PORT accepts; fails
# loudly with the log if the server exits or never listens.
listening() {
    local pid=$1 port=$2 name=$3
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        if ! kill -0 "$pid" 2>/dev/null; then
            say "FAIL: $name exited before listening on 127.0.0.1:$port; its log:"
            cat "$tmp/$name.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    say "FAIL: $name did not listen on 127.0.0.1:$port within 10 s; its log:"
    cat "$tmp/$name.log" >&2
    exit 1
}

# ---------------------------------------------------------------- servers
cargo build --features sessions --example login --example cors
target_dir="$(cargo metadata --format-version 1 --no-deps |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
login_port=$(free_port)
"$target_dir/debug/examples/login" "127.0.0.1:$login_port" >"$tmp/login.log" 2>&1 &
servers+=($!)
listening $! "$login_port" login
page_port=$(free_port)
api_port=$(free_port)
other_port=$(free_port)
"$target_dir/debug/examples/cors" "127.0.0.1:$page_port" "127.0.0.1:$api_port" "127.0.0.1:$other_port" \
    >"$tmp/cors.log" 2>&1 &
servers+=($!)
for port in "$page_port" "$api_port" "$other_port"; do
    listening "${servers[1]}" "$port" cors
done

# ---------------------------------------------------------------- clients
say "$("$PY" --version), $(chromium --version 2>/dev/null | head -n 1); login on $login_port," \
    "cors page $page_port, API $api_port, other page $other_port"

# client_checks NAME CMD...: runs a client (bounded) that prints an
# `ok - ...` line per check passed and a `NOT OK - ...` line per check
# failed; counts both, and one failure more if it exits non-zero without
# saying why (a crash, a timeout).
client_checks() {
    local name=$1 rc=0 bad
    shift
    timeout 120 "$@" >"$tmp/$name.out" 2>&1 || rc=$?
    cat "$tmp/$name.out"
    passed=$((passed + $(grep -c '^ok - ' "$tmp/$name.out" || true)))
    bad=$(grep -c '^NOT OK - ' "$tmp/$name.out" || true)
    failed=$((failed + bad))
    if ((rc != 0 && bad == 0)); then
        not_ok "$name client exited with status $rc$( ((rc == 124)) && echo ' (timed out)')"
    fi
}
client_checks python "$PY" ci/web_clients.py "$login_port"
client_checks browser "$PY" ci/web_browser.py "$page_port" "$other_port" "$login_port"

# ---------------------------------------------------------------- summary
for i in "${!servers[@]}"; do
    name=$( ((i == 0)) && echo login || echo cors)
    if ! kill -0 "${servers[$i]}" 2>/dev/null; then
        not_ok "$name exited during the run; its log: $(tail -n 5 "$tmp/$name.log" | tr '\n' '|')"
    fi
    if grep -Eqi 'panicked' "$tmp/$name.log"; then
        not_ok "$name panicked: $(grep -i -m 3 'panicked' "$tmp/$name.log" | tr '\n' '|')"
    fi
done
echo "web: $passed passed, $failed failed"
((failed == 0))

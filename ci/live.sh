#!/usr/bin/env bash
# Real clients and a real browser against examples/broadcast (issue 50):
# server-sent events on /events, a WebSocket on /ws (echo, a broadcast of
# the unix time in milliseconds once a second, ping/pong, close), and the
# page on /page that uses both. All on 127.0.0.1:
#
#   python   websockets (ci/live_clients.py): 3 texts echoed exactly and in
#            order, 2 broadcasts (all digits, increasing, within 1.5 s of
#            now), ping → pong, close answered with close 1000;
#            aiohttp: GET / and /page, an SSE reader (the event-stream
#            format parsed properly) getting 3 events with increasing
#            timestamps, a WebSocket echo and close
#   Node.js  the `ws` package (ci/live_node.mjs): echo and 2 broadcasts,
#            close 1000; fetch reading /events from the body stream
#   browser  headless Chromium driven by selenium (ci/live_browser.py):
#            the page's EventSource and WebSocket count events, broadcasts
#            and the echo into its DOM
#
# The three clients run at once, so the server has subscribers of each kind
# together. Every check is bounded in time.
#
#   bash ci/live.sh
#
# Installs what is missing (`apt-get update` once, only if something must
# be installed): python3 with websockets, aiohttp and selenium (from pip,
# else Debian's python3-* packages and Debian's python3), chromium and
# chromium-driver, node and npm; the `ws` package goes into target/live-node
# with npm. Builds examples/broadcast in release mode. Ends with
# `live: N passed, M failed` and exits 1 if anything failed.
#
# Environment: LIVE_SERVER_CMD (unset; a command, with `{port}` where the
# port goes, to test another server against the same clients instead of
# examples/broadcast, e.g. a stand-in while the example is written),
# KEEP_TMP (0; 1 keeps the temporary directory with the logs).
set -euo pipefail
cd "$(dirname "$0")/.."

KEEP_TMP=${KEEP_TMP:-0}
LIVE_SERVER_CMD=${LIVE_SERVER_CMD:-}

say() { echo "live: $*" >&2; }

# ---------------------------------------------------------------- installs
PY=python3
py_modules='import websockets, aiohttp, selenium'
need_apt=()
command -v python3 >/dev/null || need_apt+=(python3)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if ! { command -v python3 >/dev/null && python3 -c "$py_modules" 2>/dev/null; }; then
    if ! { command -v python3 >/dev/null &&
        python3 -m pip install -q websockets aiohttp selenium >/dev/null 2>&1; }; then
        # Debian's own python3 with Debian's packages.
        need_apt+=(python3-websockets python3-aiohttp python3-selenium)
        PY=/usr/bin/python3
    fi
fi
if ((${#need_apt[@]})); then
    say "installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
"$PY" -c "$py_modules" || {
    say "FAIL: websockets, aiohttp or selenium is not importable by $PY"
    exit 1
}
# The `ws` package, in a directory of its own (not global); the Node client
# loads it from there.
node_dir=target/live-node
if [[ ! -f $node_dir/node_modules/ws/package.json ]]; then
    mkdir -p "$node_dir"
    npm install --prefix "$node_dir" --no-save --no-audit --no-fund --loglevel=error ws@8
fi

# ---------------------------------------------------------------- harness
tmp="$(mktemp -d -t httpool-live.XXXXXX)"
server=
cleanup() {
    if [[ -n $server ]]; then
        kill "$server" 2>/dev/null || true
        # Bounded: a server that ignores TERM gets KILL after ~5 s.
        for _ in $(seq 50); do
            kill -0 "$server" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
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

# ---------------------------------------------------------------- server
port=$(free_port)
if [[ -n $LIVE_SERVER_CMD ]]; then
    cmd=${LIVE_SERVER_CMD//\{port\}/$port}
    say "server: $cmd"
    bash -c "exec $cmd" >"$tmp/server.log" 2>&1 &
else
    cargo build --release --example broadcast
    target_dir="$(cargo metadata --format-version 1 --no-deps |
        "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
    say "server: examples/broadcast"
    "$target_dir/release/examples/broadcast" "127.0.0.1:$port" >"$tmp/server.log" 2>&1 &
fi
server=$!
# Waits (at most 10 s) until the port accepts; fails loudly with the log if
# the server exits or never listens.
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    if ! kill -0 "$server" 2>/dev/null; then
        say "FAIL: the server exited before listening on 127.0.0.1:$port; its log:"
        cat "$tmp/server.log" >&2
        exit 1
    fi
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || {
    say "FAIL: the server did not listen on 127.0.0.1:$port within 10 s; its log:"
    cat "$tmp/server.log" >&2
    exit 1
}

# ---------------------------------------------------------------- clients
say "$("$PY" --version), node $(node --version), $(chromium --version 2>/dev/null | head -n 1) on 127.0.0.1:$port"
# All three at once, each bounded; their output is shown in a fixed order.
LIVE_NODE_MODULES="$node_dir" timeout 60 node ci/live_node.mjs "$port" >"$tmp/node.out" 2>&1 &
node_pid=$!
timeout 120 "$PY" ci/live_browser.py "$port" >"$tmp/browser.out" 2>&1 &
browser_pid=$!
timeout 60 "$PY" ci/live_clients.py "$port" >"$tmp/python.out" 2>&1 &
python_pid=$!

# client_checks NAME PID: waits for a client that prints an `ok - ...`
# line per check passed and a `NOT OK - ...` line per check failed; counts
# both, and one failure more if it exits non-zero without saying why (a
# crash, a timeout).
client_checks() {
    local name=$1 pid=$2 rc=0 bad
    wait "$pid" || rc=$?
    cat "$tmp/$name.out"
    passed=$((passed + $(grep -c '^ok - ' "$tmp/$name.out" || true)))
    bad=$(grep -c '^NOT OK - ' "$tmp/$name.out" || true)
    failed=$((failed + bad))
    if ((rc != 0 && bad == 0)); then
        not_ok "$name clients exited with status $rc$( ((rc == 124)) && echo ' (timed out)')"
    fi
}
client_checks python "$python_pid"
client_checks node "$node_pid"
client_checks browser "$browser_pid"

# ---------------------------------------------------------------- summary
if [[ -r /proc/$server/status ]]; then
    echo "server after the clients: $(awk '/^Threads:/ { t = $2 } /^VmRSS:/ { r = $2 " " $3 }
        END { print "threads " t ", RSS " r }' "/proc/$server/status")"
fi
if ! kill -0 "$server" 2>/dev/null; then
    not_ok "the server exited during the run; its log: $(tail -n 5 "$tmp/server.log" | tr '\n' '|')"
fi
if grep -Eqi 'panicked' "$tmp/server.log"; then
    not_ok "the server panicked: $(grep -i -m 3 'panicked' "$tmp/server.log" | tr '\n' '|')"
fi
echo "live: $passed passed, $failed failed"
((failed == 0))

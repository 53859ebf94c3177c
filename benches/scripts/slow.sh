#!/usr/bin/env bash
# Full-size slow-client runs of the "scale and faults" issue, with
# slowhttptest (installed with apt when missing):
#
#   1. slowloris (-H) against examples/testolope: SLOWLORIS_RATE new
#      connections a second (default 150), each sending a header line every
#      SLOWLORIS_INTERVAL seconds (default 2), for SECONDS (default 60). The
#      server gives a head 10 s (head_timeout) from its first bytes, so about
#      RATE x 10 connections are open at once (1,500 by default), and the
#      tool is given enough connections (RATE x SECONDS) to keep opening for
#      the whole run. An interval under the head timeout makes every
#      connection trickle several times (each trickle wakes the server, which
#      reads it and parks the connection again); one over it would only test
#      the deadline.
#   2. slow body (-B, POST) against examples/echo, whose handler reads the
#      whole body: SLOWBODY_RATE new connections a second (default 120; the
#      tool is given RATE x SECONDS of them, so it keeps opening for the whole
#      run), Content-Length 8192, a few bytes every SLOWBODY_INTERVAL seconds
#      (default 5: under the 10 s body_read_timeout, so a server that reads
#      the body on a worker is held until its 60 s body_timeout: the worst
#      case), for SECONDS. A server that cuts each connection off after 10 s
#      has about 1,200 open at once; one that does not, more.
#   3. large slow bodies (-B) against examples/echo: as 2, but with
#      Content-Length LARGEBODY_SIZE (default 500000: far more than a parked
#      connection collects, so the handler reads it on a worker) and
#      LARGEBODY_CONNS connections (default 2000) opened at LARGEBODY_RATE a
#      second (default 200), a few bytes every SLOWBODY_INTERVAL seconds.
#      This took the server down before body reads had a least rate
#      (body_min_rate) and a bound on the workers waiting on them
#      (max_body_waits): 515 threads, every probe unanswered.
#
# During each attack the tool probes the server itself (-p 2: a probe not
# answered within 2 s makes it print "service available: NO"; its CSV, -g
# -o, has 0 in the "Service Available" column for those seconds), and this
# script probes too: curl --max-time 2 every 0.5 s, counting 200s.
#
#   bash benches/scripts/slow.sh
#   SECONDS_PER_ATTACK=20 SLOWBODY_RATE=20 bash benches/scripts/slow.sh
#
# Environment: SECONDS_PER_ATTACK (60), SLOWLORIS_RATE (150),
# SLOWLORIS_INTERVAL (2), SLOWBODY_RATE (120), SLOWBODY_INTERVAL (5),
# LARGEBODY_SIZE (500000), LARGEBODY_CONNS (2000), LARGEBODY_RATE (200),
# PORT_BASE (19201; uses it and the next two), OUT
# (directory for the tool's CSV/HTML and the probe logs; a new one under
# /tmp), CARGO_TARGET_DIR (target), SKIP_BUILD (0).
#
# Exits non-zero when the tool ever reported the service unavailable or any
# probe of ours failed, in either attack. Only 127.0.0.1 is used; every
# process started is stopped on exit; every step has a time limit.
set -euo pipefail
cd "$(dirname "$0")/../.."

L=${SECONDS_PER_ATTACK:-60}
SLOWLORIS_RATE=${SLOWLORIS_RATE:-150}
SLOWLORIS_INTERVAL=${SLOWLORIS_INTERVAL:-2}
SLOWBODY_RATE=${SLOWBODY_RATE:-120}
SLOWBODY_INTERVAL=${SLOWBODY_INTERVAL:-5}
LARGEBODY_SIZE=${LARGEBODY_SIZE:-500000}
LARGEBODY_CONNS=${LARGEBODY_CONNS:-2000}
LARGEBODY_RATE=${LARGEBODY_RATE:-200}
PORT_BASE=${PORT_BASE:-19201}
TARGET=${CARGO_TARGET_DIR:-target}
OUT=${OUT:-$(mktemp -d /tmp/slow.XXXXXX)}
mkdir -p "$OUT"
PIDS=()

cleanup() {
    local p
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do
        wait "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

forget() {
    local kept=() p
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do [[ $p == "$1" ]] || kept+=("$p"); done
    PIDS=("${kept[@]+"${kept[@]}"}")
}

stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget "$1"
}

if ! command -v slowhttptest >/dev/null; then
    echo "installing slowhttptest" >&2
    timeout 300 apt-get update -qq
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq slowhttptest >/dev/null
fi
command -v curl >/dev/null || {
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq curl >/dev/null
}

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "ulimit -n: $(ulimit -n); results in $OUT"

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    CARGO_TARGET_DIR=$TARGET timeout 900 cargo build --release --example testolope --example echo
fi

# start_server BIN PORT: sets SERVER_PID once the port accepts.
start_server() {
    "$TARGET/release/examples/$1" "127.0.0.1:$2" 2>"$OUT/$1-server.log" &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    local i
    for ((i = 0; i < 100; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "$1 did not start on 127.0.0.1:$2" >&2
    cat "$OUT/$1-server.log" >&2
    exit 1
}

# probe_loop NAME PID_TO_WATCH MAX CURL_ARGS...: one curl every 0.5 s while
# PID_TO_WATCH lives, at most MAX times; "code seconds" lines to
# $OUT/NAME-probes.txt, the server's VmRSS (KiB) to $OUT/NAME-rss.txt.
probe_loop() {
    local name=$1 watch=$2 max=$3 i
    shift 3
    : >"$OUT/$name-probes.txt"
    : >"$OUT/$name-rss.txt"
    for ((i = 0; i < max; i++)); do
        kill -0 "$watch" 2>/dev/null || break
        curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 2 "$@" \
            >>"$OUT/$name-probes.txt" 2>/dev/null || true
        awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status" >>"$OUT/$name-rss.txt" 2>/dev/null || true
        sleep 0.5
    done
}

FAILED=()

# attack NAME SERVER PORT PROBE_URL CURL_ARGS -- SLOWHTTPTEST_ARGS...
attack() {
    local name=$1 server=$2 port=$3
    shift 3
    local curl_args=()
    while [[ $1 != -- ]]; do
        curl_args+=("$1")
        shift
    done
    shift
    start_server "$server" "$port"
    local server_pid=$SERVER_PID
    echo
    echo "== $name: slowhttptest $* (server $server pid $server_pid)"
    timeout $((L + 60)) slowhttptest "$@" -l "$L" -p 2 -g -o "$OUT/$name" \
        >"$OUT/$name-tool.txt" 2>&1 &
    local tool=$!
    PIDS+=("$tool")
    sleep 2 # let the attack ramp up
    probe_loop "$name" "$tool" $(((L + 60) * 2)) "${curl_args[@]}" &
    local prober=$!
    PIDS+=("$prober")
    local tool_rc=0
    wait "$tool" || tool_rc=$?
    forget "$tool"
    wait "$prober" 2>/dev/null || true
    forget "$prober"
    local alive=yes
    kill -0 "$server_pid" 2>/dev/null || alive=no
    stop "$server_pid"

    python3 - "$name" "$OUT" "$tool_rc" "$alive" <<'PY' || FAILED+=("$name")
import csv, re, sys
name, out, tool_rc, alive = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
fails = []
try:
    rows = list(csv.DictReader(open(f"{out}/{name}.csv")))
except OSError:
    rows = []
    fails.append("the tool wrote no CSV")
text = re.sub(r"\x1b\[[0-9;]*m", "", open(f"{out}/{name}-tool.txt", errors="replace").read())
verdicts = re.findall(r"service available:\s*(\w+)", text)
exit_status = re.findall(r"Exit status:\s*(.*)", text)
ended = re.findall(r"Test ended on (\d+)\w* second", text)
down = [r["Seconds"] for r in rows if int(r["Service Available"]) == 0]
peak = max((int(r["Connected"]) for r in rows), default=0)
closed = max((int(r["Closed"]) for r in rows), default=0)
probes = [l.split() for l in open(f"{out}/{name}-probes.txt") if l.strip()]
ok = [float(t) for c, t in probes if c == "200"]
bad = [(c, t) for c, t in probes if c != "200"]
rss = [int(x) for x in open(f"{out}/{name}-rss.txt") if x.strip()]
print(f"{name}: tool ended on second {ended[-1] if ended else '?'}: {exit_status[-1].strip() if exit_status else '?'} (exit {tool_rc})")
print(f"{name}: tool verdicts: {verdicts.count('YES')} x YES, {verdicts.count('NO')} x NO; "
      f"CSV: {len(rows)} seconds, service unavailable in {len(down)} "
      f"({', '.join(down[:10])}{' ...' if len(down) > 10 else ''})")
print(f"{name}: connections: peak connected {peak}, closed by the end {closed}")
if ok:
    print(f"{name}: our probes: {len(ok)}/{len(probes)} answered 200, slowest {max(ok) * 1000:.1f} ms")
else:
    print(f"{name}: our probes: 0/{len(probes)} answered 200")
if bad:
    kinds = {}
    for c, _ in bad:
        kinds[c] = kinds.get(c, 0) + 1
    print(f"{name}: failed probes by code (000 = no answer within 2 s): {kinds}")
if rss:
    print(f"{name}: server VmRSS during the attack: min {min(rss) / 1024:.1f} MiB, max {max(rss) / 1024:.1f} MiB")
if alive != "yes":
    fails.append("the server died")
if down or "NO" in verdicts:
    fails.append("the tool found the service unavailable")
if bad:
    fails.append(f"{len(bad)} of our probes failed")
if not probes:
    fails.append("no probes ran")
if tool_rc not in (0,):
    fails.append(f"slowhttptest exited {tool_rc}")
print(f"{name}: " + ("FAIL: " + "; ".join(fails) if fails else "PASS"))
sys.exit(1 if fails else 0)
PY
}

attack slowloris testolope "$PORT_BASE" "http://127.0.0.1:$PORT_BASE/testolope" -- \
    -H -c $((SLOWLORIS_RATE * L)) -r "$SLOWLORIS_RATE" -i "$SLOWLORIS_INTERVAL" -x 24 \
    -u "http://127.0.0.1:$PORT_BASE/testolope"

port=$((PORT_BASE + 1))
attack slowbody echo "$port" -d ping "http://127.0.0.1:$port/" -- \
    -B -c $((SLOWBODY_RATE * L)) -r "$SLOWBODY_RATE" -i "$SLOWBODY_INTERVAL" -s 8192 -x 10 \
    -u "http://127.0.0.1:$port/"

port=$((PORT_BASE + 2))
attack largebody echo "$port" -d ping "http://127.0.0.1:$port/" -- \
    -B -c "$LARGEBODY_CONNS" -r "$LARGEBODY_RATE" -i "$SLOWBODY_INTERVAL" -s "$LARGEBODY_SIZE" -x 10 \
    -u "http://127.0.0.1:$port/"

echo
if ((${#FAILED[@]})); then
    echo "slow: FAIL (${FAILED[*]}); details in $OUT"
    exit 1
fi
echo "slow: PASS; details in $OUT"

#!/usr/bin/env bash
# Soak run of the "scale and faults" issue: for SECONDS, examples/testolope
# (release, default settings) serves at once
#   - wrk keep-alive:     -t1 -c32 /testolope
#   - wrk no-keep-alive:  -t1 -c16 /testolope-nokeepalive
#   - IDLE_CONNS (500) idle keep-alive connections held by ci/idle_probe.py
#     --hold, each re-sent a request every IDLE_REFRESH (3) s so it stays
#     within the server's 5 s idle timeout; every one must still answer at
#     the end;
#   - slow clients: slowhttptest -H (slowloris), SLOW_RATE (20) new
#     connections a second trickling a header line every 2 s; the server
#     cuts each off after its 10 s head timeout, so about 200 are open at
#     once for the whole run.
# Every 10 s the server's VmRSS and open descriptors are sampled.
#
#   bash ci/soak.sh 600
#   bash ci/soak.sh 60 > /tmp/soak.log 2>&1 &
#
# Environment: IDLE_CONNS (500), IDLE_REFRESH (3), SLOW_RATE (20), PORT
# (19301), RSS_GROWTH (1.20: the mean VmRSS of the last third of the run over
# that of the first third may not exceed this ratio...), RSS_SLACK_MIB (1:
# ...unless the growth is under this many MiB, allocator noise on a process
# of a few MiB), OUT (directory for the logs; a new one under /tmp),
# CARGO_TARGET_DIR (target), SKIP_BUILD (0).
#
# Exits non-zero on any non-2xx answer or socket error in either wrk run, a
# held idle connection lost, the server dying, or RSS growth past the bound.
# Socket errors of the slow clients do not count (the server is meant to cut
# them off). Only 127.0.0.1 is used; every process started is stopped on
# exit; every step has a time limit.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-60}
if ! [[ $DURATION =~ ^[0-9]+$ ]] || ((DURATION < 30)); then
    echo "usage: $0 SECONDS   (at least 30)" >&2
    exit 2
fi
IDLE_CONNS=${IDLE_CONNS:-500}
IDLE_REFRESH=${IDLE_REFRESH:-3}
SLOW_RATE=${SLOW_RATE:-20}
PORT=${PORT:-19301}
RSS_GROWTH=${RSS_GROWTH:-1.20}
RSS_SLACK_MIB=${RSS_SLACK_MIB:-1}
TARGET=${CARGO_TARGET_DIR:-target}
OUT=${OUT:-$(mktemp -d /tmp/soak.XXXXXX)}
mkdir -p "$OUT"
BASE=http://127.0.0.1:$PORT
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

install() {
    echo "installing $1" >&2
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq "$1" >/dev/null 2>&1 || {
        timeout 300 apt-get update -qq
        DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq "$1" >/dev/null
    }
}
command -v wrk >/dev/null || install wrk
command -v slowhttptest >/dev/null || install slowhttptest

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "soak: $DURATION s; ulimit -n $(ulimit -n); logs in $OUT"

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    CARGO_TARGET_DIR=$TARGET timeout 900 cargo build --release --example testolope
fi

"$TARGET/release/examples/testolope" "127.0.0.1:$PORT" 2>"$OUT/server.log" &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
for ((i = 0; i < 100; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
    sleep 0.1
done
workers=$(cat /proc/"$SERVER_PID"/task/*/comm | grep -c '^httpool-worker' || true)
echo "server pid $SERVER_PID, $workers workers ($(nproc) cores)"

sample() {
    local rss fds
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status" 2>/dev/null || echo 0)
    fds=$(find "/proc/$SERVER_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    echo "$1 $rss $fds" >>"$OUT/rss.txt"
}
: >"$OUT/rss.txt"
sample 0

limit=$((DURATION + 60))
timeout "$limit" python3 ci/idle_probe.py --port "$PORT" --conns "$IDLE_CONNS" \
    --refresh "$IDLE_REFRESH" --hold "$DURATION" >"$OUT/idle.txt" 2>&1 &
IDLE_PID=$!
PIDS+=("$IDLE_PID")
timeout "$limit" slowhttptest -H -c $((SLOW_RATE * DURATION)) -r "$SLOW_RATE" -i 2 -x 24 \
    -l "$DURATION" -p 3 -g -o "$OUT/slowloris" -u "$BASE/testolope" >"$OUT/slowloris.txt" 2>&1 &
SLOW_PID=$!
PIDS+=("$SLOW_PID")
sleep 1 # the idle connections are open, the slow ones ramping
timeout "$limit" wrk -t1 -c32 -d"${DURATION}s" --latency "$BASE/testolope" >"$OUT/wrk-keepalive.txt" 2>&1 &
WRK_KA=$!
PIDS+=("$WRK_KA")
timeout "$limit" wrk -t1 -c16 -d"${DURATION}s" --latency "$BASE/testolope-nokeepalive" >"$OUT/wrk-nokeepalive.txt" 2>&1 &
WRK_NKA=$!
PIDS+=("$WRK_NKA")

# Samples while all the load runs (not at its very end, when clients stop).
start=$SECONDS
while ((SECONDS - start + 10 < DURATION)); do
    sleep 10
    sample $((SECONDS - start))
    kill -0 "$SERVER_PID" 2>/dev/null || break
done

# Not in $(...): a subshell cannot wait for this shell's children.
wait_rc() {
    RC=0
    wait "$1" || RC=$?
}
wait_rc "$WRK_KA"
wrk_ka_rc=$RC
wait_rc "$WRK_NKA"
wrk_nka_rc=$RC
wait_rc "$IDLE_PID"
idle_rc=$RC
wait_rc "$SLOW_PID"
slow_rc=$RC
alive=yes
kill -0 "$SERVER_PID" 2>/dev/null || alive=no
sample end
ticks=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$SERVER_PID/stat" 2>/dev/null || echo 0)

echo
for f in wrk-keepalive wrk-nokeepalive; do
    echo "--- $f"
    cat "$OUT/$f.txt"
done
echo "--- idle holder"
cat "$OUT/idle.txt"
echo "--- slowloris (last status)"
sed 's/\x1b\[[0-9;]*m//g' "$OUT/slowloris.txt" | grep -E 'service available|Test ended|Exit status' | tail -3
echo

python3 - "$OUT" "$alive" "$wrk_ka_rc" "$wrk_nka_rc" "$idle_rc" "$slow_rc" "$RSS_GROWTH" "$RSS_SLACK_MIB" \
    "$ticks" "$(getconf CLK_TCK)" "$DURATION" "$workers" <<'PY'
import csv, json, re, sys
out, alive = sys.argv[1], sys.argv[2]
wrk_ka_rc, wrk_nka_rc, idle_rc, slow_rc = map(int, sys.argv[3:7])
growth, slack = float(sys.argv[7]), float(sys.argv[8])
ticks, hz, duration, workers = float(sys.argv[9]), float(sys.argv[10]), int(sys.argv[11]), sys.argv[12]
fails = []

def wrk(name, rc):
    t = open(f"{out}/{name}.txt", errors="replace").read()
    m = re.search(r"(\d+) requests in ([\d.]+\w+)", t)
    reqs = int(m.group(1)) if m else 0
    se = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
    errs = dict(zip(("connect", "read", "write", "timeout"), map(int, se.groups()))) if se else {}
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    non2xx = int(non2xx.group(1)) if non2xx else 0
    rps = re.search(r"Requests/sec:\s*([\d.]+)", t)
    p99 = re.search(r"^\s+99%\s+(\S+)", t, re.M)
    print(f"soak: {name}: {reqs} requests ({rps.group(1) if rps else '?'} req/s, p99 {p99.group(1) if p99 else '?'}), "
          f"non-2xx {non2xx}, socket errors {errs or 'none'}")
    if rc != 0 or not m:
        fails.append(f"{name} did not finish (exit {rc})")
    if non2xx:
        fails.append(f"{name}: {non2xx} non-2xx")
    if sum(errs.values()):
        fails.append(f"{name}: socket errors {errs}")
    return reqs

total = wrk("wrk-keepalive", wrk_ka_rc) + wrk("wrk-nokeepalive", wrk_nka_rc)

m = re.search(r"^RESULT (.*)$", open(f"{out}/idle.txt").read(), re.M)
if m:
    r = json.loads(m.group(1))
    print(f"soak: idle: {r['opened_idle']}/{r['conns']} held for {r['held_seconds']} s, "
          f"{r['refreshes_total']} keep-alive re-sends, {r['alive_at_end']} alive at the end, "
          f"lost {r['lost']}, errors {r['errors'] or 'none'}, slowest answer {r['slowest_answer_ms']} ms")
    if idle_rc != 0:
        fails.append(f"idle connections: {r['alive_at_end']}/{r['conns']} alive at the end, errors {r['errors']}")
else:
    fails.append(f"the idle holder printed no result (exit {idle_rc})")

try:
    rows = list(csv.DictReader(open(f"{out}/slowloris.csv")))
    peak = max((int(x["Connected"]) for x in rows), default=0)
    closed = max((int(x["Closed"]) for x in rows), default=0)
    down = sum(1 for x in rows if int(x["Service Available"]) == 0)
    print(f"soak: slowloris: peak {peak} connected, {closed} closed by the server's deadline, "
          f"tool found the service unavailable in {down} of {len(rows)} seconds (informational)")
except (OSError, ValueError, KeyError) as e:
    print(f"soak: slowloris: no CSV ({e}); exit {slow_rc}")

samples = [l.split() for l in open(f"{out}/rss.txt") if l.strip()]
series = [(t, int(k), int(f)) for t, k, f in samples]
print("soak: server VmRSS (MiB) every 10 s: " + " ".join(f"{k / 1024:.1f}" for _, k, _ in series))
print("soak: server open descriptors:       " + " ".join(str(f) for _, _, f in series))
timed = [s for s in series if s[0] not in ("0", "end")]
n = len(timed)
if n >= 3:
    third = max(1, n // 3)
    first = sum(k for _, k, _ in timed[:third]) / third
    last = sum(k for _, k, _ in timed[-third:]) / third
    ratio = last / first if first else 0
    print(f"soak: RSS first third {first / 1024:.2f} MiB, last third {last / 1024:.2f} MiB, ratio {ratio:.3f}")
    if ratio > growth and (last - first) / 1024 > slack:
        fails.append(f"RSS grew {ratio:.2f}x ({first / 1024:.1f} -> {last / 1024:.1f} MiB)")
else:
    print("soak: RSS growth not judged: fewer than 3 samples (run at least 40 s)")
if total:
    print(f"soak: server CPU {ticks / hz:.1f} s over {duration} s, {ticks / hz * 1e6 / total:.2f} µs per wrk request; {workers} workers")
if alive != "yes":
    fails.append("the server died")
print("soak: " + ("FAIL: " + "; ".join(fails) if fails else "PASS"))
sys.exit(1 if fails else 0)
PY

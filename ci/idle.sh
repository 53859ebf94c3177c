#!/usr/bin/env bash
# Full-size idle run of the "scale and faults" issue: 10,000 idle keep-alive
# connections held against examples/testolope (release), then 1,000 sequential
# requests on fresh connections and 1,000 on one keep-alive connection,
# timed; the server's VmRSS before, with the connections held, and after.
#
#   bash ci/idle.sh
#   CONNS=2000 PROBES=200 bash ci/idle.sh
#
# Environment: CONNS (10000), WORKERS (8), PROBES (1000), PORT (19101), RSS_LIMIT_MIB (64),
# P99_LIMIT_MS (50, for both probe modes), REFRESH (3.5: seconds after which a
# held connection is sent another request so it stays within the server's 5 s
# idle timeout; 0 never re-sends), CARGO_TARGET_DIR (target), SKIP_BUILD (0).
#
# The server runs with WORKERS workers (testolope's second argument) and the
# default idle timeout of 5 s. The worker count is read back from the
# server's thread names and printed.
#
# Exits 0 when every connection was held and answered, every probe answered
# 200, p99 <= P99_LIMIT_MS and VmRSS with the connections held <=
# RSS_LIMIT_MIB. Only 127.0.0.1 is used; everything started is stopped on
# exit; the whole run is bounded (timeouts on every step).
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS=${CONNS:-10000}
PROBES=${PROBES:-1000}
PORT=${PORT:-19101}
RSS_LIMIT_MIB=${RSS_LIMIT_MIB:-64}
P99_LIMIT_MS=${P99_LIMIT_MS:-50}
REFRESH=${REFRESH:-3.5}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=$TARGET/release/examples/testolope
LOG=$(mktemp /tmp/idle-server.XXXXXX.log)
SERVER_PID=

cleanup() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# Both the server and the client need a descriptor per connection.
want=$((CONNS + 1024))
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (($(ulimit -n) < want)); then
    echo "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)); $CONNS connections need $want" >&2
    exit 1
fi
echo "ulimit -n: $(ulimit -n)"

if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    CARGO_TARGET_DIR=$TARGET timeout 900 cargo build --release --example testolope
fi

"$BIN" "127.0.0.1:$PORT" "${WORKERS:-8}" 2>"$LOG" &
SERVER_PID=$!
for ((i = 0; i < 100; i++)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
    sleep 0.1
done
workers=$(cat /proc/"$SERVER_PID"/task/*/comm | grep -c '^httpool-worker' || true)
echo "server pid $SERVER_PID, $workers workers ($(nproc) cores), listening on 127.0.0.1:$PORT"
rss_before=$(rss_kib "$SERVER_PID")

set +e
out=$(timeout 300 python3 ci/idle_probe.py --port "$PORT" --conns "$CONNS" \
    --probes "$PROBES" --pid "$SERVER_PID" --refresh "$REFRESH")
probe_rc=$?
set -e
echo "$out"
# The client has closed its connections: let the server see the EOFs.
sleep 2
rss_after=$(rss_kib "$SERVER_PID")
kill -0 "$SERVER_PID" 2>/dev/null || { echo "the server died; its log:" >&2; cat "$LOG" >&2; exit 1; }

result=$(grep '^RESULT ' <<<"$out" | sed 's/^RESULT //' || true)
if [[ -z $result ]]; then
    echo "idle_probe.py printed no result (exit $probe_rc)" >&2
    exit 1
fi
python3 - "$result" "$rss_before" "$rss_after" "$workers" "$RSS_LIMIT_MIB" "$P99_LIMIT_MS" "$probe_rc" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
before, after, workers = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rss_limit, p99_limit, rc = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
mib = lambda k: (k or 0) / 1024
p = r["probe"]
fails = []
if rc != 0 or r["opened_idle"] != r["conns"] or r["alive_after_probe"] != r["conns"]:
    fails.append(f"held {r['opened_idle']} / alive at end {r['alive_after_probe']} of {r['conns']}; errors {r['errors']}")
if "error" in p:
    fails.append(p["error"])
else:
    for mode in ("fresh", "keepalive"):
        if p[mode]["failed"]:
            fails.append(f"{mode}: {p[mode]['failed']} probes failed {p[mode]['errors']}")
        if p[mode]["p99_ms"] > p99_limit:
            fails.append(f"{mode}: p99 {p[mode]['p99_ms']} ms > {p99_limit} ms")
with_idle = max(r["rss_with_idle_kib"] or 0, r["rss_peak_during_probe_kib"] or 0, r["rss_with_idle_at_end_kib"] or 0)
if mib(with_idle) > rss_limit:
    fails.append(f"RSS with idle connections {mib(with_idle):.1f} MiB > {rss_limit} MiB")
print()
print(f"idle: {r['opened_idle']} connections held (opened in {r['open_seconds']} s, "
      f"{r['refreshes_total']} keep-alive re-sends), {r['alive_after_probe']} still open after the probes; "
      f"server workers {workers}")
if "error" not in p:
    for mode in ("fresh", "keepalive"):
        m = p[mode]
        print(f"idle: probe {mode:9} {m['ok']} ok {m['failed']} failed  "
              f"p50 {m['p50_ms']} ms  p99 {m['p99_ms']} ms  max {m['max_ms']} ms")
print(f"idle: server VmRSS before {mib(before):.1f} MiB, with {r['conns']} idle {mib(r['rss_with_idle_kib']):.1f} MiB "
      f"(peak while probing {mib(r['rss_peak_during_probe_kib']):.1f}, VmHWM {mib(r['vm_hwm_kib']):.1f}), "
      f"after close {mib(after):.1f} MiB")
if fails:
    print("idle: FAIL: " + "; ".join(fails))
    sys.exit(1)
print(f"idle: PASS (RSS <= {rss_limit:g} MiB, p99 <= {p99_limit:g} ms)")
PY

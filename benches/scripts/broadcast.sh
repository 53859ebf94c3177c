#!/usr/bin/env bash
# Long-lived connections (issue 50): how a server holds N subscribers that
# each get a broadcast once a second, as server-sent events (GET /events) or
# WebSocket messages (GET /ws, also echoing what each socket sends every
# 10 s), while plain GET / requests keep coming. For each server x mode x N
# the server is started fresh and the Go client of benches/scripts/broadcast/ opens the N
# subscribers (500 at a time, 10 s connect timeout), waits 2 s, then measures
# over the window:
#   - connected: subscribers that got their 200/101 answer;
#   - missed: broadcasts stamped in the window that a subscriber open at its
#     start did not get (and how many subscribers missed any);
#   - delivery p50/p99: arrival minus the server's stamp (unix ms, same clock);
#   - echo p99 (ws): round trip of a text message to its echo;
#   - the server's Threads and VmRSS (/proc/PID/status) at the window's end,
#     and its CPU over the window (% of one core; the client's own beside it);
#   - GET / at 4 a second on a keep-alive client: p50/p99 and answered/asked.
# Before the runs, each server's GET / alone (no streams open) is the baseline.
#
#   bash benches/scripts/broadcast.sh                                   # everything, 30 s windows
#   bash benches/scripts/broadcast.sh --servers "axum tiny_http" --modes ws --n "1000" --window 10
#   SERVERS=axum MODES=sse NS=200 WINDOW=10 bash benches/scripts/broadcast.sh
#   bash benches/scripts/broadcast.sh --pin                             # server on CPU 0, client on CPU 1
#
# Servers: httpool (examples/broadcast, release; skipped with a note while
# the example does not exist), axum (benches/peers/axum_broadcast), tiny_http
# (benches/peers/tinyhttp_broadcast). Environment (or the flags): SERVERS,
# MODES (sse ws), NS (1000 10000), WINDOW (seconds, 30), BASELINE (1: the
# GET / baseline first), ROUNDS (1: the whole set that many times, servers
# interleaved; the table has a row per run), BASE_PORT (19500: each run takes
# the next port), PIN (0; 1: the server under `taskset -c 0`, the client
# under `taskset -c 1`, so neither takes the other's CPU; a server that sizes
# its pool by the CPUs it may use then sees one), CARGO_TARGET_DIR
# (target; the peers' too when set), SKIP_BUILD (0). Raw result lines are kept in a
# file named at the end. Linux only (/proc); 127.0.0.1 only; everything
# started is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

SERVERS=${SERVERS:-httpool axum tiny_http}
MODES=${MODES:-sse ws}
NS=${NS:-1000 10000}
WINDOW=${WINDOW:-30}
BASELINE=${BASELINE:-1}
ROUNDS=${ROUNDS:-1}
PIN=${PIN:-0}
BASE_PORT=${BASE_PORT:-19500}
TARGET=${CARGO_TARGET_DIR:-target}
PEERS=benches/peers
while (($# > 0)); do
    case $1 in
    --servers) SERVERS=$2 ;;
    --modes) MODES=$2 ;;
    --n) NS=$2 ;;
    --window) WINDOW=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --no-baseline) BASELINE=0; shift; continue ;;
    --pin) PIN=1; shift; continue ;;
    *) echo "usage: $0 [--servers LIST] [--modes LIST] [--n LIST] [--window SECONDS] [--rounds K] [--no-baseline] [--pin]" >&2; exit 2 ;;
    esac
    shift 2
done

CLIENT=$(realpath -m "$TARGET/broadcast-client")
PEERS_TARGET=${CARGO_TARGET_DIR:-$PEERS/target}
SERVER_CPU=() CLIENT_CPU=()
if [[ $PIN == 1 ]]; then SERVER_CPU=(taskset -c 0) CLIENT_CPU=(taskset -c 1); fi
RESULTS=$(mktemp /tmp/broadcast-results.XXXXXX)
SERVER_PID=
port=$BASE_PORT

stop_server() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
    fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# The server and the client each hold a descriptor per connection.
max_n=0
for n in $NS; do ((n > max_n)) && max_n=$n; done
want=$((max_n + 4096))
if (($(ulimit -n) < want)); then
    # Raising the hard limit needs root; the soft one follows.
    if [[ $(ulimit -Hn) != unlimited ]] && (($(ulimit -Hn) < want)); then
        ulimit -Hn "$want" 2>/dev/null || true
    fi
    ulimit -n "$want" 2>/dev/null || true
fi
if (($(ulimit -n) < want)); then
    echo "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)); $max_n connections want $want" >&2
    exit 1
fi

# Builds, and the command of each server that built (argv[1]: the address).
declare -A cmd
built=()
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
    (cd benches/scripts/broadcast && go build -o "$CLIENT" .)
fi
for s in $SERVERS; do
    case $s in
    httpool)
        if [[ ! -e examples/broadcast.rs && ! -e examples/broadcast/main.rs ]]; then
            echo "!! examples/broadcast does not exist on this branch: httpool skipped" >&2
            continue
        fi
        [[ ${SKIP_BUILD:-0} == 1 ]] || cargo build --release --example broadcast
        cmd[$s]=$TARGET/release/examples/broadcast
        built+=("$s")
        ;;
    axum | tiny_http)
        pkg=peer-${s//_/}-broadcast
        if [[ ${SKIP_BUILD:-0} != 1 ]] && ! (cd "$PEERS" && cargo build --release -p "$pkg"); then
            echo "!! $s did not build: skipped" >&2
            continue
        fi
        cmd[$s]=$PEERS_TARGET/release/$pkg
        built+=("$s")
        ;;
    *)
        echo "unknown server $s" >&2
        exit 1
        ;;
    esac
done

if ((${#built[@]} == 0)); then
    echo "no server to run" >&2
    exit 1
fi

start_server() { # name
    port=$((port + 1))
    "${SERVER_CPU[@]}" "${cmd[$1]}" "127.0.0.1:$port" 2>"$RESULTS.$1.log" &
    SERVER_PID=$!
    for ((i = 0; i < 100; i++)); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "!! $1 did not start on port $port" >&2
    cat "$RESULTS.$1.log" >&2
    return 1
}

run_client() { # name mode n
    local status=0
    # Bounded: the ramp (at most 10 s a batch of 500), the window, the grace.
    timeout $((WINDOW + 60 + $3 / 25)) "${CLIENT_CPU[@]}" "$CLIENT" -url "http://127.0.0.1:$port" -server "$1" \
        -mode "$2" -n "$3" -window "${WINDOW}s" -pid "$SERVER_PID" | tee -a "$RESULTS" || status=$?
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "!! $1 exited during the run; its stderr:" >&2
        tail -5 "$RESULTS.$1.log" >&2
    fi
    ((status == 0)) || echo "!! client exit status $status ($1 $2 n=$3)" >&2
}

echo "servers: ${built[*]}; rounds: $ROUNDS; PIN=$PIN; modes: $MODES; N: $NS; window ${WINDOW}s; ulimit -n $(ulimit -n); $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((round = 1; round <= ROUNDS; round++)); do
    for s in "${built[@]}"; do
        if [[ $BASELINE == 1 ]]; then
            start_server "$s" && run_client "$s" sse 0
            stop_server
        fi
        for mode in $MODES; do
            for n in $NS; do
                start_server "$s" || continue
                run_client "$s" "$mode" "$n"
                stop_server
                # Let the closed connections' sockets go before the next server.
                sleep 2
            done
        done
    done
done

# The table: one row per run, from the result lines.
echo
awk '
function v(k) { return (k in f && f[k] != "-1.00") ? f[k] : "-" }
function mib(k) { return (k in f) ? sprintf("%.1f", f[k] / 1024) : "-" }
/^result / {
    delete f
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    if (f["n"] == 0) {
        printf "| %s | baseline (no streams) | | | | | %s | %s | %s | | %s / %s ms | %s/%s |\n", \
            v("server"), v("threads"), mib("rss_kib"), v("server_cpu_pct"), v("get_p50_ms"), \
            v("get_p99_ms"), v("get_ok"), v("get_asked")
        next
    }
    echo_p99 = f["mode"] == "ws" ? v("echo_p99_ms") " (" v("echo_ok") "/" v("echo_sent") ")" : ""
    threads = v("threads"); rss = mib("rss_kib"); cpu = v("server_cpu_pct")
    if (f["server_exited"] == "true") {
        threads = "exited (peak " v("threads_peak") ")"; rss = "peak " mib("rss_peak_kib"); cpu = "-"
    }
    printf "| %s | %s %s | %s | %s (%s) | %s / %s | %s | %s | %s | %s | %s | %s / %s ms | %s/%s |\n", \
        v("server"), v("mode"), v("n"), v("connected"), v("missed"), v("missed_subs"), \
        v("deliv_p50_ms"), v("deliv_p99_ms"), echo_p99, threads, rss, cpu, v("client_cpu_pct"), \
        v("get_p50_ms"), v("get_p99_ms"), v("get_ok"), v("get_asked")
}
BEGIN {
    print "| server | run | connected | missed (subscribers) | delivery p50 / p99 ms | echo p99 ms (ok/sent) | threads | RSS MiB | server CPU % | client CPU % | GET / p50 / p99 | GET / answered |"
    print "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
}' "$RESULTS"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); raw results: $RESULTS" >&2

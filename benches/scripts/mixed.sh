#!/usr/bin/env bash
# Mixed workload: how each server serves a trivial route while other
# connections hold handlers that block. For every level N of BLOCKING, and
# every server in turn (interleaved within each round), the script starts the
# server on its own port, warms it up, and measures GET /testolope twice:
#
#   alone  wrk -t2 -c32 -dDURATION --timeout 10s --latency .../testolope
#   mixed  the same, while `wrk -t1 -cN --timeout 10s --latency .../sleep`
#          keeps N connections on a route whose handler blocks 50 ms (a
#          stand-in for a database call); the trivial wrk starts 1 s after
#          the blocking one, which ends 1 s after it.
#
# It records the trivial route's req/s, p50 and p99, the blocking route's
# req/s (ideal: N × 20) and both clients' timeouts and errors; the server's
# thread count and RSS (/proc/PID/status) at their peak during the mixed run,
# right after the load ends, and IDLE_WAIT seconds later (an elastic pool
# should be back at its idle size by then); then stops the server. One table
# per level, medians over rounds.
#
#   bash benches/scripts/mixed.sh                                   # 1 round, 10 s runs
#   ROUNDS=3 DURATION=5 bash benches/scripts/mixed.sh
#   SERVERS="httpool actix" BLOCKING=64 DURATION=2 IDLE_WAIT=0 bash benches/scripts/mixed.sh
#   BEFORE=/path/to/old/testolope SERVERS="httpool before" bash benches/scripts/mixed.sh
#
# Servers: httpool (examples/testolope, default settings), pinned (the same
# with Server::pin_workers(true), the default on Linux), unpinned
# (pin_workers(false)), before (BEFORE, the
# testolope of another build, to compare builds side by side), actix, hyper,
# ehttpd, astra, may_minihttp (benches/peers, its own workspace and target
# dir). Each serves /sleep the way its crate advises for blocking work; see
# the comment at the top of each peer. A peer that does not build is
# reported and skipped; a server that stops answering ends the run.
#
# Environment: ROUNDS (1), DURATION (10, seconds per trivial run), BLOCKING
# ("8 64 256", blocking connections per level), BLOCKING_CLOSE (0; 1: each
# blocking request on a new connection, `Connection: close`, as from a proxy
# that keeps no upstream connection alive), SERVERS (all of the above),
# IDLE_WAIT (12, seconds after the load before the last sample), WARMUP (1,
# seconds), BASE_PORT (19201; one port per server), CARGO_TARGET_DIR
# (target). Only 127.0.0.1 is used. Both clients use a 10 s timeout, not
# wrk's 2 s: wrk leaves answers slower than its timeout out of the latency
# histogram, which would flatter the p99 of a server that falls behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-1}
CONNECTIONS=32
# shellcheck disable=SC2034 # read by benches/scripts/wrk.sh: two clients share the CPUs, no pinning
PIN=0
BENCH_LIB=1 source benches/scripts/wrk.sh

BLOCKING=${BLOCKING:-8 64 256}
BLOCKING_HEADER=()
[[ ${BLOCKING_CLOSE:-0} == 1 ]] && BLOCKING_HEADER=(-H "Connection: close")
SERVERS=${SERVERS:-httpool actix hyper ehttpd astra may_minihttp}
IDLE_WAIT=${IDLE_WAIT:-12}
BASE_PORT=${BASE_PORT:-19201}
TARGET=${CARGO_TARGET_DIR:-target}
PEERS=benches/peers
# Seconds the blocking load runs alone before the trivial run, and after it.
RAMP=1
TIMEOUT=10s
WRK_PIDS=()

die() {
    echo "mixed.sh: $*" >&2
    exit 1
}

# need CMD PACKAGE: installs PACKAGE with apt when CMD is missing.
need() {
    command -v "$1" >/dev/null && return
    echo "installing $2" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
    }
}

# raise_fd_limit: the server and wrk each hold max(BLOCKING) + 32 sockets.
raise_fd_limit() {
    local most=0 n want hard
    for n in $BLOCKING; do ((n > most)) && most=$n; done
    want=$((most + CONNECTIONS + 1024))
    hard=$(ulimit -Hn)
    if [[ $hard != unlimited ]] && ((hard < want)); then
        die "ulimit -Hn is $hard; $want file descriptors are needed for BLOCKING up to $most"
    fi
    if (($(ulimit -Sn) < want)); then
        ulimit -n "$want"
    fi
}

# proc_status PID: "threads rss_kib" from /proc/PID/status.
proc_status() {
    awk '/^Threads:/ { t = $2 } /^VmRSS:/ { r = $2 } END { print t + 0, r + 0 }' "/proc/$1/status"
}

# alive NAME PID: ends the run with the server's log if it has died.
alive() {
    kill -0 "$2" 2>/dev/null && return
    echo "mixed.sh: $1 (pid $2) died; its log:" >&2
    tail -n 40 "/tmp/bench-mixed-$1.log" >&2
    exit 1
}

# wrk_bg OUT SECONDS CONNS THREADS URL: wrk in the background (killed if it
# outlives its run by 30 s), output to OUT; sets WRK_PID.
wrk_bg() {
    local out=$1 secs=$2 conns=$3 threads=$4 url=$5
    shift 5
    timeout $((secs + 30)) wrk -t"$threads" -c"$conns" -d"$secs"s --timeout "$TIMEOUT" --latency "$@" "$url" >"$out" 2>&1 &
    WRK_PID=$!
    WRK_PIDS+=("$WRK_PID")
}

# wrk_wait PID OUT: waits for a wrk started by wrk_bg; fails if it did not
# finish or printed no summary.
wrk_wait() {
    local rc=0
    wait "$1" || rc=$?
    local kept=() p
    for p in "${WRK_PIDS[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done
    WRK_PIDS=("${kept[@]+"${kept[@]}"}")
    ((rc == 0)) && grep -q '^Requests/sec:' "$2" && return
    echo "mixed.sh: wrk failed (exit $rc); its output:" >&2
    cat "$2" >&2
    exit 1
}

# parse_wrk OUT: "rps p50_us p99_us timeouts errors" from wrk --latency
# output (errors: connect, read and write errors and non-2xx answers).
# Latencies are "-" when no request completed.
parse_wrk() {
    awk '
        function us(v) {
            if (v ~ /us$/) return v + 0
            if (v ~ /ms$/) return (v + 0) * 1000
            if (v ~ /m$/) return (v + 0) * 60000000
            if (v ~ /h$/) return (v + 0) * 3600000000
            if (v ~ /s$/) return (v + 0) * 1000000
            return v + 0
        }
        / requests in / { reqs = $1 }
        /^Requests\/sec:/ { rps = $2 }
        /^ +50%/ { p50 = us($2) }
        /^ +99%/ { p99 = us($2) }
        /Socket errors:/ { gsub(/,/, ""); errs += $4 + $6 + $8; tos += $10 }
        /Non-2xx or 3xx responses:/ { errs += $5 }
        END {
            if (reqs > 0) printf "%.0f %.0f %.0f %d %d\n", rps, p50, p99, tos, errs
            else printf "0 - - %d %d\n", tos, errs
        }' "$1"
}

# mixed_run NAME PID BASE N OUT_TRIVIAL OUT_BLOCKING: the blocking load, and
# the trivial run inside it; sets PEAK to "threads rss_kib" at their peak.
mixed_run() {
    local name=$1 pid=$2 base=$3 n=$4 trivial=$5 blocking=$6 bpid tpid t r peak_t=0 peak_r=0
    wrk_bg "$blocking" $((RAMP + DURATION + RAMP)) "$n" 1 "$base/sleep" ${BLOCKING_HEADER[@]+"${BLOCKING_HEADER[@]}"}
    bpid=$WRK_PID
    sleep "$RAMP"
    wrk_bg "$trivial" "$DURATION" "$CONNECTIONS" 2 "$base/testolope"
    tpid=$WRK_PID
    while kill -0 "$tpid" 2>/dev/null; do
        alive "$name" "$pid"
        read -r t r < <(proc_status "$pid")
        ((t > peak_t)) && peak_t=$t
        ((r > peak_r)) && peak_r=$r
        sleep 0.5
    done
    wrk_wait "$tpid" "$trivial"
    wrk_wait "$bpid" "$blocking"
    PEAK="$peak_t $peak_r"
}

# bench NAME PORT ROUND N CMD...: one server at one level; appends a line
# to $RESULTS.
bench() {
    local name=$1 port=$2 round=$3 n=$4
    shift 4
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "port $port is already taken (set BASE_PORT)"
    fi
    start_server "mixed-$name" "$port" "$@"
    local pid=$SERVER_PID base="http://127.0.0.1:$port" out=""
    answers "$base/testolope" Testolope || die "$name: GET /testolope did not answer Testolope"
    answers "$base/sleep" Slept || die "$name: GET /sleep did not answer Slept"
    if ((WARMUP > 0)); then
        out=$(mktemp /tmp/mixed-wrk.XXXXXX)
        wrk_bg "$out" "$WARMUP" "$CONNECTIONS" 2 "$base/testolope"
        wrk_wait "$WRK_PID" "$out"
    fi
    local alone trivial blocking before after idle
    alone=$(mktemp /tmp/mixed-alone.XXXXXX)
    trivial=$(mktemp /tmp/mixed-trivial.XXXXXX)
    blocking=$(mktemp /tmp/mixed-blocking.XXXXXX)
    wrk_bg "$alone" "$DURATION" "$CONNECTIONS" 2 "$base/testolope"
    wrk_wait "$WRK_PID" "$alone"
    alive "$name" "$pid"
    sleep 1
    before=$(proc_status "$pid")
    mixed_run "$name" "$pid" "$base" "$n" "$trivial" "$blocking"
    alive "$name" "$pid"
    after=$(proc_status "$pid")
    sleep "$IDLE_WAIT"
    alive "$name" "$pid"
    idle=$(proc_status "$pid")
    stop_server "$pid"
    echo "$name $n $round $(parse_wrk "$alone") $(parse_wrk "$trivial") $(parse_wrk "$blocking") $PEAK $after $idle $before" >>"$RESULTS"
    rm -f "$alone" "$trivial" "$blocking" ${out:+"$out"}
    tail -n1 "$RESULTS" >&2
    sleep 1
}

# summarize: one table per level, medians over rounds.
summarize() {
    python3 - "$RESULTS" "$ROUNDS" "$DURATION" "$IDLE_WAIT" <<'EOF'
import statistics, sys
path, rounds, duration, idle_wait = sys.argv[1:]
fields = ("name n round a_rps a_p50 a_p99 a_to a_err m_rps m_p50 m_p99 m_to m_err "
          "b_rps b_p50 b_p99 b_to b_err t_peak r_peak t_after r_after t_idle r_idle t_before r_before").split()
rows = [dict(zip(fields, l.split())) for l in open(path) if l.strip()]
levels, order = [], []
for r in rows:
    if int(r["n"]) not in levels:
        levels.append(int(r["n"]))
    if r["name"] not in order:
        order.append(r["name"])

def med(runs, key):
    xs = [float(r[key]) for r in runs if r[key] != "-"]
    return statistics.median(xs) if xs else None

def ms(us):
    if us is None:
        return "-"
    return f"{us / 1000:.1f}" if us < 100_000 else f"{us / 1000:.0f}"

def num(x, fmt="{:.0f}"):
    return "-" if x is None else fmt.format(x)

print(f"\n{rounds} round(s); trivial runs of {duration} s (wrk -t2 -c32); medians over rounds;"
      f" errors summed over rounds (timeouts/other). Threads and RSS: at the peak of the"
      f" mixed run / right after it / {idle_wait} s later; RSS also before the mixed run"
      f" (after the trivial run alone).")
for n in levels:
    print(f"\n### {n} blocking connections (ideal blocking rate {n * 20} req/s)\n")
    print("| server | alone req/s | mixed req/s | mixed/alone | p50 ms | p99 ms | trivial err"
          " | blocking req/s | blocking err | threads peak / after / idle | RSS MiB before / peak / after / idle |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name in order:
        runs = [r for r in rows if r["name"] == name and int(r["n"]) == n]
        if not runs:
            continue
        a, m = med(runs, "a_rps"), med(runs, "m_rps")
        ratio = m / a if a and m is not None else None
        err = lambda p: f"{sum(int(r[p + '_to']) for r in runs)}/{sum(int(r[p + '_err']) for r in runs)}"
        thr = " / ".join(num(med(runs, k)) for k in ("t_peak", "t_after", "t_idle"))
        rss = " / ".join(num(med(runs, k) / 1024, "{:.1f}") for k in ("r_before", "r_peak", "r_after", "r_idle"))
        print(f"| {name} | {num(a)} | {num(m)} | {num(ratio, '{:.2f}')} | {ms(med(runs, 'm_p50'))}"
              f" | {ms(med(runs, 'm_p99'))} | {err('m')} | {num(med(runs, 'b_rps'))} ({n * 20})"
              f" | {err('b')} | {thr} | {rss} |")
EOF
}

main() {
    need_wrk
    need curl curl
    need python3 python3
    raise_fd_limit
    declare -gA CMD PORT
    local port=$BASE_PORT s pkg
    for s in $SERVERS; do
        PORT[$s]=$port
        port=$((port + 1))
    done
    local built=()
    for s in $SERVERS; do
        case $s in
        httpool)
            cargo build --release --example testolope
            CMD[$s]="$TARGET/release/examples/testolope 127.0.0.1:${PORT[$s]}"
            ;;
        pinned | unpinned)
            cargo build --release --example testolope
            CMD[$s]="$TARGET/release/examples/testolope 127.0.0.1:${PORT[$s]} $s"
            ;;
        before)
            [[ -n ${BEFORE:-} ]] || die "server 'before' needs BEFORE=path/to/testolope"
            CMD[$s]="$BEFORE 127.0.0.1:${PORT[$s]}"
            ;;
        actix | hyper | ehttpd | astra | may_minihttp)
            pkg=peer-${s//_/-}
            if ! (cd "$PEERS" && cargo build --release -p "$pkg"); then
                echo "!! $s did not build; skipped" >&2
                continue
            fi
            CMD[$s]="$PEERS/target/release/$pkg 127.0.0.1:${PORT[$s]}"
            ;;
        *) die "unknown server $s (httpool pinned unpinned before actix hyper ehttpd astra may_minihttp)" ;;
        esac
        built+=("$s")
    done
    ((${#built[@]} > 0)) || die "no server built"

    RESULTS=$(mktemp /tmp/mixed-results.XXXXXX)
    trap 'for p in "${WRK_PIDS[@]+"${WRK_PIDS[@]}"}"; do [[ -n $p ]] && kill "$p" 2>/dev/null; done; stop_all' EXIT
    echo "servers: ${built[*]}; BLOCKING=\"$BLOCKING\" ROUNDS=$ROUNDS DURATION=${DURATION}s IDLE_WAIT=${IDLE_WAIT}s" >&2
    show_load
    local round n
    for ((round = 1; round <= ROUNDS; round++)); do
        for n in $BLOCKING; do
            for s in "${built[@]}"; do
                # shellcheck disable=SC2086 # CMD holds a command and its argument
                bench "$s" "${PORT[$s]}" "$round" "$n" ${CMD[$s]}
            done
        done
    done
    summarize
    show_load
    echo "raw results: $RESULTS" >&2
}

main "$@"

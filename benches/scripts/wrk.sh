#!/usr/bin/env bash
# Load-tests examples/testolope with wrk: keep-alive (/testolope) and a
# connection per request (/testolope-nokeepalive), in interleaved rounds, and
# prints the medians of req/s, p99 latency and the server's CPU time per
# request (utime+stime of the whole process: /proc/PID/stat on Linux,
# `ps -o utime=,stime=` in 10 ms steps on macOS).
#
# Runs on Linux and on macOS (bash 3.2 and BSD tools: no bash-4 features and
# no GNU-only options here). wrk comes from apt on Linux, Homebrew on macOS.
#
#   bash benches/scripts/wrk.sh                      # unpinned: wrk -t2 -c64, 3 rounds of 10 s
#   ROUNDS=5 DURATION=5 bash benches/scripts/wrk.sh
#   PIN=1 bash benches/scripts/wrk.sh                # server on CPU 0, wrk -t1 on CPU 1 (Linux)
#
# Environment: ROUNDS (3), DURATION (10, seconds), CONNECTIONS (64), PIN (0),
# MODES ("keepalive nokeepalive"; "pipelined" sends DEPTH (16) requests at
# once on each connection; "pipetail" keeps DEPTH requests in flight on each
# connection with h2load, which times every answer: wrk times one answer per
# batch of a pipeline, and its p99 there reads 0), WARMUP (1, seconds of unrecorded load
# after each server start), PORT (19001), CARGO_TARGET_DIR (target). Only
# 127.0.0.1 is used.
#
# benches/scripts/compare.sh sources this file for its functions (BENCH_LIB=1).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
PIN=${PIN:-0}
MODES=${MODES:-keepalive nokeepalive}
DEPTH=${DEPTH:-16}
WARMUP=${WARMUP:-1}
OS=$(uname -s)
# Units of cpu_ticks: the kernel's clock ticks on Linux, ps's 10 ms on macOS.
if [[ $OS == Darwin ]]; then
    CLK_TCK=100
else
    CLK_TCK=$(getconf CLK_TCK)
fi
SERVER_PIDS=()

# need_tool COMMAND APT_PACKAGE BREW_PACKAGE: installs COMMAND when missing
# (apt on Linux, Homebrew on macOS).
need_tool() {
    local tool=$1 apt=$2 brew=$3
    command -v "$tool" >/dev/null && return
    if [[ $OS == Darwin ]]; then
        command -v brew >/dev/null || {
            echo "$tool is missing: install Homebrew (brew.sh), then: brew install $brew" >&2
            exit 1
        }
        echo "installing $tool with Homebrew ($brew)" >&2
        brew install "$brew" >/dev/null
        return
    fi
    echo "installing $tool ($apt)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$apt" >/dev/null 2>&1 || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$apt" >/dev/null
    }
}

need_wrk() {
    need_tool wrk wrk wrk
}

need_h2load() {
    need_tool h2load nghttp2-client nghttp2
}

need_taskset() {
    [[ $PIN == 1 ]] || return 0
    if [[ $OS == Darwin ]]; then
        echo "PIN=1 is Linux only: macOS cannot pin a process to a CPU (no taskset); run unpinned" >&2
        exit 1
    fi
    command -v taskset >/dev/null || {
        echo "PIN=1 needs taskset (util-linux)" >&2
        exit 1
    }
    (($(getconf _NPROCESSORS_ONLN) >= 2)) || {
        echo "PIN=1 needs 2 CPUs" >&2
        exit 1
    }
}

# show_load: what else is running (benchmarks on a busy machine mislead).
# Linux's uptime says "load average:", macOS's "load averages:".
show_load() {
    echo "load:$(uptime | sed 's/.*load averages*:/ /'); busiest processes:" >&2
    ps -Ao pcpu=,pid=,comm= | sort -rn | head -n 3 | sed 's/^/    /' >&2
}

# start_server NAME PORT CMD...: starts CMD (pinned to CPU 0 when PIN=1) and
# waits until the port accepts; sets SERVER_PID.
start_server() {
    local name=$1 port=$2
    shift 2
    if [[ $PIN == 1 ]]; then
        taskset -c 0 "$@" >"/tmp/bench-$name.log" 2>&1 &
    else
        "$@" >"/tmp/bench-$name.log" 2>&1 &
    fi
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    local i
    for ((i = 0; i < 100; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "$name did not start listening on 127.0.0.1:$port; its log:" >&2
    cat "/tmp/bench-$name.log" >&2
    exit 1
}

# answers URL BODY: the route answers 200 with exactly BODY, within five
# tries of 2 s on new connections. (astra 0.4 may never serve a connection
# whose request is already there when it registers the socket: its reactor
# drops a readiness event that comes before the socket is in its table. On
# a loaded machine several tries in a row can meet that.)
answers() {
    local got
    for _ in 1 2 3 4 5; do
        got=$(curl -fsS --max-time 2 "$1") && [[ $got == "$2" ]] && return
    done
    return 1
}

# stop_server PID: ends a server this script started.
stop_server() {
    local pid=$1
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    local kept=()
    for p in "${SERVER_PIDS[@]}"; do [[ $p == "$pid" ]] || kept+=("$p"); done
    SERVER_PIDS=("${kept[@]+"${kept[@]}"}")
}

stop_all() {
    for p in "${SERVER_PIDS[@]+"${SERVER_PIDS[@]}"}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    SERVER_PIDS=()
}

# cpu_ticks PID: "utime stime" of the whole process in units of CLK_TCK:
# fields 14 and 15 of /proc/PID/stat on Linux; on macOS ps's [[H:]M]M:SS.cc
# (the C locale keeps "." as the decimal point) in hundredths of a second.
cpu_ticks() {
    if [[ $OS == Darwin ]]; then
        LC_ALL=C ps -o utime= -o stime= -p "$1" | awk '
            function cs(t,   n, i, f, v) {
                n = split(t, f, ":")
                for (i = 1; i <= n; i++) v = v * 60 + f[i]
                return int(v * 100 + 0.5)
            }
            { print cs($1), cs($2) }'
        return
    fi
    # Strip "pid (comm) " first: comm may contain spaces.
    local rest
    rest=$(<"/proc/$1/stat")
    rest=${rest##*) }
    awk '{ print $12, $13 }' <<<"$rest"
}

# run_wrk URL SECONDS [WRK_ARGS...]: runs wrk (pinned to CPU 1 with -t1
# when PIN=1) and prints its output.
run_wrk() {
    local url=$1 seconds=$2
    shift 2
    if [[ $PIN == 1 ]]; then
        taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$seconds"s --latency "$@" "$url"
    else
        wrk -t2 -c"$CONNECTIONS" -d"$seconds"s --latency "$@" "$url"
    fi
}

# pipeline_script: a wrk script that sends DEPTH requests for the path of
# the URL at once on each connection and waits for all DEPTH responses
# before the next batch (wrk counts and times each response).
pipeline_script() {
    local script=${TMPDIR:-/tmp}/httpool-pipeline-$DEPTH.lua
    cat >"$script" <<EOF
init = function(args)
  local one = wrk.format("GET")
  local batch = {}
  for i = 1, $DEPTH do batch[i] = one end
  req = table.concat(batch)
end
request = function() return req end
EOF
    echo "$script"
}

# measure NAME MODE URL PID ROUND [WRK_ARGS...]: one recorded wrk run; appends
# "name mode round requests rps p99_us cpu_us_per_req errors sys_share" to
# $RESULTS (CPU = utime+stime; sys_share = stime / (utime+stime)).
measure() {
    local name=$1 mode=$2 url=$3 pid=$4 round=$5 u0 s0 u1 s1 out
    shift 5
    read -r u0 s0 < <(cpu_ticks "$pid")
    out=$(run_wrk "$url" "$DURATION" "$@")
    read -r u1 s1 < <(cpu_ticks "$pid")
    awk -v name="$name" -v mode="$mode" -v round="$round" \
        -v ticks=$((u1 - u0 + s1 - s0)) -v sys=$((s1 - s0)) -v hz="$CLK_TCK" '
        function us(v) {
            if (v ~ /us$/) return v + 0
            if (v ~ /ms$/) return (v + 0) * 1000
            if (v ~ /s$/) return (v + 0) * 1000000
            return v + 0
        }
        / requests in / { reqs = $1 }
        /^Requests\/sec:/ { rps = $2 }
        /^ +99%/ { p99 = us($2) }
        /Socket errors:/ { gsub(/,/, ""); errs += $4 + $6 + $8 + $10 }
        /Non-2xx or 3xx responses:/ { errs += $5 }
        END {
            cpu = reqs > 0 ? ticks * 1000000 / hz / reqs : 0
            share = ticks > 0 ? sys / ticks : 0
            printf "%s %s %s %d %.0f %.0f %.2f %d %.2f\n", name, mode, round, reqs, rps, p99, cpu, errs, share
        }' <<<"$out" >>"$RESULTS"
    tail -n1 "$RESULTS" >&2
}

# measure_h2load NAME MODE URL PID ROUND: one recorded h2load run over
# HTTP/1.1 with DEPTH requests in flight per connection (pipelined: a new
# one sent as each answer comes), every answer's time logged; appends the
# same row as `measure`, its p99 over every answer.
measure_h2load() {
    local name=$1 mode=$2 url=$3 pid=$4 round=$5 u0 s0 u1 s1 log
    log=$(mktemp /tmp/h2load-log.XXXXXX)
    read -r u0 s0 < <(cpu_ticks "$pid")
    if [[ $PIN == 1 ]]; then
        taskset -c 1 h2load --h1 -m"$DEPTH" -c"$CONNECTIONS" -t1 -D"$DURATION" --log-file="$log" "$url" >/dev/null
    else
        h2load --h1 -m"$DEPTH" -c"$CONNECTIONS" -t2 -D"$DURATION" --log-file="$log" "$url" >/dev/null
    fi
    read -r u1 s1 < <(cpu_ticks "$pid")
    python3 - "$log" "$name" "$mode" "$round" $((u1 - u0 + s1 - s0)) $((s1 - s0)) "$CLK_TCK" "$DURATION" \
        >>"$RESULTS" <<'EOF'
import sys
log, name, mode, rnd, ticks, sys_ticks, hz, duration = sys.argv[1:]
times, errors = [], 0
for line in open(log):
    fields = line.split()
    if len(fields) >= 3 and fields[1] == "200":
        times.append(int(fields[2]))
    else:
        errors += 1
times.sort()
reqs = len(times)
p99 = times[min(reqs - 1, reqs * 99 // 100)] if reqs else 0
cpu = int(ticks) * 1e6 / int(hz) / reqs if reqs else 0
share = int(sys_ticks) / int(ticks) if int(ticks) else 0
print(f"{name} {mode} {rnd} {reqs} {reqs / float(duration):.0f} {p99} {cpu:.2f} {errors} {share:.2f}")
EOF
    rm -f "$log"
    tail -n1 "$RESULTS" >&2
}

# bench_server NAME PORT ROUND CMD...: starts the server, warms it up, runs
# each of MODES (keep-alive, no-keep-alive), stops it.
bench_server() {
    local name=$1 port=$2 round=$3
    shift 3
    start_server "$name" "$port" "$@"
    local pid=$SERVER_PID base="http://127.0.0.1:$port"
    if ! answers "$base/testolope" Testolope; then
        echo "$name: GET /testolope did not answer Testolope" >&2
        exit 1
    fi
    if ((WARMUP > 0)); then
        run_wrk "$base/testolope" "$WARMUP" >/dev/null
    fi
    local mode
    for mode in $MODES; do
        case $mode in
        keepalive) measure "$name" keepalive "$base/testolope" "$pid" "$round" ;;
        nokeepalive) measure "$name" nokeepalive "$base/testolope-nokeepalive" "$pid" "$round" ;;
        pipelined) measure "$name" "pipelined$DEPTH" "$base/testolope" "$pid" "$round" -s "$(pipeline_script)" ;;
        pipetail) measure_h2load "$name" "pipetail$DEPTH" "$base/testolope" "$pid" "$round" ;;
        *)
            echo "unknown mode $mode (keepalive, nokeepalive, pipelined, pipetail)" >&2
            exit 1
            ;;
        esac
        sleep 1
    done
    stop_server "$pid"
    sleep 1
}

# summarize [BASELINE]: medians per server and mode from $RESULTS; with
# BASELINE, ratios of req/s and CPU/req to that server's.
summarize() {
    python3 - "$RESULTS" "${1:-}" "$PIN" "$ROUNDS" "$DURATION" "$CONNECTIONS" <<'EOF'
import statistics, sys
path, base, pin, rounds, duration, conns = sys.argv[1:]
rows = [l.split() for l in open(path) if l.strip()]
order, data = [], {}
by_round = {}
for name, mode, rnd, reqs, rps, p99, cpu, errs, sys_share in rows:
    if name not in order:
        order.append(name)
    data.setdefault((name, mode), []).append(
        (float(rps), float(p99), float(cpu), int(errs), float(sys_share)))
    by_round[(name, mode, rnd)] = float(rps)
med = lambda xs: statistics.median(xs)
wrk = "wrk -t1 on CPU 1, server on CPU 0" if pin == "1" else "wrk -t2, unpinned"
print(f"\n{wrk}; -c{conns}; {rounds} rounds x {duration}s; medians"
      " (errors: socket errors + non-2xx, summed over rounds)")
modes = []
for _, mode, *_ in rows:
    if mode not in modes:
        modes.append(mode)
for mode in modes:
    print(f"\n{mode}:")
    head = f"{'server':<14}{'req/s':>10}{'p99 µs':>10}{'CPU µs/req':>12}{'sys %':>7}{'errors':>8}"
    if base:
        head += f"{'req/s ÷ ' + base:>20}{'CPU ÷ ' + base:>18}{'req/s ÷ per round (min-max)':>32}"
    print(head)
    b = data.get((base, mode))
    for name in order:
        runs = data.get((name, mode))
        if not runs:
            continue
        rps, p99, cpu = (med([r[i] for r in runs]) for i in range(3))
        errs = sum(r[3] for r in runs)
        sys_pct = 100 * med([r[4] for r in runs])
        line = f"{name:<14}{rps:>10.0f}{p99:>10.0f}{cpu:>12.2f}{sys_pct:>7.0f}{errs:>8}"
        if base and b:
            brps, bcpu = med([r[0] for r in b]), med([r[2] for r in b])
            line += f"{rps / brps:>20.2f}{(cpu / bcpu if bcpu else 0):>18.2f}"
            # The machine's load drifts between rounds; the servers of one
            # round ran back to back, so their ratio is the steadier figure.
            paired = [v / by_round[(base, mode, r)] for (n, m, r), v in by_round.items()
                      if n == name and m == mode and by_round.get((base, mode, r))]
            if paired:
                line += f"{med(paired):>14.2f} ({min(paired):.2f}-{max(paired):.2f})"
        print(line)
EOF
}

main() {
    cd "$(dirname "$0")/../.."
    need_wrk
    need_taskset
    if [[ " $MODES " == *" pipetail "* ]]; then need_h2load; fi
    local target=${CARGO_TARGET_DIR:-target} port=${PORT:-19001}
    cargo build --release --example testolope
    RESULTS=$(mktemp /tmp/wrk-results.XXXXXX)
    trap 'stop_all' EXIT
    show_load
    local round
    for ((round = 1; round <= ROUNDS; round++)); do
        bench_server httpool "$port" "$round" "$target/release/examples/testolope" "127.0.0.1:$port"
    done
    summarize ""
    show_load
    echo "raw results: $RESULTS" >&2
}

if [[ ${BENCH_LIB:-0} != 1 ]]; then
    main "$@"
fi

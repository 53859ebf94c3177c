#!/usr/bin/env bash
# Counts, per keep-alive request, the system calls and context switches of a
# server and of the wrk loading it (unpinned, wrk -t2 -c64; with PIN=1 the
# server on CPU 0 and wrk -t1 -c32 on CPU 1, as benches/scripts/compare.sh
# pins), with perf's syscall tracepoints: what the kernel is asked to do for
# one request.
#
#   bash benches/scripts/syscalls.sh NAME CMD...      # CMD is started with 127.0.0.1:PORT appended
#   bash benches/scripts/syscalls.sh httpool target/release/examples/testolope
#   bash benches/scripts/syscalls.sh may benches/peers/target/release/peer-may-minihttp
#   PIN=1 bash benches/scripts/syscalls.sh httpool target/release/examples/testolope
#
# Prints for the server and for wrk: req/s (slowed by the tracing), and per
# request epoll waits, reads (read + recvfrom), writes (write + sendto),
# epoll_ctl, futex, context switches and CPU µs. Environment: DURATION (5),
# URLPATH (/testolope), PORT (19650), PIN (0), DEPTH (1; more sends that many
# requests at once, pipelined, as benches/scripts/compare.sh's pipelined mode does).
# Needs perf (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
# Read before wrk.sh, whose own default (16) is for its pipelined mode.
DEPTH=${DEPTH:-1}
BENCH_LIB=1 source benches/scripts/wrk.sh
need_wrk

if (($# < 2)); then
    echo "usage: $0 NAME CMD..." >&2
    exit 2
fi
name=$1
shift
if ! command -v perf >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf
fi
duration=${DURATION:-5}
port=${PORT:-19650}
url=http://127.0.0.1:$port${URLPATH:-/testolope}
script=()
((DEPTH > 1)) && script=(-s "$(pipeline_script)")
load=(wrk -t2 -c64)
if [[ $PIN == 1 ]]; then
    need_taskset
    load=(taskset -c 1 wrk -t1 -c32)
fi
out=$(mktemp -d)
trap 'stop_all; rm -rf "$out"' EXIT

start_server "$name" "$port" "$@" "127.0.0.1:$port"
server=$SERVER_PID
"${load[@]}" -d1s "${script[@]}" "$url" >/dev/null

events=context-switches,task-clock
for call in epoll_wait epoll_pwait read recvfrom write sendto epoll_ctl futex; do
    events+=,syscalls:sys_enter_$call
done
perf stat -x, -e "$events" -p "$server" -o "$out/server" &
stat=$!
perf stat -x, -e "$events" -o "$out/wrk" "${load[@]}" -d"${duration}s" "${script[@]}" "$url" >"$out/load"
kill -INT "$stat"
wait "$stat" || true
requests=$(awk '/ requests in /{print $1}' "$out/load")

for who in server wrk; do
    awk -F, -v r="$requests" -v d="$duration" -v n="$name" -v w="$who" '
        /sys_enter_/ {
            k = $3; sub(/.*sys_enter_/, "", k)
            if (k == "epoll_pwait") k = "epoll_wait"
            if (k == "recvfrom") k = "read"
            if (k == "sendto") k = "write"
            s[k] += $1
        }
        /context-switches/ { c = $1 }
        /task-clock/ { t = $1 }
        END {
            printf "%-12s %-6s req/s %7d  per request: epoll_wait %.3f read %.2f write %.2f epoll_ctl %.2f futex %.3f switches %.3f CPU %.2f µs\n",
                n, w, r / d, s["epoll_wait"] / r, s["read"] / r, s["write"] / r, s["epoll_ctl"] / r, s["futex"] / r, c / r, t * 1000 / r
        }' "$out/$who"
done

#!/usr/bin/env bash
# Where a saturated server's threads wait: `perf sched` records the
# scheduler while wrk loads a server that is already running, then
# benches/scripts/sched_summary.py prints, for each kind of thread (its name without the
# number), how often it was switched out, how often while still runnable
# (preempted), its CPU time, and how long it waited for a CPU once
# runnable (p50/p99/p99.9/max). The load generator is in the table too: a
# wrk thread near 100% CPU means the client, not the server, set the pace.
#
#   bash benches/scripts/sched.sh http://127.0.0.1:9999/testolope              # wrk -t1 -c32, 6 s
#   WRK="-t2 -c32" SECONDS_RECORDED=3 bash benches/scripts/sched.sh URL
#
# Linux only; needs perf (apt: linux-perf) and wrk, and root or
# kernel.perf_event_paranoid <= 1 for scheduler events.
set -euo pipefail
cd "$(dirname "$0")/../.."
url=${1:?usage: benches/scripts/sched.sh URL}
WRK=${WRK:-"-t1 -c32"}
SECONDS_RECORDED=${SECONDS_RECORDED:-3}
command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >/dev/null; }
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
data=$(mktemp /tmp/sched.XXXXXX)
out=$(mktemp /tmp/sched-wrk.XXXXXX)
trap 'rm -f "$data" "$out"' EXIT
# shellcheck disable=SC2086 # WRK holds several arguments
wrk $WRK -d1s "$url" >/dev/null # warm-up
# The record starts once wrk is under way and ends before it does.
# shellcheck disable=SC2086
wrk $WRK -d$((SECONDS_RECORDED + 3))s --latency "$url" >"$out" &
wrk_pid=$!
sleep 1.5
perf sched record -o "$data" -- sleep "$SECONDS_RECORDED" >/dev/null 2>&1
wait "$wrk_pid"
grep -E 'Requests/sec|^ +(50|99)%' "$out"
perf sched timehist --state -i "$data" 2>/dev/null | python3 benches/scripts/sched_summary.py

#!/usr/bin/env bash
# Where the load generator's threads run, beside the tail they report. For
# each round, each server in turn is started, warmed up, and loaded with
# `wrk -t2 -c32` on /testolope for DURATION seconds; meanwhile the CPU each
# wrk thread last ran on is read every 150 ms (/proc/PID/task/TID/stat,
# field 39). Prints per run the p99, req/s, and in how many samples both
# wrk threads were on one CPU: there each waits out the other's time slice,
# and the p99 of every server is a slice or more (BENCHMARKS.md).
#
#   ROUNDS=10 bash benches/scripts/placement.sh                      # httpool unpinned may_minihttp
#   SERVERS="httpool hyper" ROUNDS=5 bash benches/scripts/placement.sh
#
# Servers: httpool (examples/testolope, default settings), pinned (the same
# with Server::pin_workers(true), the default on Linux), unpinned
# (pin_workers(false)), and the peers of benches/peers (may_minihttp, hyper,
# actix, ehttpd, astra). Linux only (/proc); needs wrk.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-6}
DURATION=${DURATION:-4}
SERVERS=${SERVERS:-httpool unpinned may_minihttp}
PORT=${BASE_PORT:-19401}
TARGET=${CARGO_TARGET_DIR:-target}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release --example testolope -q
server_cmd() {
    case $1 in
    httpool) echo "$TARGET/release/examples/testolope" ;;
    pinned | unpinned) echo "$TARGET/release/examples/testolope {} $1" ;;
    *)
        local pkg=peer-${1//_/-}
        (cd benches/peers && cargo build --release -q -p "$pkg") >&2
        echo "benches/peers/target/release/$pkg"
        ;;
    esac
}
declare -A CMD
for s in $SERVERS; do
    CMD[$s]=$(server_cmd "$s")
done
samples=$((DURATION * 1000 / 150 - 4))
for round in $(seq 1 "$ROUNDS"); do
    for s in $SERVERS; do
        PORT=$((PORT + 1))
        cmd=${CMD[$s]}
        if [[ $cmd == *"{}"* ]]; then cmd=${cmd/\{\}/127.0.0.1:$PORT}; else cmd="$cmd 127.0.0.1:$PORT"; fi
        $cmd >/dev/null 2>&1 &
        server=$!
        url=http://127.0.0.1:$PORT/testolope
        for _ in $(seq 1 100); do
            curl -s -o /dev/null "$url" && break
            sleep 0.05
        done
        wrk -t2 -c32 -d1s "$url" >/dev/null
        out=$(mktemp)
        wrk -t2 -c32 -d"${DURATION}s" --latency "$url" >"$out" &
        client=$!
        sleep 0.5
        together=0 seen=0
        for _ in $(seq 1 "$samples"); do
            # On loaded CPUs the samples may outlast the client.
            kill -0 "$client" 2>/dev/null || break
            # The two threads that run connections: the process's last two.
            cpus=$(for t in $(ls "/proc/$client/task" 2>/dev/null | sort -n | tail -2); do
                awk '{print $39}' "/proc/$client/task/$t/stat" 2>/dev/null || true
            done | sort -u | wc -l)
            seen=$((seen + 1))
            ((cpus == 1)) && together=$((together + 1))
            sleep 0.15
        done
        wait "$client"
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
        p99=$(awk '/ 99%/{print $2}' "$out")
        rps=$(awk '/Requests\/sec/{print $2}' "$out")
        rm -f "$out"
        printf '%-14s round %2d  p99 %9s  req/s %10s  wrk threads on one CPU in %d of %d samples\n' \
            "$s" "$round" "$p99" "$rps" "$together" "$seen"
    done
done

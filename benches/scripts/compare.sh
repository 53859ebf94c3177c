#!/usr/bin/env bash
# Measures httpool's testolope against peer servers and a C floor in the same
# interleaved run: for each round, each server in turn is started on its own
# port, warmed up, loaded with wrk keep-alive (/testolope) then
# no-keep-alive (/testolope-nokeepalive), and stopped. Prints the medians of
# req/s, p99 latency and server CPU µs per request, with ratios to httpool.
#
#   bash benches/scripts/compare.sh                        # unpinned, wrk -t2 -c64
#   PIN=1 ROUNDS=3 DURATION=5 bash benches/scripts/compare.sh   # server CPU 0, wrk -t1 CPU 1
#   SERVERS="httpool hyper c" bash benches/scripts/compare.sh   # a subset
#   MODES=keepalive SERVERS="httpool may_minihttp actix" ROUNDS=20 DURATION=5 bash benches/scripts/compare.sh
#   MODES=pipelined DEPTH=16 SERVERS="httpool may_minihttp" bash benches/scripts/compare.sh   # 16 requests at once
#   MODES=pipetail DEPTH=16 SERVERS="httpool may_minihttp" bash benches/scripts/compare.sh    # 16 in flight, h2load: p99 of every answer
#   BEFORE=/path/to/old/testolope SERVERS="httpool before actix" bash benches/scripts/compare.sh
#
# Servers: httpool (examples/testolope, default settings: on Linux one
# worker per CPU, pinned), pinned (the same, asked for: Server::pin_workers),
# unpinned (pin_workers(false): twice the cores' workers, free), c (benches/c_responder.c, cc -O2:
# epoll on Linux, kqueue on macOS), ehttpd, may_minihttp, hyper, actix, astra
# (benches/peers, its own workspace and target dir). A peer that does not
# build is reported and skipped.
# astra holds a pool thread per connection, 15 per CPU by default: past that
# many connections the rest wait unserved (wrk counts them as timeouts).
# Environment as benches/scripts/wrk.sh (ROUNDS, DURATION, CONNECTIONS, PIN, MODES, WARMUP), plus
# SERVERS and BASE_PORT (19001); BEFORE names another testolope binary (an
# earlier build) run as the server "before", to compare builds side by side. Only 127.0.0.1 is used. Like benches/scripts/wrk.sh, it
# runs on Linux and macOS (bash 3.2: the servers' ports and commands are
# parallel arrays, not associative ones).
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_LIB=1 source benches/scripts/wrk.sh

SERVERS=${SERVERS:-httpool c ehttpd may_minihttp hyper actix astra}
BASE_PORT=${BASE_PORT:-19001}
TARGET=${CARGO_TARGET_DIR:-target}
PEERS=benches/peers

need_wrk
need_taskset
if [[ " $MODES " == *" pipetail "* ]]; then need_h2load; fi

# Each server gets the next port in SERVERS order, built or not.
built=() ports=() cmds=()
port=$BASE_PORT
for s in $SERVERS; do
    server_port=$port
    port=$((port + 1))
    case $s in
    httpool)
        cargo build --release --example testolope
        cmd="$TARGET/release/examples/testolope 127.0.0.1:$server_port"
        ;;
    pinned | unpinned)
        cargo build --release --example testolope
        cmd="$TARGET/release/examples/testolope 127.0.0.1:$server_port $s"
        ;;
    before)
        [[ -n ${BEFORE:-} ]] || {
            echo "server 'before' needs BEFORE=path/to/testolope" >&2
            exit 1
        }
        cmd="$BEFORE 127.0.0.1:$server_port"
        ;;
    c)
        mkdir -p "$TARGET/release"
        cc -O2 -o "$TARGET/release/c_responder" benches/c_responder.c
        cmd="$TARGET/release/c_responder $server_port"
        ;;
    ehttpd | may_minihttp | hyper | actix | astra)
        pkg=peer-${s//_/-}
        if ! (cd "$PEERS" && cargo build --release -p "$pkg"); then
            echo "!! $s did not build; skipped" >&2
            continue
        fi
        cmd="$PEERS/target/release/$pkg 127.0.0.1:$server_port"
        ;;
    *)
        echo "unknown server $s" >&2
        exit 1
        ;;
    esac
    built+=("$s")
    ports+=("$server_port")
    cmds+=("$cmd")
done
if ((${#built[@]} == 0)); then
    echo "no server built" >&2
    exit 1
fi

RESULTS=$(mktemp /tmp/compare-results.XXXXXX)
trap 'stop_all' EXIT
echo "servers: ${built[*]}; MODES=$MODES ROUNDS=$ROUNDS DURATION=${DURATION}s PIN=$PIN" >&2
show_load
for ((round = 1; round <= ROUNDS; round++)); do
    for ((i = 0; i < ${#built[@]}; i++)); do
        # shellcheck disable=SC2086 # cmds holds a command and its argument
        bench_server "${built[$i]}" "${ports[$i]}" "$round" ${cmds[$i]}
    done
done
summarize httpool
show_load
echo "raw results: $RESULTS" >&2

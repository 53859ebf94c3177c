#!/usr/bin/env bash
# Latency at constant rates, without coordinated omission: for each round,
# each server in turn (interleaved) is started, warmed up, loaded to
# saturation with `wrk -t2 -c64 -dDURATION --latency` (its peak req/s and
# p99), then held at constant rates with vegeta for RATE_DURATION seconds
# each. vegeta sends on schedule whatever the answers do, and each latency
# counts from the request's intended send time, so a server that stalls pays
# for every request it delays, not only the first. Prints, per server and
# rate, the medians over rounds of the achieved rate, p50, p99, p99.9 and
# the share answered 200.
#
#   bash benches/scripts/latency.sh
#   ROUNDS=1 DURATION=3 RATE_DURATION=5 SERVERS="httpool hyper" bash benches/scripts/latency.sh
#   PERCENTS="25 50 90" bash benches/scripts/latency.sh     # shares of each server's own peak
#
# The rates are RATES (req/s, the same for every server) unless PERCENTS is
# set: then each rate is that share of the server's own peak in the round,
# capped at RATE_CAP. On this project's 2-CPU machine vegeta shares the CPUs
# with the server and cannot send much past 30,000 req/s, far below the
# plaintext peaks (150,000-180,000), so shares of the peak collapse to the
# cap; the default is absolute rates. The achieved rate is printed beside the
# latencies: one far below the rate asked for measures the load generator,
# not the server.
#
# Servers: httpool (examples/testolope), hyper, actix, may_minihttp, ehttpd,
# astra (benches/peers, as benches/scripts/compare.sh). Needs wrk (apt) and vegeta
# (`go install github.com/tsenart/vegeta/v12@v12.13.0`). Environment:
# ROUNDS (3), DURATION (5), RATE_DURATION (10), RATES ("5000 15000 30000"),
# PERCENTS (unset), RATE_CAP (30000), SERVERS ("httpool hyper actix
# may_minihttp"), BASE_PORT (19501), WARMUP (1). Only 127.0.0.1 is used.
# Linux.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck disable=SC2034 # read by benches/scripts/wrk.sh's functions
CONNECTIONS=64
# shellcheck disable=SC2034 # read by benches/scripts/wrk.sh: the load generators share the CPUs
PIN=0
BENCH_LIB=1 source benches/scripts/wrk.sh

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
RATE_DURATION=${RATE_DURATION:-10}
RATES=${RATES:-5000 15000 30000}
PERCENTS=${PERCENTS:-}
RATE_CAP=${RATE_CAP:-30000}
# The levels: "pNN" for NN% of the peak, or a rate.
if [[ -n $PERCENTS ]]; then
    LEVELS=$(for p in $PERCENTS; do printf 'p%s ' "$p"; done)
else
    LEVELS=$RATES
fi
SERVERS=${SERVERS:-httpool hyper actix may_minihttp}
BASE_PORT=${BASE_PORT:-19501}
TARGET=${CARGO_TARGET_DIR:-target}
PEERS=benches/peers
VEGETA=${VEGETA:-$(command -v vegeta || echo "$HOME/go/bin/vegeta")}

need_wrk
[[ -x $VEGETA ]] || {
    echo "vegeta is missing: go install github.com/tsenart/vegeta/v12@v12.13.0" >&2
    exit 1
}

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

tmp=$(mktemp -d -t httpool-latency.XXXXXX)
trap 'stop_all; rm -rf "$tmp"' EXIT
results="$tmp/results"
: >"$results"

# rate_run URL RATE: one constant-rate run; prints "achieved p50 p99 p999 ok"
# (ms; latencies from each request's intended send time).
rate_run() {
    echo "GET $1" >"$tmp/targets"
    "$VEGETA" attack -targets "$tmp/targets" -rate "$2" -duration "${RATE_DURATION}s" -timeout 10s \
        -max-workers 512 >"$tmp/vegeta.bin"
    "$VEGETA" encode --to csv "$tmp/vegeta.bin" >"$tmp/vegeta.csv"
    python3 - "$tmp/vegeta.csv" "$RATE_DURATION" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
lat = sorted(int(r[2]) / 1e6 for r in rows)
ok = sum(1 for r in rows if r[1] == "200") / max(len(rows), 1)
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0
print(f"{len(rows) / float(sys.argv[2]):.0f} {q(0.5):.2f} {q(0.99):.2f} {q(0.999):.2f} {ok:.4f}")
PY
}

echo "servers: ${built[*]}; ROUNDS=$ROUNDS DURATION=${DURATION}s RATE_DURATION=${RATE_DURATION}s LEVELS=$LEVELS RATE_CAP=$RATE_CAP" >&2
show_load
for ((round = 1; round <= ROUNDS; round++)); do
    for ((i = 0; i < ${#built[@]}; i++)); do
        name=${built[$i]} server_port=${ports[$i]}
        url="http://127.0.0.1:$server_port/testolope"
        # shellcheck disable=SC2086 # cmds holds a command and its argument
        start_server "$name" "$server_port" ${cmds[$i]}
        answers "$url" Testolope || {
            echo "$name does not answer $url" >&2
            exit 1
        }
        wrk -t2 -c64 -d"${WARMUP}s" "$url" >/dev/null
        out=$(wrk -t2 -c64 -d"${DURATION}s" --latency "$url")
        peak=$(awk '/^Requests\/sec/ { printf "%.0f", $2 }' <<<"$out")
        p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
        echo "round $round $name: peak $peak req/s, p99 $p99" >&2
        echo "$name peak $round $peak $p99" >>"$results"
        for level in $LEVELS; do
            if [[ $level == p* ]]; then
                rate=$((peak * ${level#p} / 100))
                ((rate > RATE_CAP)) && rate=$RATE_CAP
            else
                rate=$level
            fi
            line=$(rate_run "$url" "$rate")
            echo "round $round $name: $level = $rate req/s: achieved p50 p99 p99.9 ok = $line" >&2
            echo "$name $level $round $rate $line" >>"$results"
        done
        stop_server "$SERVER_PID"
    done
done

python3 - "$results" "$SERVERS" "$LEVELS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
servers, percents = sys.argv[2].split(), sys.argv[3].split()
med = lambda xs: statistics.median(xs) if xs else float("nan")
name = lambda p: f"{p[1:]}% of peak" if p.startswith("p") else f"{int(p):,} req/s"
print("| server | saturation req/s (p99 per round) | " + " | ".join(f"{name(p)}: achieved; p50 / p99 / p99.9 ms; ok" for p in percents) + " |")
print("|---|---|" + "---|" * len(percents))
for s in servers:
    peaks = [r for r in rows if r[0] == s and r[1] == "peak"]
    if not peaks:
        continue
    cells = [f"{med([float(r[3]) for r in peaks]):,.0f} ({', '.join(r[4] for r in peaks)})"]
    for p in percents:
        rs = [r for r in rows if r[0] == s and r[1] == p]
        f = lambda k: med([float(r[k]) for r in rs])
        cells.append(f"{f(4):,.0f}; {f(5):.2f} / {f(6):.2f} / {f(7):.2f}; {f(8):.4f}")
    print(f"| {s} | " + " | ".join(cells) + " |")
PY
show_load

#!/usr/bin/env bash
# The notes service (examples/notes: SQLite through an r2d2 pool of 16, the
# server's default settings, handlers that query it directly) against the same
# read routes on axum with spawn_blocking (benches/peers/axum_notes), side by
# side on one database of NOTES rows:
#
#   one    GET /api/notes/{id}     one row by primary key (ids spread by a wrk script)
#   search GET /api/notes?q=WORD   a LIKE '%WORD%' scan, newest 100 matches
#
# For each round, each workload, each server in turn (interleaved): saturation
# with `wrk -t2 -c64 -dDURATION --latency` (req/s, p50, p99), then a constant
# rate with vegeta (no coordinated omission: latencies from the intended send
# time) at 25% and 50% of the lower of the two servers' peaks in that round
# (p50, p99, p99.9, success); the server's RSS at the end of its runs and,
# at saturation, its most threads (sampled every 100 ms).
# Medians over rounds.
#
#   bash benches/scripts/notes.sh
#   ROUNDS=1 DURATION=5 bash benches/scripts/notes.sh
#
# Needs wrk (apt) and vegeta (`go install github.com/tsenart/vegeta/v12@v12.13.0`;
# the constant-rate runs are skipped without it), python3 (to seed the
# database). Only 127.0.0.1 is used.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
RATE_DURATION=${RATE_DURATION:-10}
NOTES=${NOTES:-20000}
PORT_A=${PORT_A:-19301}
PORT_B=${PORT_B:-19302}
PORT_C=${PORT_C:-19303}
# BOUNDED=1 adds, at saturation, the service with max_workers set to its
# database pool's size ("bounded"); "httpool" runs with the defaults.
BOUNDED=${BOUNDED:-0}
# OLD=/path/to/httpool-notes adds, at saturation, the service of another
# build ("old"), started as `OLD ADDR DB $OLD_ARGS`, to compare builds in the
# same rounds.
OLD=${OLD:-}
OLD_ARGS=${OLD_ARGS:-}
VEGETA=${VEGETA:-$(command -v vegeta || echo "$HOME/go/bin/vegeta")}

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
cargo build --release --manifest-path examples/notes/Cargo.toml --target-dir "$target_dir"
(cd benches/peers && nice cargo build --release -p peer-axum-notes)
httpool_bin="$target_dir/release/httpool-notes"
axum_bin="benches/peers/target/release/peer-axum-notes"

tmp=$(mktemp -d -t httpool-notes.XXXXXX)
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# One database, copied for each server run: NOTES rows of a few words.
python3 - "$tmp/seed.db" "$NOTES" <<'PY'
import random, sqlite3, sys
random.seed(7)
words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango".split()
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, created INTEGER NOT NULL DEFAULT (unixepoch()))")
db.executemany("INSERT INTO notes (text) VALUES (?)",
               ((" ".join(random.choice(words) for _ in range(8)) + f" #{i}",) for i in range(int(sys.argv[2]))))
db.commit()
PY
cat >"$tmp/ids.lua" <<EOF
local n = $NOTES
request = function()
  return wrk.format("GET", "/api/notes/" .. math.random(1, n))
end
EOF

start() { # start NAME PORT
    cp "$tmp/seed.db" "$tmp/$1.db"
    case $1 in
        httpool) "$httpool_bin" "127.0.0.1:$2" "$tmp/$1.db" 2>/dev/null & ;;
        bounded) "$httpool_bin" "127.0.0.1:$2" "$tmp/$1.db" bounded 2>/dev/null & ;;
        # shellcheck disable=SC2086 # OLD_ARGS holds several arguments
        old) "$OLD" "127.0.0.1:$2" "$tmp/$1.db" $OLD_ARGS 2>/dev/null & ;;
        axum) "$axum_bin" "127.0.0.1:$2" "$tmp/$1.db" 2>/dev/null & ;;
    esac
    pid=$!
    for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$2/api/notes/1" && return 0
        sleep 0.1
    done
    echo "notes: $1 did not start" >&2
    exit 1
}
stop() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
}
# wrk_run PORT WORKLOAD -> "req/s p50_ms p99_ms errors"
wrk_run() {
    local args=(-t2 -c64 -d"${DURATION}s" --timeout 10s --latency)
    case $2 in
        one) args+=(-s "$tmp/ids.lua" "http://127.0.0.1:$1/") ;;
        search) args+=("http://127.0.0.1:$1/api/notes?q=kilo%20lima") ;;
    esac
    wrk "${args[@]}" >"$tmp/wrk.out" 2>&1
    python3 - "$tmp/wrk.out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def ms(v, u): return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
lat = {m.group(1): ms(m.group(2), m.group(3)) for m in re.finditer(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)", t, re.M)}
err = sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", t)) + int((re.search(r"Non-2xx or 3xx responses: (\d+)", t) or [0, 0])[1])
print(f"{rps:.0f} {lat.get('50', 0):.2f} {lat.get('99', 0):.2f} {err}")
PY
}
# rate_run PORT WORKLOAD RATE -> "p50_ms p99_ms p999_ms success"
rate_run() {
    # Go's client asks for gzip unless told otherwise, and the notes service
    # compresses while the axum peer does not: each target asks for the
    # body as it is, as wrk does.
    case $2 in
        one) python3 -c "import random; random.seed(3); print('\n'.join(f'GET http://127.0.0.1:$1/api/notes/{random.randint(1, $NOTES)}\nAccept-Encoding: identity\n' for _ in range(5000)))" >"$tmp/targets" ;;
        search) printf 'GET http://127.0.0.1:%s/api/notes?q=kilo%%20lima\nAccept-Encoding: identity\n' "$1" >"$tmp/targets" ;;
    esac
    "$VEGETA" attack -targets "$tmp/targets" -rate "$3" -duration "${RATE_DURATION}s" -timeout 10s -max-workers 512 \
        >"$tmp/vegeta.bin"
    "$VEGETA" encode --to csv "$tmp/vegeta.bin" >"$tmp/vegeta.csv"
    # Latencies from each request's intended send time; failures count.
    python3 - "$tmp/vegeta.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
lat = sorted(int(r[2]) / 1e6 for r in rows)
ok = sum(1 for r in rows if r[1] == "200") / max(len(rows), 1)
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0
print(f"{q(0.5):.2f} {q(0.99):.2f} {q(0.999):.2f} {ok:.4f}")
PY
}
rss() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"; }
# The server's threads every 100 ms into $tmp/threads, until killed: the peak
# is the last line of a sort.
threads_watch() {
    : >"$tmp/threads"
    while true; do
        awk '/^Threads:/ { print $2 }' "/proc/$pid/status" >>"$tmp/threads" 2>/dev/null || true
        sleep 0.1
    done
}

results="$tmp/results"
: >"$results"
for round in $(seq "$ROUNDS"); do
    for workload in one search; do
        declare -A peak=()
        saturating=(httpool axum)
        ((BOUNDED)) && saturating+=(bounded)
        [[ -n $OLD ]] && saturating+=(old)
        for server in "${saturating[@]}"; do
            case $server in httpool) port=$PORT_A ;; axum) port=$PORT_B ;; *) port=$PORT_C ;; esac
            start "$server" "$port"
            wrk -t2 -c64 -d1s "http://127.0.0.1:$port/api/notes/1" >/dev/null 2>&1 # warm-up
            threads_watch &
            watch=$!
            read -r rps p50 p99 err < <(wrk_run "$port" "$workload")
            kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null || true
            peak[$server]=$rps
            echo "$round $workload $server wrk $rps $p50 $p99 $err $(rss) $(sort -n "$tmp/threads" | tail -1)" | tee -a "$results"
            stop
        done
        low=$(( ${peak[httpool]%.*} < ${peak[axum]%.*} ? ${peak[httpool]%.*} : ${peak[axum]%.*} ))
        if [[ -x $VEGETA ]]; then
            for share in 25 50; do
                rate=$((low * share / 100))
                for server in httpool axum; do
                    port=$([[ $server == httpool ]] && echo "$PORT_A" || echo "$PORT_B")
                    start "$server" "$port"
                    read -r q50 q99 q999 ok < <(rate_run "$port" "$workload" "$rate")
                    echo "$round $workload $server rate$share@$rate $q50 $q99 $q999 $ok $(rss)" | tee -a "$results"
                    stop
                done
            done
        fi
    done
done

python3 - "$results" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    kind = f[3].split("@")[0]
    rows[(f[1], kind, f[2])].append(f)
print(f"\n{'workload':8} {'run':7} {'server':9} {'req/s|rate':>10} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9} {'errors|ok':>9} {'RSS MiB':>8} {'threads':>7}")
for (workload, kind, server), fs in sorted(rows.items()):
    med = lambda i: statistics.median(float(f[i].split("@")[-1]) for f in fs)
    if kind == "wrk":
        print(f"{workload:8} {kind:7} {server:9} {med(4):>10.0f} {med(5):>8.2f} {med(6):>8.2f} {'':>9} {med(7):>9.0f} {med(8):>8.1f} {med(9):>7.0f}")
    else:
        print(f"{workload:8} {kind:7} {server:9} {med(3):>10.0f} {med(4):>8.2f} {med(5):>8.2f} {med(6):>9.2f} {med(7):>9.4f} {med(8):>8.1f}")
PY

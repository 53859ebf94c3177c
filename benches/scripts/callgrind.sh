#!/usr/bin/env bash
# Instructions per keep-alive request, counted by callgrind (repeatable on
# a noisy machine): testolope runs under valgrind while one client sends N
# and then 2N sequential keep-alive requests; the difference of the two
# totals divided by N is the cost of one request, start-up excluded.
# With DEPTH=16 the client sends 16 requests at once and reads the 16
# answers (pipelined), N times; the cost is then per request of a batch.
# EXAMPLE (default testolope) names another example that answers
# `GET /testolope`, run as `EXAMPLE ADDR 4 EXAMPLE_ARGS`.
#   bash benches/scripts/callgrind.sh [N]        # default N=2000
#   DEPTH=16 bash benches/scripts/callgrind.sh 200
#   EXAMPLE=metrics EXAMPLE_ARGS=metered bash benches/scripts/callgrind.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
DEPTH=${DEPTH:-1}
EXAMPLE=${EXAMPLE:-testolope}
EXAMPLE_ARGS=${EXAMPLE_ARGS:-}
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
cargo build --release --example "$EXAMPLE" -q
total() {
    local count=$1 port=$2 out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" ./target/release/examples/"$EXAMPLE" "127.0.0.1:$port" 4 $EXAMPLE_ARGS \
        >/dev/null 2>&1 &
    local pid=$!
    python3 - "$port" "$count" "$DEPTH" <<'PY'
import socket, sys, time
port, n, depth = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for _ in range(600):
    try:
        s = socket.create_connection(("127.0.0.1", port)); break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("the server under valgrind never listened")
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
req = b"GET /testolope HTTP/1.1\r\nHost: bench\r\n\r\n" * depth
for _ in range(n):
    s.sendall(req)
    got = b""
    while got.count(b"Testolope") < depth:
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("the server closed the connection (another one on its port?)")
        got += chunk
s.close()
PY
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}'
    rm -f "$out"
}
# Ports of their own (benches/scripts/notes.sh takes 19301-19303).
a=$(total "$N" 19351)
b=$(total $((2 * N)) 19352)
if [[ -z $a || -z $b ]] || ((b <= a)); then
    echo "callgrind: no count (did the server die under valgrind?): $a, $b" >&2
    exit 1
fi
echo "instructions: $N requests $a, $((2 * N)) requests $b"
if ((DEPTH > 1)); then
    echo "per request, $DEPTH pipelined at a time: $(( (b - a) / (N * DEPTH) ))"
else
    echo "per keep-alive request: $(( (b - a) / N ))"
fi

#!/usr/bin/env bash
# Descriptor exhaustion, full size: testolope under a low `ulimit -n`, more
# clients than it has descriptors for. Checks that while accept fails with
# EMFILE the server (1) uses almost no CPU (no busy loop), (2) keeps serving
# the connections it has, and (3) accepts the waiting clients once
# descriptors free up.
#
# Environment: FDS (48), CLIENTS (100), PORT (19401), CPU_LIMIT_PCT (5),
# CARGO_TARGET_DIR (target), SKIP_BUILD (0).
set -euo pipefail
cd "$(dirname "$0")/.."

FDS=${FDS:-48}
CLIENTS=${CLIENTS:-100}
PORT=${PORT:-19401}
CPU_LIMIT_PCT=${CPU_LIMIT_PCT:-5}
TARGET=${CARGO_TARGET_DIR:-target}
[[ ${SKIP_BUILD:-0} == 1 ]] || cargo build --release --example testolope
BIN=$TARGET/release/examples/testolope

# `exec` keeps one process: $! is the server itself, with the low limit.
bash -c 'ulimit -n "$1" && exec "$2" "127.0.0.1:$3" 2' _ "$FDS" "$BIN" "$PORT" 2>/dev/null &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT

python3 - "$SERVER_PID" "$PORT" "$CLIENTS" "$CPU_LIMIT_PCT" <<'PY'
import os, socket, sys, time

pid, port, clients, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
REQ = b"GET /testolope HTTP/1.1\r\nHost: x\r\n\r\n"

def cpu_ticks():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])

def answered(sock, timeout):
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).startswith(b"HTTP/1.1 200")
    except OSError:
        return False

for _ in range(100):  # wait (at most ~5 s) until the server accepts
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)

fd_limit = [l for l in open(f"/proc/{pid}/limits") if l.startswith("Max open files")][0].split()[3]
print(f"emfile: server pid {pid}, open-files limit {fd_limit}")
conns = []
for _ in range(clients):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(REQ)
    conns.append(s)
time.sleep(1)
# One look, no waiting: the server's 5 s idle timeout must not close the
# served clients (that would free descriptors) before the checks are done.
import select
readable, _, _ = select.select(conns, [], [], 0)
served = [s for s in conns if s in readable]
waiting = [s for s in conns if s not in readable]
for s in served:
    s.recv(4096)
print(f"emfile: {len(served)} of {clients} clients served under ulimit -n, {len(waiting)} waiting")
if not served or not waiting:
    sys.exit("emfile: FAIL: expected some clients served and some waiting for descriptors")

tck = os.sysconf("SC_CLK_TCK")
before, started = cpu_ticks(), time.time()
time.sleep(2)
cpu_pct = 100 * (cpu_ticks() - before) / tck / (time.time() - started)
print(f"emfile: server CPU while accept is out of descriptors: {cpu_pct:.1f}% of a core")

served[0].sendall(REQ)
still_serving = answered(served[0], 5)
print(f"emfile: an accepted connection is still served: {still_serving}")

freed = len(served) // 2
for s in served[1:1 + freed]:
    s.close()
resumed = sum(answered(s, 10) for s in waiting[:freed])
print(f"emfile: after freeing {freed} descriptors, {resumed} of the first {freed} waiting clients served")

ok = cpu_pct <= limit and still_serving and resumed == min(freed, len(waiting))
print("emfile: PASS" if ok else "emfile: FAIL")
sys.exit(0 if ok else 1)
PY

#!/usr/bin/env python3
"""Holds many idle keep-alive connections to a server and measures how
promptly it answers other clients meanwhile. Standard library only.

    python3 ci/idle_probe.py --port 19101 --conns 10000 --probes 1000 --pid PID

1. Opens --conns connections (at most --inflight handshakes/requests at a
   time), sends one `GET PATH` on each and reads the response, so each one
   is an idle keep-alive connection parked with the server.
2. Starts a child process (this file with --probe-only) that times
   --probes sequential requests on a fresh connection each, then --probes
   requests on one keep-alive connection: p50/p99/max.
3. While the child runs, keeps the held connections alive: one whose last
   answer is older than --refresh seconds (below the server's idle timeout)
   gets another request. --refresh 0 never re-sends; the connections must
   then survive on their own.
4. Checks every held connection is still open (one more request each), samples
   the server's VmRSS (/proc/PID/status) before, with all held, and at its
   peak, and prints one JSON line prefixed `RESULT `.

With --hold SECONDS it only holds the connections that long (re-sending as
above), checks each still answers, and prints the RESULT line (ci/soak.sh).

Exit status: 0 when every connection was held and every probe answered 200,
1 otherwise. Only 127.0.0.1 is used; every socket has a deadline.
"""

import argparse
import collections
import json
import os
import selectors
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"


def request(path, close=False):
    extra = "Connection: close\r\n" if close else ""
    return f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n{extra}\r\n".encode()


def response_complete(buf):
    """(status, total_length) once a whole Content-Length response is in buf;
    None while incomplete. Raises ValueError on a malformed head."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end].decode("latin-1").split("\r\n")
    status = int(head[0].split(" ", 2)[1])
    length = 0
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    total = end + 4 + length
    if len(buf) < total:
        return None
    return status, total


def vm_rss_kib(pid, field="VmRSS"):
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(sorted_xs, q):
    if not sorted_xs:
        return float("nan")
    i = min(len(sorted_xs) - 1, max(0, int(round(q * len(sorted_xs) + 0.5)) - 1))
    return sorted_xs[i]


# ---------------------------------------------------------------- probe child


def read_response(sock, deadline):
    buf = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("response deadline")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a whole response")
        buf += chunk
        done = response_complete(buf)
        if done:
            return done[0]


def probe(port, path, n, timeout):
    """Times n requests on fresh connections, then n on one keep-alive one."""
    out = {}
    for mode in ("fresh", "keepalive"):
        lat, failures, errors = [], 0, {}
        sock = None
        for _ in range(n):
            t0 = time.monotonic()
            try:
                if sock is None:
                    sock = socket.create_connection((HOST, port), timeout=timeout)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.sendall(request(path, close=(mode == "fresh")))
                status = read_response(sock, t0 + timeout)
                if status != 200:
                    raise ValueError(f"status {status}")
                lat.append(time.monotonic() - t0)
            except Exception as e:  # noqa: BLE001 - every failure is counted
                failures += 1
                kind = type(e).__name__
                errors[kind] = errors.get(kind, 0) + 1
                if sock is not None:
                    sock.close()
                sock = None
                continue
            if mode == "fresh":
                sock.close()
                sock = None
        if sock is not None:
            sock.close()
        lat.sort()
        out[mode] = {
            "ok": len(lat),
            "failed": failures,
            "errors": errors,
            "p50_ms": round(percentile(lat, 0.50) * 1000, 3),
            "p99_ms": round(percentile(lat, 0.99) * 1000, 3),
            "max_ms": round((lat[-1] if lat else float("nan")) * 1000, 3),
        }
    return out


# ---------------------------------------------------------------- holder


class Held:
    __slots__ = ("sock", "buf", "state", "last", "sent_at")

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.state = "connecting"  # connecting -> waiting -> idle
        self.last = 0.0
        self.sent_at = 0.0


class Holder:
    def __init__(self, port, path, timeout):
        self.port, self.path, self.timeout = port, path, timeout
        self.sel = selectors.DefaultSelector()
        self.conns = []
        self.idle = 0
        self.lost = 0  # closed by the server or failed after being idle
        self.failed = 0  # never got a first answer
        self.errors = {}
        self.refreshes = 0
        self.max_answer = 0.0
        self.pending = 0  # connecting or waiting for an answer
        self.idle_order = collections.deque()  # (went idle at, conn), oldest first

    def _error(self, c, why):
        self.errors[why] = self.errors.get(why, 0) + 1
        if c.state == "idle" or c.last:
            self.lost += 1
        else:
            self.failed += 1
        if c.state == "idle":
            self.idle -= 1
        elif c.state in ("connecting", "waiting"):
            self.pending -= 1
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        c.state = "dead"

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = Held(s)
        c.sent_at = time.monotonic()
        self.pending += 1
        err = s.connect_ex((HOST, self.port))
        if err not in (0, 115):  # EINPROGRESS
            self.conns.append(c)
            self._error(c, f"connect errno {err}")
            return
        self.conns.append(c)
        self.sel.register(s, selectors.EVENT_WRITE, c)

    def send(self, c, now):
        try:
            n = c.sock.send(request(self.path))
        except OSError as e:
            self._error(c, f"send {e.errno}")
            return
        if n != len(request(self.path)):
            self._error(c, "short send")
            return
        if c.state == "idle":
            self.idle -= 1
            self.pending += 1
        c.state = "waiting"
        c.sent_at = now
        self.sel.modify(c.sock, selectors.EVENT_READ, c)

    def on_event(self, c, mask, now):
        if c.state == "connecting":
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._error(c, f"connect errno {err}")
                return
            self.send(c, now)
            return
        try:
            chunk = c.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as e:
            self._error(c, f"recv {e.errno}")
            return
        if not chunk:
            self._error(c, "closed by server" if c.state == "idle" else "closed before answer")
            return
        if c.state == "idle":
            self._error(c, "unexpected bytes while idle")
            return
        c.buf += chunk
        try:
            done = response_complete(c.buf)
        except ValueError:
            self._error(c, "malformed response")
            return
        if not done:
            return
        status, total = done
        if status != 200 or total != len(c.buf):
            self._error(c, f"status {status}" if status != 200 else "extra bytes")
            return
        c.buf = b""
        c.state = "idle"
        c.last = now
        self.idle += 1
        self.pending -= 1
        self.idle_order.append((now, c))
        self.max_answer = max(self.max_answer, now - c.sent_at)

    def pump(self, wait):
        now = time.monotonic()
        for key, mask in self.sel.select(wait):
            self.on_event(key.data, mask, now)
        # Deadlines on outstanding connects and requests.
        return now

    def expire(self, now):
        for c in self.conns:
            if c.state in ("connecting", "waiting") and now - c.sent_at > self.timeout:
                self._error(c, f"no answer within {self.timeout}s ({c.state})")

    def outstanding(self):
        return self.pending

    def open_all(self, n, inflight):
        last_expire = time.monotonic()
        while len(self.conns) < n or self.pending:
            while len(self.conns) < n and self.pending < inflight:
                self.open_one()
            now = self.pump(0.05)
            if now - last_expire > 0.5:
                self.expire(now)
                last_expire = now

    def refresh(self, age, now):
        """Re-sends on idle connections whose last answer is older than age."""
        q = self.idle_order
        while q and now - q[0][0] > age:
            at, c = q.popleft()
            if c.state == "idle" and c.last == at:
                self.refreshes += 1
                self.send(c, now)

    def keep_until(self, done, age):
        """Pumps events (and refreshes when age > 0) until done() is true."""
        last_expire = time.monotonic()
        while not done():
            now = self.pump(0.05)
            if age > 0:
                self.refresh(age, now)
            if now - last_expire > 0.5:
                self.expire(now)
                last_expire = now

    def check_all(self):
        """One more request on every idle connection: all must answer."""
        now = time.monotonic()
        for c in self.conns:
            if c.state == "idle":
                self.send(c, now)
        deadline = now + self.timeout + 1
        while self.outstanding() and time.monotonic() < deadline:
            now = self.pump(0.05)
            self.expire(now)

    def close_all(self):
        for c in self.conns:
            if c.state != "dead":
                try:
                    self.sel.unregister(c.sock)
                except (KeyError, ValueError):
                    pass
                c.sock.close()
        self.sel.close()


def hold_and_probe(a):
    t_start = time.monotonic()
    rss_before = vm_rss_kib(a.pid)
    h = Holder(a.port, a.path, a.timeout)
    h.open_all(a.conns, a.inflight)
    t_open = time.monotonic() - t_start
    open_max_answer = h.max_answer
    print(
        f"opened {h.idle}/{a.conns} idle keep-alive connections in {t_open:.2f}s "
        f"(slowest first answer {h.max_answer * 1000:.0f} ms)",
        file=sys.stderr,
        flush=True,
    )
    if t_open > a.refresh and a.refresh > 0:
        print(
            f"note: opening took longer than --refresh {a.refresh}s; early "
            "connections were re-sent a request to stay within the idle timeout",
            file=sys.stderr,
        )
    # Let the server park the last ones, then sample with everything held.
    settle_until = time.monotonic() + 0.3
    h.keep_until(lambda: time.monotonic() > settle_until, a.refresh)
    rss_with = vm_rss_kib(a.pid)
    rss_peak = rss_with or 0
    held_at_probe = h.idle

    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--probe-only",
         "--port", str(a.port), "--path", a.path, "--probes", str(a.probes),
         "--timeout", str(a.probe_timeout)],
        stdout=subprocess.PIPE,
        text=True,
    )
    refreshes_before = h.refreshes
    probe_deadline = time.monotonic() + a.probe_deadline
    last_rss = 0.0

    def probe_done():
        nonlocal rss_peak, last_rss
        now = time.monotonic()
        if now - last_rss > 0.2:
            last_rss = now
            rss_peak = max(rss_peak, vm_rss_kib(a.pid) or 0)
        return child.poll() is not None or now > probe_deadline

    t_probe = time.monotonic()
    h.keep_until(probe_done, a.refresh)
    t_probe = time.monotonic() - t_probe
    if child.poll() is None:
        child.kill()
        child.wait()
        probe_result = {"error": f"probe child ran over {a.probe_deadline}s"}
    else:
        out = child.stdout.read()
        try:
            probe_result = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            probe_result = {"error": f"probe child printed {out!r}"}
    refreshes_during_probe = h.refreshes - refreshes_before

    h.check_all()
    held_at_end = h.idle
    rss_end = vm_rss_kib(a.pid)
    hwm = vm_rss_kib(a.pid, "VmHWM")
    h.close_all()
    result = {
        "conns": a.conns,
        "opened_idle": held_at_probe,
        "open_seconds": round(t_open, 3),
        "slowest_first_answer_ms": round(open_max_answer * 1000, 1),
        "slowest_answer_overall_ms": round(h.max_answer * 1000, 1),
        "probe_seconds": round(t_probe, 3),
        "refreshes_total": h.refreshes,
        "refreshes_during_probe": refreshes_during_probe,
        "alive_after_probe": held_at_end,
        "lost": h.lost,
        "failed": h.failed,
        "errors": h.errors,
        "rss_before_kib": rss_before,
        "rss_with_idle_kib": rss_with,
        "rss_peak_during_probe_kib": rss_peak,
        "rss_with_idle_at_end_kib": rss_end,
        "vm_hwm_kib": hwm,
        "probe": probe_result,
    }
    print("RESULT " + json.dumps(result), flush=True)
    ok = (
        held_at_probe == a.conns
        and held_at_end == a.conns
        and "error" not in probe_result
        and all(probe_result[m]["failed"] == 0 for m in ("fresh", "keepalive"))
    )
    return 0 if ok else 1


def hold_only(a):
    """Holds the connections for --hold seconds (re-sending every --refresh
    seconds), then checks each one still answers."""
    t0 = time.monotonic()
    h = Holder(a.port, a.path, a.timeout)
    h.open_all(a.conns, a.inflight)
    opened = h.idle
    t_open = time.monotonic() - t0
    print(f"holding {opened}/{a.conns} keep-alive connections (opened in {t_open:.2f}s)",
          file=sys.stderr, flush=True)
    end = t0 + a.hold
    h.keep_until(lambda: time.monotonic() > end, a.refresh)
    h.check_all()
    result = {
        "conns": a.conns,
        "opened_idle": opened,
        "open_seconds": round(t_open, 3),
        "held_seconds": round(time.monotonic() - t0, 1),
        "refreshes_total": h.refreshes,
        "alive_at_end": h.idle,
        "lost": h.lost,
        "failed": h.failed,
        "errors": h.errors,
        "slowest_answer_ms": round(h.max_answer * 1000, 1),
    }
    h.close_all()
    print("RESULT " + json.dumps(result), flush=True)
    return 0 if opened == a.conns and h.idle == a.conns else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", default="/testolope")
    p.add_argument("--conns", type=int, default=10000)
    p.add_argument("--probes", type=int, default=1000)
    p.add_argument("--pid", type=int, default=0, help="server pid, for VmRSS")
    p.add_argument("--inflight", type=int, default=256,
                   help="connections opening at once (keep under the listen backlog)")
    p.add_argument("--refresh", type=float, default=3.5,
                   help="re-send on a held connection idle this long (0: never)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="deadline of each held connection's connect and answer")
    p.add_argument("--probe-timeout", type=float, default=2.0)
    p.add_argument("--probe-deadline", type=float, default=120.0)
    p.add_argument("--probe-only", action="store_true")
    p.add_argument("--hold", type=float, default=0,
                   help="only hold the connections this many seconds (no probes)")
    a = p.parse_args()
    if a.hold > 0:
        return hold_only(a)
    if a.probe_only:
        print(json.dumps(probe(a.port, a.path, a.probes, a.probe_timeout)))
        return 0
    return hold_and_probe(a)


if __name__ == "__main__":
    sys.exit(main())

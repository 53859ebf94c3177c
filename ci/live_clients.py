"""Python clients against examples/broadcast (called by ci/live.sh).

    python3 ci/live_clients.py PORT

`websockets` (asyncio client) and `aiohttp` (an SSE reader and a WebSocket
client) against the contract of issue 50: text echoed exactly, a broadcast
once a second holding the unix time in milliseconds (all digits; increasing;
close to now), ping answered with pong, close answered with close (1000);
`/events` a text/event-stream whose events carry the same timestamps.

Prints an `ok - ...` line per check that passes and a `NOT OK - ...` line
(on stderr) per check that fails, runs every check, and exits 1 if any
failed. Every wait is bounded.
"""

import asyncio
import sys
import time

import aiohttp
import websockets

PORT = int(sys.argv[1])
HTTP = f"http://127.0.0.1:{PORT}"
WS = f"ws://127.0.0.1:{PORT}/ws"

# The longest any single check may take: two broadcasts a second apart,
# the first up to a second after subscribing, with room for a slow machine.
CHECK_SECONDS = 10
# How far a broadcast's timestamp may be from the time it is received.
SKEW_MS = 1500

failed = False
# What the running check has seen so far, shown when it times out.
progress = {}


def ok(what):
    print(f"ok - {what}", flush=True)


def not_ok(what):
    global failed
    print(f"NOT OK - {what}", file=sys.stderr, flush=True)
    failed = True


class CheckFailed(Exception):
    pass


def expect(what, got, want):
    if got != want:
        raise CheckFailed(f"{what}: got {got!r}, want {want!r}")


def shorten(value):
    """`value` with long strings cut, for a readable report."""
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v) for v in value]
    if isinstance(value, str) and len(value) > 60:
        return f"{value[:40]}...({len(value)} characters)"
    return value


def now_ms():
    return int(time.time() * 1000)


def is_broadcast(text):
    """The contract: a message that is all digits is a broadcast."""
    return text.isascii() and text.isdigit()


def check_timestamps(what, stamps, received_at):
    """At least two, strictly increasing, each within SKEW_MS of when it came."""
    if len(stamps) < 2:
        raise CheckFailed(f"{what}: {len(stamps)} broadcasts, want at least 2")
    values = [int(s) for s in stamps]
    if any(b <= a for a, b in zip(values, values[1:])):
        raise CheckFailed(f"{what}: timestamps not increasing: {values}")
    for value, at in zip(values, received_at):
        if abs(at - value) > SKEW_MS:
            raise CheckFailed(f"{what}: timestamp {value} is {at - value} ms from the time it arrived ({at})")
    return values


async def check(name, body):
    """Runs one check, bounded; any exception (a timeout, a reset) fails it."""
    progress.clear()
    try:
        detail = await asyncio.wait_for(body(), CHECK_SECONDS)
        ok(f"{name}: {detail}")
    except CheckFailed as err:
        not_ok(f"{name}: {err}")
    except asyncio.TimeoutError:
        not_ok(f"{name}: no result within {CHECK_SECONDS} s; had seen {shorten(progress)}")
    except Exception as err:  # a client error is a failed check, not a crash
        not_ok(f"{name}: {type(err).__name__}: {err}")


# ---------------------------------------------------------------- SSE


class SseParser:
    """The event-stream format (HTML Living Standard, "Parsing an event stream").

    Lines end in CRLF, LF or CR; a line starting with ':' is a comment; a
    line `field: value` sets a field (one leading space of the value
    dropped); `data` lines are joined with '\\n'; a blank line dispatches the
    event, unless no data was given. Bytes arrive in arbitrary pieces: a CR
    at the end of one piece may be followed by the LF of its CRLF in the next.
    """

    def __repr__(self):
        return f"{self.buf[-200:]!r} (pending data lines {self.data})"

    def __init__(self):
        self.buf = b""
        self.skip_lf = False
        self.data = []
        self.event = ""
        self.last_id = ""

    def feed(self, chunk):
        """Returns the events (type, data, last id) completed by `chunk`."""
        if self.skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self.skip_lf = False
        self.buf += chunk
        events = []
        while True:
            cr, lf = self.buf.find(b"\r"), self.buf.find(b"\n")
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                break
            end = min(ends)
            line, rest = self.buf[:end], self.buf[end + 1 :]
            if self.buf[end : end + 1] == b"\r":
                if rest.startswith(b"\n"):
                    rest = rest[1:]
                elif not rest:
                    self.skip_lf = True
            self.buf = rest
            event = self.line(line.decode("utf-8", "replace"))
            if event:
                events.append(event)
        return events

    def line(self, line):
        if line == "":
            if not self.data:
                self.event = ""
                return None
            event = (self.event or "message", "\n".join(self.data), self.last_id)
            self.data, self.event = [], ""
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self.data.append(value)
        elif field == "event":
            self.event = value
        elif field == "id" and "\0" not in value:
            self.last_id = value
        return None


def sse_parser_self_test():
    """The parser against a hand-made stream cut at every byte."""
    stream = b": hi\r\nretry: 10\n\nid: 7\r\ndata: 1\rdata:2\r\n\r\ndata\n\nevent: x\ndata: 3\n\n"
    want = [("message", "1\n2", "7"), ("message", "", "7"), ("x", "3", "7")]
    for cut in range(len(stream) + 1):
        p = SseParser()
        got = p.feed(stream[:cut]) + p.feed(stream[cut:])
        expect(f"SSE parser self-test, stream cut at byte {cut}", got, want)
    p = SseParser()
    got = [e for b in stream for e in p.feed(bytes([b]))]
    expect("SSE parser self-test, one byte at a time", got, want)


async def aiohttp_sse(session):
    async with session.get(HTTP + "/events") as resp:
        expect("/events status", resp.status, 200)
        expect("/events Content-Type", resp.content_type, "text/event-stream")
        parser = SseParser()
        stamps, arrived = [], []
        progress.update(events=stamps, unparsed=parser)
        async for chunk in resp.content.iter_any():
            at = now_ms()
            for kind, data, _ in parser.feed(chunk):
                expect("SSE event type", kind, "message")
                if not is_broadcast(data):
                    raise CheckFailed(f"SSE event data {data!r} is not a decimal timestamp")
                stamps.append(data)
                arrived.append(at)
            if len(stamps) >= 3:
                break
        else:
            raise CheckFailed(f"the stream ended after {len(stamps)} events")
    values = check_timestamps("SSE", stamps, arrived)
    return f"{len(values)} events, increasing timestamps {values}, each within {SKEW_MS} ms of arrival"


async def aiohttp_plain(session):
    async with session.get(HTTP + "/") as resp:
        expect("GET / status", resp.status, 200)
        expect("GET / Content-Type", resp.content_type, "text/plain")
        expect("GET / body", await resp.text(), "ok")
    async with session.get(HTTP + "/page") as resp:
        expect("GET /page status", resp.status, 200)
        expect("GET /page Content-Type", resp.content_type, "text/html")
        page = await resp.text()
    for needle in ("EventSource", "WebSocket", 'id="events"', 'id="ws-broadcasts"', 'id="ws-echo"', 'id="status"'):
        if needle not in page:
            raise CheckFailed(f"/page lacks {needle!r}")
    return "GET / is 200 text/plain `ok`; GET /page is 200 text/html with EventSource, WebSocket and the four ids"


async def aiohttp_ws(session):
    async with session.ws_connect(WS, autoping=True, heartbeat=None) as ws:
        sent = "aiohttp says héllo ✓"
        await ws.send_str(sent)
        broadcasts = 0
        while True:
            progress.update(broadcasts=broadcasts)
            msg = await ws.receive()
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise CheckFailed(f"got a {msg.type.name} message ({msg.data!r}) before the echo")
            if is_broadcast(msg.data):
                broadcasts += 1
                continue
            expect("aiohttp echo", msg.data, sent)
            break
        progress.update(step="closing")
        await ws.close(code=1000)
        expect("aiohttp close code from the server", ws.close_code, 1000)
    return f"non-ASCII text echoed exactly ({broadcasts} broadcasts before it), close answered with 1000"


# ---------------------------------------------------------------- websockets


async def websockets_client():
    # No keep-alive pings of the client's own: the one ping below is ours.
    async with websockets.connect(WS, ping_interval=None, close_timeout=5, max_size=2**16) as ws:
        sent = ["first message", "second: with spaces and ünïcode", "x" * 1000]
        for text in sent:
            await ws.send(text)
        echoes, stamps, arrived = [], [], []
        progress.update(echoes=echoes, broadcasts=stamps)
        while len(echoes) < len(sent) or len(stamps) < 2:
            msg = await ws.recv()
            if not isinstance(msg, str):
                raise CheckFailed(f"got a binary message {msg[:40]!r}")
            if is_broadcast(msg):
                stamps.append(msg)
                arrived.append(now_ms())
            else:
                echoes.append(msg)
        expect("websockets echoes, in order", echoes, sent)
        values = check_timestamps("websockets broadcasts", stamps, arrived)
        progress.update(step="waiting for the pong")
        pong = await ws.ping(b"live-ping")
        await asyncio.wait_for(pong, 5)
        progress.update(step="closing")
        await ws.close(code=1000, reason="done")
    # close_code is the code in the server's close frame (1006 if none came).
    expect("websockets close code from the server", ws.close_code, 1000)
    return (
        f"{len(sent)} texts echoed exactly and in order, {len(values)} broadcasts with increasing "
        f"timestamps within {SKEW_MS} ms ({values}), ping answered with pong, close answered with 1000"
    )


async def main():
    try:
        sse_parser_self_test()
        ok("SSE parser self-test: CRLF, LF and CR endings, comments, retry/id/event fields, any cut")
    except CheckFailed as err:
        not_ok(str(err))
    versions = f"websockets {websockets.__version__}, aiohttp {aiohttp.__version__}"
    print(f"python {sys.version.split()[0]}, {versions}", flush=True)
    await check("python websockets /ws", websockets_client)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await check("python aiohttp GET / and /page", lambda: aiohttp_plain(session))
        await check("python aiohttp SSE /events", lambda: aiohttp_sse(session))
        await check("python aiohttp /ws", lambda: aiohttp_ws(session))
    sys.exit(1 if failed else 0)


asyncio.run(main())

"""Python HTTP clients against examples/echo (called by ci/interop.sh).

    python3 ci/interop_clients.py PORT

Checks `requests` (a Session: several requests on one pooled connection) and
`http.client` (two requests on one connection, a chunked POST). Prints an
`ok - ...` line per check; exits 1 with the mismatch on the first failure.
"""

import http.client
import os
import sys

import requests

TIMEOUT = 10


def check(what, got, want):
    if got != want:
        short = lambda v: repr(v) if len(repr(v)) < 200 else repr(v)[:200] + "..."
        print(f"NOT OK - python: {what}: got {short(got)}, want {short(want)}", file=sys.stderr)
        sys.exit(1)


def with_requests(base):
    big = os.urandom(100_000)
    with requests.Session() as s:
        r = s.get(base + "/hello", timeout=TIMEOUT)
        check("requests GET status", r.status_code, 200)
        check("requests GET body", r.content, b"")
        r = s.post(base + "/echo", data=b"ping", timeout=TIMEOUT)
        check("requests POST status", r.status_code, 200)
        check("requests POST body", r.content, b"ping")
        r = s.post(base + "/echo", data=big, timeout=TIMEOUT)
        check("requests POST 100 KB body", r.content, big)
        # A generator body goes out chunked.
        r = s.put(base + "/echo", data=(big[i : i + 7000] for i in range(0, len(big), 7000)), timeout=TIMEOUT)
        check("requests chunked PUT status", r.status_code, 200)
        check("requests chunked PUT body", r.content, big)
        r = s.head(base + "/echo", timeout=TIMEOUT)
        check("requests HEAD status", r.status_code, 200)
        manager = s.get_adapter(base).poolmanager
        opened = sum(manager.pools[key].num_connections for key in manager.pools.keys())
        check("requests Session connections opened for 5 requests", opened, 1)
    print("ok - python requests: Session, 5 requests (GET, POST, 100 KB POST, chunked PUT, HEAD) on 1 connection")


def with_http_client(host, port):
    conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
    try:
        conn.request("GET", "/first")
        r = conn.getresponse()
        check("http.client first status", r.status, 200)
        r.read()
        first = conn.sock
        check("http.client socket open after a keep-alive response", first is not None, True)
        conn.request("POST", "/second", body=b"hello", headers={"Content-Type": "text/plain"})
        r = conn.getresponse()
        check("http.client second status", r.status, 200)
        check("http.client second body", r.read(), b"hello")
        check("http.client second request on the same socket", conn.sock is first, True)

        parts = [b"alpha-", b"beta-" * 1000, b"", b"gamma"]
        conn.request("POST", "/chunked", body=iter(parts), encode_chunked=True)
        r = conn.getresponse()
        check("http.client chunked POST status", r.status, 200)
        check("http.client chunked POST body", r.read(), b"".join(parts))
        check("http.client chunked POST on the same socket", conn.sock is first, True)
    finally:
        conn.close()
    print("ok - python http.client: 2 requests on one connection, chunked POST (encode_chunked=True) echoed")


def main():
    port = int(sys.argv[1])
    with_requests(f"http://127.0.0.1:{port}")
    with_http_client("127.0.0.1", port)


if __name__ == "__main__":
    main()

"""Python requests against examples/login (called by ci/web.sh).

    python3 ci/web_clients.py LOGIN_PORT

A `requests.Session` signs in as the demo user with the form, reads the
private page, signs out; a copy of the session cookie with one character
changed, and the cookie kept after the logout, are refused (401); a login
from a browser holding another session's cookie gets a new id (no session
fixation). Prints `ok - ...` per check, `NOT OK - ...` per failure.
"""

import sys

import requests

BASE = f"http://127.0.0.1:{int(sys.argv[1])}"
TIMEOUT = 10
failures = 0


def check(what, cond, detail=""):
    global failures
    if cond:
        print(f"ok - requests: {what}")
    else:
        failures += 1
        print(f"NOT OK - requests: {what}: {detail}", file=sys.stderr)


def login(session, password="wonderland"):
    return session.post(f"{BASE}/login", data={"user": "alice", "password": password}, timeout=TIMEOUT)


def session_cookie(session):
    found = [c for c in session.cookies if c.name == "session"]
    return found[0] if found else None


def private_with(cookie_value):
    """GET /private from a fresh client carrying only this session cookie."""
    return requests.get(f"{BASE}/private", cookies={"session": cookie_value}, timeout=TIMEOUT)


def tampered(value):
    at = len(value) // 2
    return value[:at] + ("B" if value[at] == "A" else "A") + value[at + 1 :]


def main():
    s = requests.Session()
    r = s.get(f"{BASE}/private", timeout=TIMEOUT)
    check("the private page wants a login", r.status_code == 401, f"status {r.status_code}")

    r = login(s, password="guess")
    check("a wrong password is refused, no cookie set", r.status_code == 401 and session_cookie(s) is None,
          f"status {r.status_code}, cookies {s.cookies.get_dict()}")

    r = login(s)
    redirected = [h.status_code for h in r.history]
    check("the login redirects (303) to the private page", redirected == [303] and r.url == f"{BASE}/private"
          and r.status_code == 200 and "Welcome, alice." in r.text, f"history {redirected}, {r.url} {r.status_code}")
    cookie = session_cookie(s)
    check("the session cookie is HttpOnly, SameSite=Lax, Path=/, not Secure over plain HTTP",
          cookie is not None and cookie.has_nonstandard_attr("HttpOnly")
          and cookie.get_nonstandard_attr("SameSite") == "Lax" and cookie.path == "/" and not cookie.secure,
          f"{cookie!r}")
    if cookie is None:
        return
    check("the cookie does not show the user", "alice" not in cookie.value, cookie.value)

    r = s.get(f"{BASE}/private", timeout=TIMEOUT)
    check("the private page again with the same cookie", r.status_code == 200 and "Welcome, alice." in r.text,
          f"status {r.status_code}")

    r = private_with(tampered(cookie.value))
    check("a cookie with one character changed is no login", r.status_code == 401, f"status {r.status_code}")
    r = private_with(cookie.value)
    check("the untouched copy still is", r.status_code == 200, f"status {r.status_code}")

    # Fixation: another browser holding this session's cookie logs in, and
    # gets a new id; the old one logs in nobody any more.
    planted = cookie.value
    other = requests.Session()
    other.cookies.set("session", planted, domain="127.0.0.1", path="/")
    r = login(other)
    fresh = session_cookie(other)
    check("a login rotates the session id", r.status_code == 200 and fresh is not None and fresh.value != planted,
          f"status {r.status_code}, cookie {fresh!r}")
    r = private_with(planted)
    check("the id before the login is forgotten", r.status_code == 401, f"status {r.status_code}")

    r = other.post(f"{BASE}/logout", timeout=TIMEOUT)
    check("the logout redirects home and clears the cookie",
          [h.status_code for h in r.history] == [303] and session_cookie(other) is None,
          f"history {[h.status_code for h in r.history]}, cookies {other.cookies.get_dict()}")
    r = private_with(fresh.value if fresh else "")
    check("a copy of the cookie kept past the logout is no login", r.status_code == 401, f"status {r.status_code}")


try:
    main()
except requests.RequestException as err:
    failures += 1
    print(f"NOT OK - requests: {err}", file=sys.stderr)
sys.exit(1 if failures else 0)

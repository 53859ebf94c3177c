"""Headless Chromium against examples/broadcast's page (called by ci/live.sh).

    python3 ci/live_browser.py PORT

Loads http://127.0.0.1:PORT/page in Chromium (Debian's `chromium` and
`chromium-driver`, driven by selenium) and waits, with WebDriverWait, until
the page's own EventSource and WebSocket have done their work: `#status` is
`ready`, `#events` and `#ws-broadcasts` are at least 2, and `#ws-echo` is
the text the page sent. Prints `ok - ...`, or `NOT OK - ...` on stderr with
what the page showed and what the browser logged, and exits 1.
"""

import shutil
import sys

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

PORT = int(sys.argv[1])
URL = f"http://127.0.0.1:{PORT}/page"
ECHO = "hello from the page"
# Two broadcasts a second apart after both streams open, with room for a
# browser starting on a slow, shared machine.
WAIT_SECONDS = 20
IDS = ("status", "events", "ws-broadcasts", "ws-echo")


def find(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    sys.exit(f"NOT OK - browser: none of {names} on the PATH")


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = find("chromium", "chromium-browser")
    # As root Chromium refuses to start without --no-sandbox; /dev/shm may be
    # small in containers.
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver from the Debian package, named explicitly so selenium never
    # tries to download one.
    return webdriver.Chrome(service=Service(executable_path=find("chromedriver")), options=options)


def shown(driver):
    """The text of the four elements (None for a missing one)."""
    values = {}
    for id_ in IDS:
        found = driver.find_elements(By.ID, id_)
        values[id_] = found[0].text if found else None
    return values


def count(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1


def done(driver):
    v = shown(driver)
    return (
        v["status"] == "ready"
        and count(v["events"]) >= 2
        and count(v["ws-broadcasts"]) >= 2
        and v["ws-echo"] == ECHO
        and v
    )


def main():
    driver = browser()
    try:
        version = driver.capabilities.get("browserVersion", "?")
        driver.set_page_load_timeout(WAIT_SECONDS)
        driver.get(URL)
        try:
            v = WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.2).until(done)
        except TimeoutException:
            logs = [f"{e['level']} {e['message']}" for e in driver.get_log("browser")]
            print(
                f"NOT OK - browser: chromium {version} on {URL}: after {WAIT_SECONDS} s "
                f"the page shows {shown(driver)}, "
                f"want status 'ready', events >= 2, ws-broadcasts >= 2, ws-echo {ECHO!r}; browser log: {logs}",
                file=sys.stderr,
            )
            sys.exit(1)
        print(
            f"ok - browser: chromium {version} headless on /page: status {v['status']}, {v['events']} SSE events, "
            f"{v['ws-broadcasts']} WebSocket broadcasts, echo {v['ws-echo']!r}"
        )
    except WebDriverException as err:
        print(f"NOT OK - browser: {err.msg or err}", file=sys.stderr)
        sys.exit(1)
    finally:
        driver.quit()


main()

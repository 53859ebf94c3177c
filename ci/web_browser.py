"""Headless Chromium against examples/cors and examples/login (called by ci/web.sh).

    python3 ci/web_browser.py PAGE_PORT OTHER_PORT LOGIN_PORT

Loads examples/cors's page from http://127.0.0.1:PAGE_PORT/, an origin its
API allows, and waits until the page's own fetches to the API (another
port: another origin) are done: a simple GET reading an exposed header, a
PUT with a custom header (preflighted), a PUT with a header the API does
not allow (the browser must fail it with a TypeError) and a credentialed
POST then GET (the cookie the API set comes back). Then the same page from
http://127.0.0.1:OTHER_PORT/, an origin the API does not allow: the
browser must block every call (TypeError). Then examples/login: the form
signs in, the private page shows, the session cookie is out of the page's
reach (HttpOnly), the logout ends it. Prints `ok - ...` per check,
`NOT OK - ...` per failure.
"""

import shutil
import sys

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

PAGE_PORT, OTHER_PORT, LOGIN_PORT = (int(p) for p in sys.argv[1:4])
WAIT_SECONDS = 20
CALLS = ("simple", "preflighted", "refused-header", "credentialed")
failures = 0


def check(what, cond, detail=""):
    global failures
    if cond:
        print(f"ok - browser: {what}")
    else:
        failures += 1
        print(f"NOT OK - browser: {what}: {detail}", file=sys.stderr)


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


def text(driver, id_):
    found = driver.find_elements(By.ID, id_)
    return found[0].text if found else None


def calls(driver, url):
    """Loads the page at `url` and returns what each call showed."""
    driver.get(url)
    try:
        WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: text(d, "status") == "done")
    except TimeoutException:
        logs = [f"{e['level']} {e['message']}" for e in driver.get_log("browser")]
        check(f"the page at {url} finishes its calls", False, f"status {text(driver, 'status')!r}; log {logs}")
    return {id_: text(driver, id_) for id_ in CALLS}


def cors_checks(driver):
    allowed = calls(driver, f"http://127.0.0.1:{PAGE_PORT}/")
    check("simple GET from an allowed origin, exposed header read",
          allowed["simple"] == "ok: hello from the API (version 1)", allowed["simple"])
    check("preflighted PUT with X-Token and a JSON type", allowed["preflighted"] == 'ok: 200 stored {"note":"hi"}',
          allowed["preflighted"])
    check("a PUT with a header the API does not allow is blocked",
          (allowed["refused-header"] or "").startswith("error: TypeError"), allowed["refused-header"])
    check("credentialed POST then GET: the API's cookie comes back",
          (allowed["credentialed"] or "").startswith("ok: 200 visitor v"), allowed["credentialed"])

    other = calls(driver, f"http://127.0.0.1:{OTHER_PORT}/")
    for id_ in ("simple", "preflighted", "credentialed"):
        check(f"{id_} call from a disallowed origin is blocked", (other[id_] or "").startswith("error: TypeError"),
              other[id_])


def login_checks(driver):
    base = f"http://127.0.0.1:{LOGIN_PORT}"
    driver.get(f"{base}/login")
    driver.find_element(By.ID, "user").send_keys("alice")
    driver.find_element(By.ID, "password").send_keys("wonderland")
    driver.find_element(By.ID, "sign-in").click()
    try:
        WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: text(d, "welcome"))
    except TimeoutException:
        pass
    check("the login form leads to the private page", text(driver, "welcome") == "Welcome, alice.",
          f"{driver.current_url}: {driver.title!r}")
    cookies = {c["name"]: c for c in driver.get_cookies()}
    session = cookies.get("session", {})
    check("the session cookie is HttpOnly and SameSite=Lax",
          session.get("httpOnly") is True and session.get("sameSite") == "Lax", f"{session}")
    seen = driver.execute_script("return document.cookie")
    check("the page's script cannot see the session cookie", "session=" not in seen, seen)
    driver.find_element(By.ID, "sign-out").click()
    WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: d.current_url == f"{base}/")
    driver.get(f"{base}/private")
    check("after the logout the private page wants a login again", driver.title == "Sign in first", driver.title)


def main():
    driver = browser()
    try:
        version = driver.capabilities.get("browserVersion", "?")
        print(f"browser: chromium {version} headless")
        driver.set_page_load_timeout(WAIT_SECONDS)
        cors_checks(driver)
        login_checks(driver)
    except (WebDriverException, TimeoutException) as err:
        check("the browser run", False, getattr(err, "msg", None) or str(err))
    finally:
        driver.quit()


main()
sys.exit(1 if failures else 0)

"""Real clients posting files to examples/upload_form (called by ci/upload.sh).

    python3 ci/upload_clients.py requests PORT UPLOAD_DIR WORK_DIR
    python3 ci/upload_clients.py browser PORT UPLOAD_DIR WORK_DIR

`requests`: Python's requests posts two files and two fields with `files=`
and `data=`. `browser`: headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by selenium) loads the form at `/`, types a note,
picks two files in the file input and submits. Either way the answer names
the file each upload was stored as; each stored file must hold the exact
bytes sent. Prints `ok - ...` per check passed and `NOT OK - ...` per check
failed, and exits 1 if any failed. The files sent are made in WORK_DIR.
"""

import os
import re
import shutil
import sys

FILE_LINE = re.compile(r'^file "(?P<name>[^"]*)" \((?P<type>[^)]*)\): (?P<size>\d+) bytes, stored as (?P<stored>upload-[0-9a-f]{16})$')

failures = 0


def ok(what):
    print(f"ok - {what}", flush=True)


def not_ok(what):
    global failures
    failures += 1
    print(f"NOT OK - {what}", flush=True)


def make_files(work, prefix):
    """Two files to send: some binary bytes (every byte value, CR LF and
    dashes that look like a boundary among them) and UTF-8 text."""
    binary = os.path.join(work, f"{prefix}-bytes.bin")
    with open(binary, "wb") as f:
        f.write(bytes(range(256)) * 64 + b"\r\n--\r\n------WebKitFormBoundary\r\n" + os.urandom(100_000))
    text = os.path.join(work, f"{prefix}-notes.txt")
    with open(text, "w", encoding="utf-8") as f:
        f.write("caf\u00e9 \u2600\nsecond line\n")
    return [binary, text]


def check_answer(client, answer, sent, upload_dir, note):
    """The answer lists each file sent, stored with its exact bytes."""
    lines = answer.strip().splitlines()
    if f"note: {note}" not in lines:
        not_ok(f"{client}: the note is not in the answer: {answer[:300]!r}")
    stored = {}
    for line in lines:
        m = FILE_LINE.match(line)
        if m:
            stored[m["name"]] = (int(m["size"]), m["stored"])
    for path in sent:
        name = os.path.basename(path)
        if name not in stored:
            not_ok(f"{client}: {name} is not in the answer: {answer[:300]!r}")
            continue
        size, stored_as = stored[name]
        with open(path, "rb") as f:
            want = f.read()
        with open(os.path.join(upload_dir, stored_as), "rb") as f:
            got = f.read()
        if size == len(want) and got == want:
            ok(f"{client}: {name} ({len(want)} bytes) stored as {stored_as} with the same bytes")
        else:
            not_ok(f"{client}: {name}: sent {len(want)} bytes, answer says {size}, stored {len(got)}, same: {got == want}")


def with_requests(port, upload_dir, work):
    import requests

    sent = make_files(work, "requests")
    note = "from requests \u2713"
    with open(sent[0], "rb") as a, open(sent[1], "rb") as b:
        files = [
            ("files", (os.path.basename(sent[0]), a, "application/octet-stream")),
            ("files", (os.path.basename(sent[1]), b, "text/plain")),
        ]
        resp = requests.post(f"http://127.0.0.1:{port}/upload", data={"note": note, "other": "x"}, files=files, timeout=30)
    if resp.status_code != 200:
        not_ok(f"requests: status {resp.status_code}: {resp.text[:300]!r}")
        return
    ok("requests: 200")
    check_answer("requests", resp.text, sent, upload_dir, note)


def find(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    sys.exit(f"NOT OK - browser: none of {names} on the PATH")


def with_browser(port, upload_dir, work):
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = find("chromium", "chromium-browser")
    # As root Chromium refuses to start without --no-sandbox; /dev/shm may be
    # small in containers.
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"):
        options.add_argument(arg)
    # The driver from the Debian package, named explicitly so selenium never
    # tries to download one.
    driver = webdriver.Chrome(service=Service(executable_path=find("chromedriver")), options=options)
    try:
        sent = make_files(work, "browser")
        note = "from chromium"
        driver.get(f"http://127.0.0.1:{port}/")
        driver.find_element(By.ID, "note").send_keys(note)
        # Several files for a `multiple` input: their paths, one a line.
        driver.find_element(By.ID, "files").send_keys("\n".join(sent))
        driver.find_element(By.ID, "send").click()
        # The form's page goes away as the answer loads: a body found on it
        # goes stale under the wait, which then looks again.
        WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "stored as" in d.find_element(By.TAG_NAME, "body").text
        )
        if not driver.current_url.endswith("/upload"):
            not_ok(f"browser: the form was not submitted to /upload: {driver.current_url}")
        ok("browser: the form was submitted and answered")
        check_answer("browser", driver.find_element(By.TAG_NAME, "body").text, sent, upload_dir, note)
    finally:
        driver.quit()


def main():
    client, port, upload_dir, work = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    try:
        {"requests": with_requests, "browser": with_browser}[client](port, upload_dir, work)
    except Exception as e:  # Reported as a failed check, with what happened.
        not_ok(f"{client}: {type(e).__name__}: {e}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

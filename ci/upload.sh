#!/usr/bin/env bash
# Real clients posting multipart/form-data to examples/upload_form (issue
# 52): every file the server stores must hold the exact bytes sent.
#
#   curl     `curl -F` with two fields and three files, a 20 MB one among
#            them: stored whole (cmp), and the server's peak RSS (VmHWM)
#            grows by less than 8 MiB over the upload, so the file streamed
#            to disk rather than into memory; then a body cut short (400)
#            and one over a limit (413), which leave no file behind
#   python   requests with `files=` and `data=` (ci/upload_clients.py)
#   browser  headless Chromium driven by selenium fills the HTML form (a
#            note and two files in a `multiple` file input) and submits it
#
#   bash ci/upload.sh
#
# Installs what is missing (`apt-get update` once, only if something must be
# installed): curl, python3 with requests and selenium (from pip, else
# Debian's python3-* packages), chromium and chromium-driver. Builds
# examples/upload_form in release mode. Ends with `upload: N passed, M
# failed` and exits 1 if anything failed. KEEP_TMP=1 keeps the temporary
# directory (logs, files sent, files stored).
set -euo pipefail
cd "$(dirname "$0")/.."

KEEP_TMP=${KEEP_TMP:-0}
say() { echo "upload: $*" >&2; }

# ---------------------------------------------------------------- installs
PY=python3
py_modules='import requests, selenium'
need_apt=()
command -v curl >/dev/null || need_apt+=(curl)
command -v python3 >/dev/null || need_apt+=(python3)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if ! { command -v python3 >/dev/null && python3 -c "$py_modules" 2>/dev/null; }; then
    if ! { command -v python3 >/dev/null && python3 -m pip install -q requests selenium >/dev/null 2>&1; }; then
        need_apt+=(python3-requests python3-selenium)
        PY=/usr/bin/python3
    fi
fi
if ((${#need_apt[@]})); then
    say "installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
"$PY" -c "$py_modules" || {
    say "FAIL: requests or selenium is not importable by $PY"
    exit 1
}

# ---------------------------------------------------------------- harness
tmp="$(mktemp -d -t httpool-upload.XXXXXX)"
uploads=$tmp/uploads
work=$tmp/work
mkdir -p "$uploads" "$work"
server=
cleanup() {
    if [[ -n $server ]]; then
        kill "$server" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$server" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    if [[ $KEEP_TMP == 1 ]]; then
        say "files and logs kept in $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT

passed=0
failed=0
ok() {
    echo "ok - $*"
    passed=$((passed + 1))
}
not_ok() {
    echo "NOT OK - $*" >&2
    failed=$((failed + 1))
}

port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cargo build --release --features multipart --example upload_form
target_dir="$(cargo metadata --format-version 1 --no-deps |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
"$target_dir/release/examples/upload_form" "127.0.0.1:$port" "$uploads" >"$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || {
        say "FAIL: the server exited before listening; its log:"
        cat "$tmp/server.log" >&2
        exit 1
    }
    sleep 0.1
done
say "$(curl --version | head -n 1 | cut -d' ' -f1-2), $("$PY" --version), $(chromium --version 2>/dev/null | head -n 1) on 127.0.0.1:$port"

hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$server/status"; }

# stored_ok CLIENT ANSWER FILE...: each FILE is listed in ANSWER and the file
# stored for it holds the same bytes.
stored_ok() {
    local client=$1 answer=$2 file name stored
    shift 2
    for file in "$@"; do
        name=$(basename "$file")
        stored=$(sed -n "s/^file \"$name\" ([^)]*): [0-9]* bytes, stored as \(upload-[0-9a-f]\{16\}\)$/\1/p" "$answer")
        if [[ -n $stored ]] && cmp -s "$file" "$uploads/$stored"; then
            ok "$client: $name ($(stat -c %s "$file") bytes) stored as $stored with the same bytes"
        else
            not_ok "$client: $name not stored whole (answer: $(head -c 400 "$answer" | tr '\n' '|'))"
        fi
    done
}

# ---------------------------------------------------------------- curl
head -c 20000000 /dev/urandom >"$work/big.bin"
printf 'plain text\r\n--\r\nwith CRLF and dashes\n' >"$work/small.txt"
: >"$work/empty.dat"
hwm_before=$(hwm_kib)
status=$(curl -sS -o "$tmp/curl.out" -w '%{http_code}' --max-time 60 \
    -F note=hello -F other=ignored \
    -F "files=@$work/big.bin" -F "files=@$work/small.txt;type=text/plain" -F "files=@$work/empty.dat" \
    "http://127.0.0.1:$port/upload") || status=000
hwm_after=$(hwm_kib)
if [[ $status == 200 ]] && grep -qx 'note: hello' "$tmp/curl.out"; then
    ok "curl -F: 200 with the note"
else
    not_ok "curl -F: status $status: $(head -c 400 "$tmp/curl.out" | tr '\n' '|')"
fi
stored_ok curl "$tmp/curl.out" "$work/big.bin" "$work/small.txt" "$work/empty.dat"
grown=$((hwm_after - hwm_before))
if ((grown < 8192)); then
    ok "curl -F: peak RSS grew by $grown KiB over a 20 MB upload ($hwm_before KiB before, $hwm_after after)"
else
    not_ok "curl -F: peak RSS grew by $grown KiB over a 20 MB upload: the file was held in memory"
fi

# A body cut short and one with too many parts: 400 and 413, nothing left
# behind (the files they stored first are removed).
before=$(find "$uploads" -type f | wc -l)
printf -- '--XyZ\r\nContent-Disposition: form-data; name="files"; filename="a"\r\n\r\nabc\r\n--XyZ' >"$tmp/cut.body"
status=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 -H 'Content-Type: multipart/form-data; boundary=XyZ' \
    --data-binary "@$tmp/cut.body" "http://127.0.0.1:$port/upload") || status=000
many=()
for i in $(seq 40); do many+=(-F "files=@$work/small.txt"); done
status2=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 "${many[@]}" "http://127.0.0.1:$port/upload") || status2=000
after=$(find "$uploads" -type f | wc -l)
if [[ $status == 400 && $status2 == 413 && $before == "$after" ]]; then
    ok "curl: a body cut short is 400, 40 files past the 32 parts allowed are 413, and neither leaves a file"
else
    not_ok "curl: cut short $status (want 400), too many parts $status2 (want 413), files $before then $after"
fi

# ---------------------------------------------------------------- python, browser
for client in requests browser; do
    rc=0
    timeout 120 "$PY" ci/upload_clients.py "$client" "$port" "$uploads" "$work" >"$tmp/$client.out" 2>&1 || rc=$?
    cat "$tmp/$client.out"
    passed=$((passed + $(grep -c '^ok - ' "$tmp/$client.out" || true)))
    bad=$(grep -c '^NOT OK - ' "$tmp/$client.out" || true)
    failed=$((failed + bad))
    if ((rc != 0 && bad == 0)); then
        not_ok "$client exited with status $rc$( ((rc == 124)) && echo ' (timed out)')"
    fi
done

# ---------------------------------------------------------------- summary
kill -0 "$server" 2>/dev/null || not_ok "the server exited during the run: $(tail -n 5 "$tmp/server.log" | tr '\n' '|')"
if grep -qi 'panicked' "$tmp/server.log"; then
    not_ok "the server panicked: $(grep -i -m 3 'panicked' "$tmp/server.log" | tr '\n' '|')"
fi
echo "upload: $passed passed, $failed failed"
((failed == 0))

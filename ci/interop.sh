#!/usr/bin/env bash
# Interoperability with real clients and a real reverse proxy, all on
# 127.0.0.1:
#
#   curl     keep-alive reuse, chunked uploads, HTTP/1.0, Expect: 100-continue
#   python   requests (a Session) and http.client (keep-alive, chunked POST)
#   Go       net/http, standard library only (ci/interop_go.go): 50 GETs on
#            one connection, a chunked POST, Expect: 100-continue, HEAD,
#            32 goroutines × 20 requests, a request after the idle timeout
#   Node.js  fetch (undici, built in; ci/interop_node.mjs): 50 GETs, a
#            200 KB POST, a streamed (chunked) POST, 32 requests at once, a
#            request after the idle timeout
#   TLS      curl against examples/tls (self-signed certificate), reuse
#   nginx    as a keep-alive reverse proxy in front of testolope (wrk load;
#            no 5xx, upstream connections reused) and echo (a chunked upload
#            streamed through with proxy_request_buffering off), and of echo
#            on a Unix domain socket (its file removed at SIGTERM, and a
#            file left by SIGKILL replaced at the next start), and of
#            examples/metrics with X-Forwarded-For and X-Request-Id: curl's
#            own address (127.0.0.2) answered and logged, nginx's id taken
#   HAProxy  in front of testolope (http-reuse always): wrk on /testolope
#            and on the blocking /sleep at once; no 5xx, no errors, no
#            retries by HAProxy's own counters; `option forwardfor` to
#            examples/metrics: curl's address answered and logged
#   spoofed  X-Forwarded-For sent to examples/metrics by a peer it does not
#            trust: ignored
#
#   bash ci/interop.sh
#
# Installs what is missing (curl, nginx, haproxy, wrk, iproute2, python3 and
# requests, go, node; `apt-get update` once, only if something must be
# installed). The Go client runs offline: no module, no downloads. Builds the
# examples in release mode. Ends with `interop: N passed, M failed` and exits
# 1 if anything failed.
#
# Environment: WRK_DURATION (20, seconds), WRK_CONNECTIONS (32),
# UPSTREAM_CONN_MAX (64: most distinct nginx→testolope connections and
# TIME-WAIT sockets allowed during the wrk run), UPSTREAM_KEEPALIVE_REQUESTS
# (1000000; nginx's own default, 1000, closes each upstream connection after
# 1000 requests and fails the reuse check), KEEP_TMP (0; 1 keeps the
# temporary directory with the logs).
set -euo pipefail
cd "$(dirname "$0")/.."

WRK_DURATION=${WRK_DURATION:-20}
WRK_CONNECTIONS=${WRK_CONNECTIONS:-32}
UPSTREAM_CONN_MAX=${UPSTREAM_CONN_MAX:-64}
KEEP_TMP=${KEEP_TMP:-0}

say() { echo "interop: $*" >&2; }

# ---------------------------------------------------------------- installs
PY=python3
need_apt=()
command -v curl >/dev/null || need_apt+=(curl)
command -v wrk >/dev/null || need_apt+=(wrk)
command -v ss >/dev/null || need_apt+=(iproute2)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || need_apt+=(nginx)
command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || need_apt+=(haproxy)
command -v python3 >/dev/null || need_apt+=(python3)
# The official Go tarball lives in /usr/local/go/bin, often not on the PATH
# of a non-login shell.
command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]] || need_apt+=(golang-go)
command -v node >/dev/null || need_apt+=(nodejs)
if ! { command -v python3 >/dev/null && python3 -c 'import requests' 2>/dev/null; }; then
    if ! { command -v python3 >/dev/null && python3 -m pip install -q requests >/dev/null 2>&1; }; then
        # Debian's own python3 with Debian's requests.
        need_apt+=(python3-requests)
        PY=/usr/bin/python3
    fi
fi
if ((${#need_apt[@]})); then
    say "installing ${need_apt[*]}"
    # Debian's nginx package would start a system nginx on port 80: keep
    # services from starting while it installs, unless the image already does.
    made_policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    ((made_policy)) && rm -f /usr/sbin/policy-rc.d
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
GO=$(command -v go || echo /usr/local/go/bin/go)
"$PY" -c 'import requests' || {
    say "FAIL: python requests is not importable by $PY"
    exit 1
}

# ---------------------------------------------------------------- build
cargo build --release --examples
cargo build --release --features tls --example tls
target_dir="$(cargo metadata --format-version 1 --no-deps |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target_dir/release/examples"

# ---------------------------------------------------------------- harness
tmp="$(mktemp -d -t httpool-interop.XXXXXX)"
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        # Bounded: a process that ignores TERM gets KILL after ~5 s.
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ $KEEP_TMP == 1 ]]; then
        say "logs kept in $tmp"
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

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port NAME PID PORT LOG: waits (at most 10 s) until 127.0.0.1:PORT
# accepts; fails loudly with the log if the process exits or never listens.
wait_port() {
    local name=$1 pid=$2 port=$3 log=$4
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    say "FAIL: $name did not start listening on 127.0.0.1:$port; its log:"
    cat "$log" >&2
    exit 1
}

# start NAME PORT CMD...: runs CMD in the background (output to
# $tmp/NAME.log) and waits until PORT accepts.
start() {
    local name=$1 port=$2
    shift 2
    "$@" >"$tmp/$name.log" 2>&1 &
    pids+=($!)
    wait_port "$name" "$!" "$port" "$tmp/$name.log"
}

# start_unix NAME SOCKET CMD...: as start, for a server on a Unix domain
# socket: waits (at most 10 s) until a request on SOCKET is answered.
start_unix() {
    local name=$1 sock=$2 pid
    shift 2
    "$@" >"$tmp/$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do
        if curl --silent --max-time 2 --unix-socket "$sock" -o /dev/null http://localhost/ 2>/dev/null; then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    say "FAIL: $name did not answer on $sock; its log:"
    cat "$tmp/$name.log" >&2
    exit 1
}

# Every client call is bounded.
CURL=(curl --silent --show-error --max-time 30)

head -c 200000 /dev/urandom >"$tmp/200k.bin"
head -c 4096 /dev/urandom >"$tmp/4k.bin"

echo_port=$(free_port)
start echo "$echo_port" "$bin/echo" "127.0.0.1:$echo_port"
testolope_port=$(free_port)
start testolope "$testolope_port" "$bin/testolope" "127.0.0.1:$testolope_port"
# The client behind a proxy: examples/metrics trusts 127.0.0.1 (nginx and
# HAProxy connect from there); curl connects from 127.0.0.2, an address
# of its own, which the proxies forward and the example must log.
whoami_port=$(free_port)
TRUSTED_PROXIES=127.0.0.1 start whoami "$whoami_port" "$bin/metrics" "127.0.0.1:$whoami_port"
E="http://127.0.0.1:$echo_port"
sock="$tmp/echo.sock"
start_unix echo-unix "$sock" "$bin/echo" "unix:$sock"
echo_unix_pid=${pids[${#pids[@]} - 1]}

# ---------------------------------------------------------------- curl
say "curl $(curl --version | head -n 1 | cut -d' ' -f2) against echo on $E"

# Keep-alive: two URLs, one invocation; the second reuses the connection.
out=$("${CURL[@]}" -v -o /dev/null -o /dev/null -w '%{http_code}:%{num_connects} ' "$E/a" "$E/b" 2>"$tmp/curl-ka.err") || true
if [[ $out == "200:1 200:0 " ]] && grep -Eqi 're-?using existing' "$tmp/curl-ka.err"; then
    ok "curl keep-alive: 2 requests, 1 connection (curl -v: re-using existing connection)"
else
    not_ok "curl keep-alive: status:new-connections '$out', want '200:1 200:0 '; curl -v said: $(grep -Ei 'connect|re-?us|clos' "$tmp/curl-ka.err" | tr '\n' '|')"
fi

# Chunked uploads, echoed back exactly: `-T -` from stdin, and an explicit
# Transfer-Encoding with --data-binary.
out=$("${CURL[@]}" -T - -o "$tmp/echo-T.out" -w '%{http_code}' "$E/upload" <"$tmp/200k.bin" 2>&1) || true
if [[ $out == 200 ]] && cmp -s "$tmp/200k.bin" "$tmp/echo-T.out"; then
    ok "curl chunked upload (-T -, 200 KB) echoed exactly"
else
    not_ok "curl chunked upload (-T -): status '$out', echo matches: $(cmp -s "$tmp/200k.bin" "$tmp/echo-T.out" && echo yes || echo no)"
fi
out=$("${CURL[@]}" -v -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/200k.bin" -o "$tmp/echo-te.out" \
    -w '%{http_code}' "$E/upload" 2>"$tmp/curl-te.err") || true
if [[ $out == 200 ]] && cmp -s "$tmp/200k.bin" "$tmp/echo-te.out" &&
    grep -qi '^> Transfer-Encoding: chunked' "$tmp/curl-te.err"; then
    ok "curl chunked upload (Transfer-Encoding: chunked, --data-binary, 200 KB) echoed exactly"
else
    not_ok "curl chunked upload (--data-binary): status '$out', echo matches: $(cmp -s "$tmp/200k.bin" "$tmp/echo-te.out" && echo yes || echo no)"
fi

# HTTP/1.0: the server answers `Connection: close` and closes, so two URLs
# take two connections.
out=$("${CURL[@]}" --http1.0 -v -d hello -o "$tmp/h10.out" -o /dev/null -w '%{http_code}:%{num_connects} ' \
    "$E/a" "$E/b" 2>"$tmp/curl-h10.err") || true
if [[ $out == "200:1 200:1 " ]] && [[ $(cat "$tmp/h10.out") == hello ]] &&
    grep -qi '^< Connection: close' "$tmp/curl-h10.err" && grep -qi 'closing connection' "$tmp/curl-h10.err" &&
    ! grep -Eqi 're-?using existing' "$tmp/curl-h10.err"; then
    ok "curl --http1.0: Connection: close, curl closes, no reuse"
else
    not_ok "curl --http1.0: '$out' (want '200:1 200:1 '); curl -v said: $(grep -Ei '^< (HTTP|Connection)|clos|re-?us' "$tmp/curl-h10.err" | tr '\n' '|')"
fi

# Expect: 100-continue with a 4 KiB body: 100 first, then 200, echo matches.
out=$("${CURL[@]}" -v -H 'Expect: 100-continue' --data-binary @"$tmp/4k.bin" -o "$tmp/expect.out" \
    -w '%{http_code}' "$E/expect" 2>"$tmp/curl-expect.err") || true
statuses=$(grep -E '^< HTTP/' "$tmp/curl-expect.err" | tr -d '\r' | tr '\n' '|')
if [[ $out == 200 && $statuses == "< HTTP/1.1 100 Continue|< HTTP/1.1 200 OK|" ]] &&
    cmp -s "$tmp/4k.bin" "$tmp/expect.out"; then
    ok "curl Expect: 100-continue (4 KB): 100 Continue, then 200, echo matches"
else
    not_ok "curl Expect: 100-continue: status '$out', status lines '$statuses', echo matches: $(cmp -s "$tmp/4k.bin" "$tmp/expect.out" && echo yes || echo no)"
fi

# ---------------------------------------------------------------- python
say "python $("$PY" -c 'import sys, requests; print(sys.version.split()[0], "requests", requests.__version__)')"
if out=$(timeout 60 "$PY" ci/interop_clients.py "$echo_port" 2>&1); then
    echo "$out"
    passed=$((passed + $(grep -c '^ok - ' <<<"$out")))
else
    echo "$out" >&2
    not_ok "python clients (see above)"
fi

# client_checks NAME CMD...: runs a client program that prints an `ok - ...`
# line per check passed and a `NOT OK - ...` line per check failed; counts
# its ok lines, and one failure if it exits non-zero.
client_checks() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then
        echo "$out"
    else
        echo "$out" >&2
        not_ok "$name (see above)"
    fi
    passed=$((passed + $(grep -c '^ok - ' <<<"$out" || true)))
}

# ---------------------------------------------------------------- Go
# Offline: the program is one file using the standard library, run outside
# any module, with the installed toolchain (GOTOOLCHAIN=local) and no module
# proxy. The build cache is Go's own (default) unless it is off or unset.
go_env=(GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-buildvcs=false)
case $("$GO" env GOCACHE 2>/dev/null) in
"" | off) go_env+=("GOCACHE=$tmp/go-cache") ;;
esac
say "$("$GO" version)"
# Bounded: compiling net/http into an empty cache takes a minute or more.
client_checks "go net/http" env "${go_env[@]}" timeout 300 "$GO" run ci/interop_go.go "$echo_port" "$testolope_port"

# ---------------------------------------------------------------- Node.js
say "node $(node --version)"
client_checks "node fetch" timeout 60 node ci/interop_node.mjs "$echo_port"

# ---------------------------------------------------------------- TLS
tls_port=$(free_port)
mkdir -p "$tmp/tls"
# The example writes its self-signed certificate to the temporary directory.
TMPDIR="$tmp/tls" start tls "$tls_port" "$bin/tls" "127.0.0.1:$tls_port"
pem="$tmp/tls/httpool-example-cert.pem"
T="https://localhost:$tls_port"
out=$("${CURL[@]}" -v --cacert "$pem" --resolve "localhost:$tls_port:127.0.0.1" -o "$tmp/tls-a.out" -o "$tmp/tls-b.out" \
    -w '%{http_code}:%{num_connects} ' "$T/a" "$T/b" 2>"$tmp/curl-tls.err") || true
if [[ $out == "200:1 200:0 " && $(cat "$tmp/tls-a.out") == "secure hello from /a" &&
    $(cat "$tmp/tls-b.out") == "secure hello from /b" ]]; then
    ok "curl HTTPS with --cacert: verified, 2 requests on 1 connection"
else
    not_ok "curl HTTPS: '$out' (want '200:1 200:0 '); curl -v said: $(grep -Ei 'SSL|TLS|error|connect|re-?us' "$tmp/curl-tls.err" | head -n 8 | tr '\n' '|')"
fi

# ---------------------------------------------------------------- nginx
nginx_port=$(free_port)
ngx="$tmp/nginx"
mkdir -p "$ngx/logs" "$ngx/temp"
cat >"$ngx/nginx.conf" <<EOF
user root root;
worker_processes 1;
daemon off;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log warn;
events { worker_connections 1024; }
http {
    log_format upstream '\$status \$upstream_status \$upstream_addr \$upstream_connect_time \$request_time';
    access_log $ngx/logs/access.log upstream buffer=64k flush=1s;
    client_body_temp_path $ngx/temp/client;
    proxy_temp_path $ngx/temp/proxy;
    fastcgi_temp_path $ngx/temp/fastcgi;
    uwsgi_temp_path $ngx/temp/uwsgi;
    scgi_temp_path $ngx/temp/scgi;

    upstream testolope {
        server 127.0.0.1:$testolope_port;
        keepalive 32;
        # Below httpool's idle timeout (5 s): nginx drops an idle connection
        # before the server does, so it never sends on one being closed.
        keepalive_timeout 4s;
        # nginx closes an upstream connection after 1000 requests by default
        # (~35 new connections a second under this load); keep them all.
        keepalive_requests ${UPSTREAM_KEEPALIVE_REQUESTS:-1000000};
    }
    upstream echo {
        server 127.0.0.1:$echo_port;
        keepalive 32;
        keepalive_timeout 4s;
    }
    upstream whoami {
        server 127.0.0.1:$whoami_port;
        keepalive 8;
        keepalive_timeout 4s;
    }
    upstream echo_unix {
        server unix:$sock;
        keepalive 8;
        keepalive_timeout 4s;
    }
    server {
        listen 127.0.0.1:$nginx_port;
        location /testolope {
            proxy_pass http://testolope;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /whoami {
            proxy_pass http://whoami;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
            proxy_set_header X-Request-Id \$request_id;
        }
        location /unix/ {
            proxy_pass http://echo_unix;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /echo {
            proxy_pass http://echo;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_request_buffering off;
            client_max_body_size 16m;
        }
    }
}
EOF
"$NGINX" -t -q -p "$ngx" -c "$ngx/nginx.conf" 2>"$tmp/nginx-t.log" || {
    cat "$tmp/nginx-t.log" >&2
    say "FAIL: nginx rejected its configuration"
    exit 1
}
start nginx "$nginx_port" "$NGINX" -p "$ngx" -c "$ngx/nginx.conf"
N="http://127.0.0.1:$nginx_port"
say "$("$NGINX" -v 2>&1) on $N, wrk: -t2 -c$WRK_CONNECTIONS -d${WRK_DURATION}s"

# A chunked upload streamed through nginx to echo.
out=$("${CURL[@]}" -v -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/200k.bin" -o "$tmp/nginx-echo.out" \
    -w '%{http_code}' "$N/echo" 2>"$tmp/curl-nginx-echo.err") || true
if [[ $out == 200 ]] && cmp -s "$tmp/200k.bin" "$tmp/nginx-echo.out"; then
    ok "nginx → echo: chunked upload (200 KB, proxy_request_buffering off) echoed exactly"
else
    not_ok "nginx → echo chunked upload: status '$out', echo matches: $(cmp -s "$tmp/200k.bin" "$tmp/nginx-echo.out" && echo yes || echo no)"
fi

# echo on a Unix domain socket behind nginx; stopped by SIGTERM, it
# removes its socket file; killed, it leaves the file, and the next server
# started on the path replaces it.
unix_echoed() {
    local out
    out=$("${CURL[@]}" --data-binary @"$tmp/4k.bin" -o "$tmp/nginx-unix.out" -w '%{http_code}' "$N/unix/$1" 2>&1) || true
    [[ $out == 200 ]] && cmp -s "$tmp/4k.bin" "$tmp/nginx-unix.out"
}
if unix_echoed a && unix_echoed b; then
    ok "nginx → echo on a Unix domain socket: two 4 KB bodies echoed exactly"
else
    not_ok "nginx → echo on a Unix domain socket: $(tail -n 3 "$ngx/logs/error.log" | tr '\n' '|')"
fi
kill -TERM "$echo_unix_pid"
unix_rc=0
wait "$echo_unix_pid" || unix_rc=$?
if [[ $unix_rc == 0 && ! -e $sock ]]; then
    ok "echo on a Unix domain socket: SIGTERM stops it (exit 0) and its socket file is removed"
else
    not_ok "echo on a Unix domain socket after SIGTERM: exit $unix_rc, socket file left: $([[ -e $sock ]] && echo yes || echo no)"
fi
start_unix echo-unix-killed "$sock" "$bin/echo" "unix:$sock"
killed_pid=${pids[${#pids[@]} - 1]}
kill -KILL "$killed_pid"
wait "$killed_pid" 2>/dev/null || true
left=$([[ -S $sock ]] && echo yes || echo no)
start_unix echo-unix-again "$sock" "$bin/echo" "unix:$sock"
if [[ $left == yes ]] && unix_echoed c; then
    ok "a socket file left by a killed server is replaced by the next one, served behind nginx"
else
    not_ok "restart on a Unix socket file left by SIGKILL: file left '$left'; $(tail -n 3 "$tmp/echo-unix-again.log" | tr '\n' '|')"
fi

# whoami_checks NAME URL: through the proxy NAME at URL, curl from
# 127.0.0.2 is the client the example answers and logs, with the request
# id it answers; the same headers spoofed by curl straight to the example
# are ignored.
whoami_checks() {
    local name=$1 url=$2 body id
    body=$("${CURL[@]}" --interface 127.0.0.2 -D "$tmp/whoami-$name.head" "$url/whoami" 2>&1) || true
    id=$(tr -d '\r' <"$tmp/whoami-$name.head" 2>/dev/null | awk -F': ' 'tolower($1) == "x-request-id" { print $2 }')
    if [[ $(head -n 1 <<<"$body") == 127.0.0.2 && -n $id && $(sed -n 4p <<<"$body") == "$id" ]] &&
        grep -q "^127\.0\.0\.2 - - .*\"GET /whoami HTTP/1.1\" 200 .* $id\$" "$tmp/whoami.log"; then
        ok "$name → examples/metrics: the client 127.0.0.2 answered and logged, request id $id"
    else
        not_ok "$name → whoami: answered '$(tr '\n' '|' <<<"$body")', id '$id', log tail: $(tail -n 2 "$tmp/whoami.log" | tr '\n' '|')"
    fi
}
whoami_checks nginx "$N"
# nginx's own id (32 hex digits) was taken: it comes from a trusted proxy.
if [[ $(sed -n 4p <<<"$("${CURL[@]}" "$N/whoami" 2>&1)") =~ ^[0-9a-f]{32}$ ]]; then
    ok "nginx's \$request_id is the request's id"
else
    not_ok "nginx's \$request_id was not taken: $(tail -n 1 "$tmp/whoami.log")"
fi
out=$("${CURL[@]}" --interface 127.0.0.2 -H 'X-Forwarded-For: 6.6.6.6' -H 'X-Forwarded-Proto: https' \
    -H 'X-Request-Id: spoofed-id' "http://127.0.0.1:$whoami_port/whoami" 2>&1) || true
if [[ $(head -n 2 <<<"$out" | tr '\n' ' ') == "127.0.0.2 http " && $(sed -n 4p <<<"$out") != spoofed-id ]] &&
    grep -q '^127\.0\.0\.2 - - .*"GET /whoami HTTP/1.1" 200 ' "$tmp/whoami.log" && ! grep -q '^6\.6\.6\.6 ' "$tmp/whoami.log"; then
    ok "spoofed X-Forwarded-For, X-Forwarded-Proto and X-Request-Id from an untrusted peer ignored"
else
    not_ok "spoofed forwarding headers: answered '$(tr '\n' '|' <<<"$out")'; log tail: $(tail -n 1 "$tmp/whoami.log")"
fi

out=$("${CURL[@]}" -w ' %{http_code}' "$N/testolope") || true
if [[ $out == "Testolope 200" ]]; then
    ok "nginx → testolope: GET /testolope"
else
    not_ok "nginx → testolope: '$out', want 'Testolope 200'"
fi

# wrk through nginx, sampling the sockets to testolope's port every second:
# nginx's side of established connections (distinct local ports over the
# run = upstream connections used) and TIME-WAIT on either side (closed
# connections).
sample() {
    sleep 1 # let wrk open its connections
    while :; do
        ss -Htn state established "( dport = :$testolope_port )" >"$tmp/ss-now"
        cat "$tmp/ss-now" >>"$tmp/ss-established"
        echo "$(wc -l <"$tmp/ss-now")" \
            "$(ss -Htn state time-wait "( sport = :$testolope_port )" | wc -l)" \
            "$(ss -Htn state time-wait "( dport = :$testolope_port )" | wc -l)" >>"$tmp/ss-samples"
        sleep 1
    done
}
: >"$tmp/ss-established"
: >"$tmp/ss-samples"
sample &
sampler=$!
pids+=("$sampler")
timeout $((WRK_DURATION + 30)) wrk -t2 -c"$WRK_CONNECTIONS" -d"${WRK_DURATION}s" "$N/testolope" >"$tmp/wrk.out" 2>&1 || true
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
sed 's/^/    wrk: /' "$tmp/wrk.out"
# Let nginx flush its buffered access log (flush=1s).
sleep 2

requests=$(awk '/requests in/ { print $1 }' "$tmp/wrk.out")
non2xx=$(awk -F: '/Non-2xx or 3xx responses/ { gsub(/ /, "", $2); print $2 }' "$tmp/wrk.out")
socket_errors=$(grep 'Socket errors' "$tmp/wrk.out" || true)
read -r logged log_5xx log_502_504 log_499 < <(awk '
    { n++ } $1 ~ /^5/ { e++ } $1 == 502 || $1 == 504 { b++ } $1 == 499 { c++ }
    END { print n + 0, e + 0, b + 0, c + 0 }' "$ngx/logs/access.log")
# TIME-WAIT is left on the side that closed first: server or nginx.
read -r est_min est_max tw_server tw_nginx < <(awk '
    NR == 1 || $1 < min { min = $1 } $1 > max { max = $1 } $2 > tws { tws = $2 } $3 > twn { twn = $3 }
    END { print min + 0, max + 0, tws + 0, twn + 0 }' "$tmp/ss-samples")
tw_max=$((tw_server > tw_nginx ? tw_server : tw_nginx))
distinct=$(awk '{ print $3 }' "$tmp/ss-established" | sort -u | wc -l)
samples=$(wc -l <"$tmp/ss-samples")
upstream_errors=$(grep -Ec 'upstream prematurely closed|reset by peer|upstream timed out|no live upstreams' "$ngx/logs/error.log" || true)
per_conn=$((${requests:-0} / (distinct > 0 ? distinct : 1)))

echo "nginx numbers: wrk requests ${requests:-?}, non-2xx ${non2xx:-0}, access log lines $logged" \
    "(5xx $log_5xx, 502/504 $log_502_504, 499 $log_499), upstream errors in error.log $upstream_errors;" \
    "testolope sockets over $samples samples: established min $est_min max $est_max," \
    "distinct upstream connections $distinct (~$per_conn requests each)," \
    "TIME-WAIT max $tw_server closed by testolope, $tw_nginx closed by nginx"

if [[ -n $requests && $requests -gt 0 && -z $non2xx ]]; then
    ok "nginx → testolope under wrk: $requests requests, no non-2xx responses${socket_errors:+ ($socket_errors)}"
else
    not_ok "nginx → testolope under wrk: requests '${requests:-none}', non-2xx '${non2xx:-0}'"
fi
if ((log_502_504 == 0 && log_5xx == 0 && logged > 0)); then
    ok "nginx access log: $logged requests, no 5xx (502/504: 0)"
else
    not_ok "nginx access log: $logged lines, $log_5xx 5xx ($log_502_504 502/504); error.log tail: $(tail -n 3 "$ngx/logs/error.log" | tr '\n' '|')"
fi
if ((upstream_errors == 0)); then
    ok "nginx error log: no upstream resets, premature closes or timeouts"
else
    not_ok "nginx error log: $upstream_errors upstream errors: $(grep -E 'upstream|reset' "$ngx/logs/error.log" | head -n 3 | tr '\n' '|')"
fi
if ((samples > 0 && est_max > 0 && est_max <= UPSTREAM_CONN_MAX && distinct <= UPSTREAM_CONN_MAX && tw_max <= UPSTREAM_CONN_MAX)); then
    ok "nginx → testolope connections reused: $distinct distinct, at most $est_max open, TIME-WAIT at most $tw_max"
else
    not_ok "nginx → testolope connections not reused: $distinct distinct, at most $est_max open, TIME-WAIT at most $tw_max (limit $UPSTREAM_CONN_MAX)"
fi

# ---------------------------------------------------------------- HAProxy
# testolope behind HAProxy: plaintext load with a blocking route mixed in
# (two wrk runs at once), server connections reused (http-reuse always).
# Judged by HAProxy's own counters (its CSV stats page): no 5xx, no
# connection or response errors, no retries; and by wrk: no non-2xx
# answers, no socket errors.
haproxy_port=$(free_port)
hap="$tmp/haproxy"
mkdir -p "$hap"
cat >"$hap/haproxy.cfg" <<EOF
global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 4s
    option http-keep-alive
    # A request sent on a pooled connection the server closed meanwhile
    # is sent again (none should be: see pool-purge-delay).
    retries 2
    retry-on conn-failure empty-response
frontend web
    bind 127.0.0.1:$haproxy_port
    stats enable
    stats uri /haproxy-stats
    use_backend whoami if { path /whoami }
    default_backend testolope
backend whoami
    # X-Forwarded-For with the client's address.
    option forwardfor
    server w1 127.0.0.1:$whoami_port
backend testolope
    http-reuse always
    # Idle server connections are dropped below httpool's idle timeout
    # (5 s), so HAProxy never sends on one the server is closing.
    server t1 127.0.0.1:$testolope_port pool-purge-delay 2s
EOF
"$HAPROXY" -c -q -f "$hap/haproxy.cfg" >"$tmp/haproxy-c.log" 2>&1 || {
    cat "$tmp/haproxy-c.log" >&2
    say "FAIL: haproxy rejected its configuration"
    exit 1
}
start haproxy "$haproxy_port" "$HAPROXY" -db -f "$hap/haproxy.cfg"
H="http://127.0.0.1:$haproxy_port"
say "$("$HAPROXY" -v | head -n 1) on $H, wrk: -t2 -c$WRK_CONNECTIONS /testolope and -t1 -c16 /sleep, -d${WRK_DURATION}s"
whoami_checks HAProxy "$H"
out=$("${CURL[@]}" -o "$tmp/haproxy-get.out" -w '%{http_code}' "$H/testolope" 2>&1) || true
if [[ $out == 200 && $(cat "$tmp/haproxy-get.out") == Testolope ]]; then
    ok "HAProxy → testolope: GET /testolope"
else
    not_ok "HAProxy → testolope: '$out' '$(cat "$tmp/haproxy-get.out" 2>/dev/null)', want 'Testolope' 200"
fi
timeout $((WRK_DURATION + 30)) wrk -t1 -c16 -d"${WRK_DURATION}s" "$H/sleep" >"$tmp/wrk-hap-sleep.out" 2>&1 &
sleeper=$!
timeout $((WRK_DURATION + 30)) wrk -t2 -c"$WRK_CONNECTIONS" -d"${WRK_DURATION}s" "$H/testolope" >"$tmp/wrk-hap.out" 2>&1 || true
wait "$sleeper" || true
sed 's/^/    wrk: /' "$tmp/wrk-hap.out"
sed 's/^/    wrk \/sleep: /' "$tmp/wrk-hap-sleep.out"
"${CURL[@]}" "$H/haproxy-stats;csv" >"$tmp/haproxy-stats.csv" 2>&1 || true
# The backend's row: 5xx answers, connection and response errors, retries,
# redispatches, and the sessions it took.
hap_counts=$("$PY" - "$tmp/haproxy-stats.csv" <<'PYEOF' || true
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]).read().lstrip("# ").splitlines()))
row = next(r for r in rows if r["pxname"] == "testolope" and r["svname"] == "BACKEND")
print(*(row[k] or "0" for k in ("hrsp_5xx", "econ", "eresp", "wretr", "wredis", "stot")))
PYEOF
)
read -r hap_5xx hap_econ hap_eresp hap_wretr hap_wredis hap_sessions <<<"$hap_counts" || true
for f in wrk-hap wrk-hap-sleep; do
    requests=$(awk '/requests in/ { print $1 }' "$tmp/$f.out")
    non2xx=$(awk -F: '/Non-2xx or 3xx responses/ { gsub(/ /, "", $2); print $2 }' "$tmp/$f.out")
    socket_errors=$(grep 'Socket errors' "$tmp/$f.out" || true)
    route=$([[ $f == wrk-hap ]] && echo /testolope || echo "/sleep (blocks 50 ms)")
    if [[ -n $requests && $requests -gt 0 && -z $non2xx && -z $socket_errors ]]; then
        ok "HAProxy → testolope $route under wrk: $requests requests, no non-2xx, no socket errors"
    else
        not_ok "HAProxy → testolope $route under wrk: requests '${requests:-none}', non-2xx '${non2xx:-0}', ${socket_errors:-no socket errors}"
    fi
done
echo "HAProxy numbers: backend 5xx ${hap_5xx:-?}, connection errors ${hap_econ:-?}, response errors ${hap_eresp:-?}," \
    "retries ${hap_wretr:-?}, redispatches ${hap_wredis:-?}, backend sessions ${hap_sessions:-?}"
if [[ ${hap_5xx:-x} == 0 && ${hap_econ:-x} == 0 && ${hap_eresp:-x} == 0 && ${hap_wretr:-x} == 0 && ${hap_wredis:-x} == 0 ]]; then
    ok "HAProxy counters: no 5xx, no connection or response errors, no retries"
else
    not_ok "HAProxy counters: 5xx '${hap_5xx:-?}', econ '${hap_econ:-?}', eresp '${hap_eresp:-?}', retries '${hap_wretr:-?}', redispatches '${hap_wredis:-?}'"
fi

# ---------------------------------------------------------------- summary
for name in echo testolope tls; do
    if grep -Eqi 'panicked|error' "$tmp/$name.log"; then
        not_ok "$name logged errors: $(head -n 3 "$tmp/$name.log" | tr '\n' '|')"
    fi
done
echo "interop: $passed passed, $failed failed"
((failed == 0))

#!/usr/bin/env bash
# Static files: httpool's examples/static_files against nginx (one worker
# process, sendfile on) serving the same directory, side by side in
# interleaved rounds with wrk keep-alive: a 3 KB and a 1 MiB file. Prints
# the medians of req/s, p99 and server CPU µs per request, and per-round
# ratios to nginx.
#
#   bash benches/scripts/static.sh                          # 5 rounds of 5 s, wrk -t2 -c64
#   ROUNDS=9 DURATION=5 bash benches/scripts/static.sh
#   FILES=3k bash benches/scripts/static.sh                 # the small file only
#   BEFORE=/tmp/old/static_files bash benches/scripts/static.sh   # and another build, as "before"
#
# Environment as benches/scripts/wrk.sh (ROUNDS, DURATION, CONNECTIONS, PIN, WARMUP),
# plus FILES ("3k 1m"), BASE_PORT (19101) and BEFORE (a static_files binary
# of another commit, taking ADDR DIR, run as a third server). Installs nginx and wrk when
# missing. Only 127.0.0.1 is used; nginx runs in the foreground with its own
# configuration, logs and pid file under a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
BENCH_LIB=1 source benches/scripts/wrk.sh

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5}
FILES=${FILES:-3k 1m}
BASE_PORT=${BASE_PORT:-19101}
TARGET=${CARGO_TARGET_DIR:-target}

need_wrk
need_taskset
command -v nginx >/dev/null || {
    echo "installing nginx" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
}
cargo build --release --features fs --example static_files

WORK=$(mktemp -d /tmp/static-bench.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/site" "$WORK/nginx"
head -c 3072 /dev/urandom | base64 -w 76 | head -c 3072 >"$WORK/site/3k.html"
head -c 1048576 /dev/urandom >"$WORK/site/1m.bin"
chmod -R a+rX "$WORK/site"

HTTPOOL_PORT=$BASE_PORT
NGINX_PORT=$((BASE_PORT + 1))
cat >"$WORK/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    # wrk keeps its 64 connections for the whole run; nginx's default
    # closes one every 1000 requests, which httpool never does.
    keepalive_requests 100000000;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $WORK/site;
    }
}
CONF

declare -A CMD PORT
CMD[httpool]="$TARGET/release/examples/static_files 127.0.0.1:$HTTPOOL_PORT $WORK/site"
PORT[httpool]=$HTTPOOL_PORT
CMD[nginx]="nginx -c $WORK/nginx/nginx.conf -e $WORK/nginx/error.log"
PORT[nginx]=$NGINX_PORT

SERVERS=(httpool nginx)
if [[ -n ${BEFORE:-} ]]; then
    CMD[before]="$BEFORE 127.0.0.1:$((BASE_PORT + 2)) $WORK/site"
    PORT[before]=$((BASE_PORT + 2))
    SERVERS+=(before)
fi

RESULTS=$(mktemp /tmp/static-results.XXXXXX)
trap 'stop_all' EXIT
echo "FILES=$FILES ROUNDS=$ROUNDS DURATION=${DURATION}s PIN=$PIN; site: $WORK/site" >&2
show_load
for ((round = 1; round <= ROUNDS; round++)); do
    # Rotate which server goes first, so none always follows another.
    order=()
    for ((i = 0; i < ${#SERVERS[@]}; i++)); do
        order+=("${SERVERS[(i + round - 1) % ${#SERVERS[@]}]}")
    done
    for s in "${order[@]}"; do
        # shellcheck disable=SC2086 # CMD holds a command and its arguments
        start_server "$s" "${PORT[$s]}" ${CMD[$s]}
        pid=$SERVER_PID
        # nginx serves from its one worker process: count that one's CPU.
        [[ $s == nginx ]] && pid=$(pgrep -P "$SERVER_PID" | head -n1)
        for f in $FILES; do
            case $f in
            3k) url=http://127.0.0.1:${PORT[$s]}/3k.html ;;
            1m) url=http://127.0.0.1:${PORT[$s]}/1m.bin ;;
            *)
                echo "unknown file $f (3k, 1m)" >&2
                exit 1
                ;;
            esac
            if ! curl -fsS -o /dev/null "$url"; then
                echo "$s: GET $url failed" >&2
                exit 1
            fi
            ((WARMUP > 0)) && run_wrk "$url" "$WARMUP" >/dev/null
            measure "$s" "$f" "$url" "$pid" "$round"
            sleep 1
        done
        stop_server "$SERVER_PID"
        sleep 1
    done
done
summarize nginx
show_load
echo "raw results: $RESULTS" >&2

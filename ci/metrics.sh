#!/usr/bin/env bash
# Metrics against a real Prometheus: examples/metrics answers a few
# requests, `promtool check metrics` (Debian's prometheus package) passes
# its /metrics, then a prometheus server scrapes it every second and its
# HTTP API must report the requests counted under their route pattern,
# their latency histogram and the server's counters.
#
#   bash ci/metrics.sh
#
# Installs what is missing (curl, python3, prometheus; `apt-get update`
# once, only if something must be installed). Ends with
# `metrics: N passed, M failed` and exits 1 if anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "metrics: $*" >&2; }

# ---------------------------------------------------------------- installs
need_apt=()
command -v curl >/dev/null || need_apt+=(curl)
command -v python3 >/dev/null || need_apt+=(python3)
command -v promtool >/dev/null || need_apt+=(prometheus)
if ((${#need_apt[@]})); then
    say "installing ${need_apt[*]}"
    # Debian's prometheus package would start a system prometheus on port
    # 9090: keep services from starting while it installs.
    made_policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        made_policy=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    ((made_policy)) && rm -f /usr/sbin/policy-rc.d
fi
PROMETHEUS=$(command -v prometheus || echo /usr/bin/prometheus)

# ---------------------------------------------------------------- build
cargo build --release --example metrics
target_dir="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target_dir/release/examples"

# ---------------------------------------------------------------- harness
tmp="$(mktemp -d -t httpool-metrics.XXXXXX)"
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
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
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME URL CMD...: runs CMD in the background (output to
# $tmp/NAME.log) and polls URL (at most 30 s) until it answers.
start() {
    local name=$1 url=$2
    shift 2
    "$@" >"$tmp/$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 300); do
        curl --silent --max-time 2 -o /dev/null "$url" && return 0
        kill -0 "${pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    say "FAIL: $name did not answer $url; its log:"
    cat "$tmp/$name.log" >&2
    exit 1
}

CURL=(curl --silent --show-error --max-time 10)

# ---------------------------------------------------------------- the example
app_port=$(free_port)
A="http://127.0.0.1:$app_port"
start example "$A/testolope" "$bin/metrics" "127.0.0.1:$app_port"
for path in /notes/1 /notes/2 /notes/3 /notes/x /no/such/path /whoami; do
    "${CURL[@]}" -o /dev/null "$A$path"
done
"${CURL[@]}" "$A/metrics" >"$tmp/scrape.txt"
if grep -qx 'httpool_requests_total{route="/notes/{id}",status="2xx"} 3' "$tmp/scrape.txt" &&
    grep -qx 'httpool_requests_total{route="/notes/{id}",status="4xx"} 1' "$tmp/scrape.txt" &&
    grep -qx 'httpool_requests_total{route="unmatched",status="4xx"} 1' "$tmp/scrape.txt" &&
    ! grep -q 'no/such' "$tmp/scrape.txt"; then
    ok "/metrics counts by route pattern and status class (no raw path)"
else
    not_ok "/metrics: $(grep '^httpool_requests_total' "$tmp/scrape.txt" | tr '\n' '|')"
fi
if promtool check metrics <"$tmp/scrape.txt" >"$tmp/promtool.out" 2>&1; then
    ok "promtool check metrics: $(grep -c '^# TYPE' "$tmp/scrape.txt") metric families, no problems"
else
    not_ok "promtool check metrics: $(head -n 5 "$tmp/promtool.out" | tr '\n' '|')"
fi

# ---------------------------------------------------------------- prometheus
prom_port=$(free_port)
P="http://127.0.0.1:$prom_port"
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: httpool
    static_configs:
      - targets: ['127.0.0.1:$app_port']
EOF
promtool check config "$tmp/prometheus.yml" >/dev/null
start prometheus "$P/-/ready" "$PROMETHEUS" --config.file="$tmp/prometheus.yml" \
    --storage.tsdb.path="$tmp/data" --web.listen-address="127.0.0.1:$prom_port"
say "$("$PROMETHEUS" --version 2>&1 | head -n 1) on $P, scraping $A/metrics every second"

# query EXPR: the value of the query's first sample, or nothing.
query() {
    "${CURL[@]}" -G --data-urlencode "query=$1" "$P/api/v1/query" 2>/dev/null | python3 -c '
import json, sys
result = json.load(sys.stdin)["data"]["result"]
print(result[0]["value"][1] if result else "")' 2>/dev/null || true
}

# until_value NAME EXPR WANT: polls the query (at most 60 s, each answer
# checked at once) until it gives WANT.
until_value() {
    local name=$1 expr=$2 want=$3 got=""
    for _ in $(seq 120); do
        got=$(query "$expr")
        if [[ $got == "$want" ]]; then
            ok "prometheus: $name = $got"
            return 0
        fi
        sleep 0.5
    done
    not_ok "prometheus: $name: '$got', want '$want' ($expr)"
}

until_value "up" 'up{job="httpool"}' 1
until_value "requests to /notes/{id} answered 2xx" \
    'httpool_requests_total{job="httpool",route="/notes/{id}",status="2xx"}' 3
until_value "requests no route matched" 'httpool_requests_total{job="httpool",route="unmatched"} > 0' 1
until_value "latency observations of /notes/{id}" \
    'httpool_request_duration_seconds_count{job="httpool",route="/notes/{id}"}' 4
until_value "median latency of /notes/{id} at most 5 ms" \
    'histogram_quantile(0.5, httpool_request_duration_seconds_bucket{job="httpool",route="/notes/{id}"}) <= bool 0.005' 1
until_value "connections accepted, as the server counts them, at least 8" \
    'httpool_connections_accepted_total{job="httpool"} >= bool 8' 1
# Scrapes are requests too: the count of /metrics grows while Prometheus
# scrapes.
until_value "scrapes counted under /metrics" \
    'httpool_requests_total{job="httpool",route="/metrics",status="2xx"} >= bool 3' 1

echo "metrics: $passed passed, $failed failed"
((failed == 0))

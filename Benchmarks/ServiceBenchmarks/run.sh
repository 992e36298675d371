#!/usr/bin/env bash
# Issue 6's service figures against a real listd (release build, loopback only).
# This script starts listd and nginx; the ServiceBenchmarks tool itself only talks to them.
#  1. 10,000 parked long-polls on one list, one PATCH: time until all are answered, RSS per waiter;
#     then, against the same listd, 10,000 server-sent-event streams, one PATCH (followers);
#     then the streams alone on a fresh listd, for their RSS per stream
#  2. wrk -t1 -c64 on a 1,000-item snapshot: listd vs nginx serving the same bytes
#  3. a client 10,000 versions behind: first (computed) and second (shared) answer time
# Needs: apt-get install -y wrk nginx-light
set -euo pipefail
source "$(dirname "$0")/lib.sh"
duration="${DURATION:-10s}"
parked="${PARKED:-10000}"
writes="${WRITES:-10000}"
port="${PORT:-8080}"

# listd listens with SO_REUSEPORT: a second listd (or anything else) on the
# same port would silently take half the connections. Refuse to share.
for busy in "$port" 8082; do
    if ss -Htln "sport = :$busy" | grep -q .; then
        echo "port $busy is already in use; set PORT=... (nginx uses 8082)" >&2
        exit 1
    fi
done

work="$(mktemp -d)"
mkdir -p "$work/html" "$work/tmp"
cleanup() {
    [ -n "${nginx_pid:-}" ] && kill "$nginx_pid" 2>/dev/null || true
    [ -n "${listd_pid:-}" ] && kill "$listd_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

start_listd() {
    rm -f "$work"/db.sqlite*
    # listd's descriptor limit: the hard limit (the parked figure needs one per waiter).
    (ulimit -n "$(ulimit -Hn)"; exec "$bin/listd" serve --port "$port" --db "$work/db.sqlite" \
        --migrations Migrations "$@" > "$work/listd.log" 2>&1) &
    listd_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && return; sleep 0.1; done
    cat "$work/listd.log"; exit 1
}
stop_listd() { kill "$listd_pid"; wait "$listd_pid" 2>/dev/null || true; listd_pid=""; }

echo "cores: $(nproc); listd: default event loops; nginx: worker_processes auto; wrk -t1"

start_listd
echo "== 1. $bin/ServiceBenchmarks followers $port $listd_pid $parked"
"$bin/ServiceBenchmarks" followers "$port" "$listd_pid" "$parked"
stop_listd

start_listd
echo "== 1b. $bin/ServiceBenchmarks streams $port $listd_pid $parked"
"$bin/ServiceBenchmarks" streams "$port" "$listd_pid" "$parked"
stop_listd

start_listd
path="$("$bin/ServiceBenchmarks" snapshot "$port" "$work/html/snapshot.json" 1000)"
chmod -R a+rX "$work"
nginx -p "$work" -c "$here/nginx.conf" &
nginx_pid=$!
sleep 1
curl -s -o /dev/null -w "listd: %{http_code} %{size_download} bytes %{content_type}\n" "http://127.0.0.1:$port$path"
curl -s -o /dev/null -w "nginx: %{http_code} %{size_download} bytes %{content_type}\n" "http://127.0.0.1:8082$path"
for round in 1 2; do
    for target in "nginx 8082" "listd $port"; do
        set -- $target
        echo "== 2. ($round) $1: wrk -t1 -c64 -d$duration http://127.0.0.1:$2$path   (load average: $(cat /proc/loadavg))"
        wrk -t1 -c64 -d"$duration" "http://127.0.0.1:$2$path" | grep -E "Requests/sec|Latency|requests in|Socket errors|Non-2xx"
    done
done
kill "$nginx_pid"; wait "$nginx_pid" 2>/dev/null || true; nginx_pid=""
stop_listd

start_listd
echo "== 3. $bin/ServiceBenchmarks behind $port $writes"
"$bin/ServiceBenchmarks" behind "$port" "$writes"
stop_listd

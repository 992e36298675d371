#!/usr/bin/env bash
# Runs the Server benchmarks (release build, loopback only):
#  1. wrk against nginx and HTTPBenchmarks serving the same 2 KB JSON file, at -c64 and -c256
#  2. 10,000 parked requests: RSS per parked connection, time from the event to all answers
# Needs: apt-get install -y wrk nginx-light
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
swift build -c release --product HTTPBenchmarks 2>&1 | tail -1
bin="$(swift build -c release --show-bin-path)/HTTPBenchmarks"
duration="${DURATION:-10s}"
parked="${PARKED:-10000}"

prefix="$(mktemp -d)"
mkdir -p "$prefix/html" "$prefix/tmp"
cp "$here/body.json" "$prefix/html/body.json"
chmod -R a+rX "$prefix"
cleanup() {
    [ -n "${nginx_pid:-}" ] && kill "$nginx_pid" 2>/dev/null || true
    [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$prefix"
}
trap cleanup EXIT

nginx -p "$prefix" -c "$here/nginx.conf" &
nginx_pid=$!
"$bin" serve "$here/body.json" 8081 &
server_pid=$!
sleep 1
echo "cores: $(nproc); nginx workers: auto ($(nproc)); HTTPBenchmarks loops: default ($(nproc)); wrk -t1"
curl -s -o /dev/null -w "nginx:  %{http_code} %{size_download} bytes\n" http://127.0.0.1:8082/items
curl -s -o /dev/null -w "listd:  %{http_code} %{size_download} bytes\n" http://127.0.0.1:8081/items
for connections in 64 256; do
    for target in "nginx 8082" "listd 8081"; do
        set -- $target
        echo "== $1 wrk -t1 -c$connections -d$duration http://127.0.0.1:$2/items"
        wrk -t1 -c"$connections" -d"$duration" "http://127.0.0.1:$2/items" | grep -E "Requests/sec|Latency|requests in|Socket errors|Non-2xx"
    done
done
kill "$nginx_pid" "$server_pid"
wait "$nginx_pid" "$server_pid" 2>/dev/null || true
nginx_pid=""
server_pid=""

echo "== $parked parked requests"
"$bin" parked-server > "$prefix/parked.out" &
server_pid=$!
for _ in $(seq 50); do grep -q port "$prefix/parked.out" 2>/dev/null && break; sleep 0.1; done
port="$(awk '/port/ {print $2}' "$prefix/parked.out")"
cat "$prefix/parked.out"
"$bin" parked-client "$port" "$parked"

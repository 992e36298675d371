#!/usr/bin/env bash
# Before and after, same run: this tree's listd and HTTPBenchmarks against those
# built in another checkout (BASE, e.g. a worktree of an older commit, built with
# `swift build -c release --product listd` and `--product HTTPBenchmarks`), in
# alternating rounds, with nginx beside them:
#  A. the server alone: HTTPBenchmarks serving a 2 KB file, wrk -t1 -c64, and nginx
#  B. GET of a 1,000-item list's snapshot through listd, wrk -t1 -c64, and nginx serving the same bytes
#  C. 10,000 parked long-polls, one write: PATCH sent -> all answered (ServiceBenchmarks parked)
#  D. single-op PATCH updateItem on a 1,000-item list, wrk -t1 -c64
# One ServiceBenchmarks client (this tree's) drives both listds.
# Usage: BASE=/path/to/old/checkout [ROUNDS=3] [DURATION=5s] Benchmarks/ServiceBenchmarks/compare.sh
# Needs: apt-get install -y wrk nginx-light
set -euo pipefail
source "$(dirname "$0")/lib.sh"
swift build -c release --product HTTPBenchmarks 2>&1 | tail -1
base="${BASE:?set BASE to a checkout with release builds of listd and HTTPBenchmarks}"
base_bin="$(cd "$base" && swift build -c release --show-bin-path)"
rounds="${ROUNDS:-3}"
duration="${DURATION:-5s}"
port="${PORT:-18480}"
for busy in "$port" 8081 8082; do
    if ss -Htln "sport = :$busy" | grep -q .; then echo "port $busy is in use" >&2; exit 1; fi
done
work="$(mktemp -d)"
mkdir -p "$work/html" "$work/tmp"
cleanup() {
    for pid in ${nginx_pid:-} ${server_pid:-}; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# start_listd BIN MIGRATIONS: a fresh database each time.
start_listd() {
    rm -f "$work"/db.sqlite*
    (ulimit -n "$(ulimit -Hn)"; exec "$1/listd" serve --port "$port" --db "$work/db.sqlite" --migrations "$2" \
        > "$work/listd.log" 2>&1) &
    server_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && return; sleep 0.1; done
    cat "$work/listd.log"; exit 1
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
rate() { wrk -t1 -c64 -d"$duration" "$@" | awk '/Requests\/sec/ { print $2 }'; }

cp "$root/Benchmarks/HTTPBenchmarks/body.json" "$work/html/body.json"
chmod -R a+rX "$work"
nginx -p "$work" -c "$root/Benchmarks/HTTPBenchmarks/nginx.conf" &
nginx_pid=$!
sleep 1
echo "cores: $(nproc); base: $base ($(git -C "$base" rev-parse --short HEAD)); after: $(git rev-parse --short HEAD)"
for round in $(seq "$rounds"); do
    echo "== round $round (load average: $(cat /proc/loadavg))"
    for side in base after; do
        if [ "$side" = base ]; then b="$base_bin"; m="$base/Migrations"; else b="$bin"; m="$root/Migrations"; fi
        "$b/HTTPBenchmarks" serve "$root/Benchmarks/HTTPBenchmarks/body.json" 8081 > /dev/null &
        server_pid=$!
        sleep 0.5
        cp "$root/Benchmarks/HTTPBenchmarks/body.json" "$work/html/body.json"
        echo "A. $side server: $(rate http://127.0.0.1:8081/items) req/s; nginx: $(rate http://127.0.0.1:8082/items) req/s"
        stop_server

        start_listd "$b" "$m"
        path="$("$bin/ServiceBenchmarks" snapshot "$port" "$work/html/snapshot.json" 1000)"
        # nginx serves body.json for every path: now the snapshot's bytes.
        cp "$work/html/snapshot.json" "$work/html/body.json"
        chmod a+r "$work/html/body.json"
        echo "B. $side listd GET $path: $(rate "http://127.0.0.1:$port$path") req/s; nginx: $(rate "http://127.0.0.1:8082$path") req/s"
        items="$("$bin/ServiceBenchmarks" make "$port" 1000 writes query)"
        echo "D. $side PATCH: $(LIST_PATH="$items" ITEMS=1000 rate -s "$here/update.lua" "http://127.0.0.1:$port") writes/s"
        stop_server

        start_listd "$b" "$m"
        echo "C. $side: $("$bin/ServiceBenchmarks" parked "$port" "$server_pid" 10000 | grep "PATCH sent -> all")"
        stop_server
    done
done

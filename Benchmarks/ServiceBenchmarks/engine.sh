#!/usr/bin/env bash
# Issue 10's change-engine figures against a real listd (release build, loopback only).
#  1. wrk -t1 -c64 single-op PATCH updateItem: a 10-item and a 100,000-item list in one
#     listd, interleaved rounds (10, 100k, 10, 100k); then a 1,000,000-item list
#  2. per list size: RSS, one-change answers (changes?since=V-1), a client 10,000 random
#     single-op versions behind (ServiceBenchmarks engine)
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
duration="${DURATION:-10s}"
port="${PORT:-8080}"
big="${BIG:-1000000}"
single_listd
rate() {  # rate ITEMS PATH
    LIST_PATH="$2" ITEMS="$1" wrk -t1 -c64 -d"$duration" -s "$here/update.lua" "http://127.0.0.1:$port" \
        | awk -v n="$1" '/Requests\/sec/ { printf "%s items: %s writes/s", n, $2 } /Latency/ { lat = $2 } END { printf " (mean latency %s)\n", lat }'
}

echo "cores: $(nproc); load average: $(cat /proc/loadavg)"
start_listd
small="$("$bin/ServiceBenchmarks" make "$port" 10 small)"
large="$("$bin/ServiceBenchmarks" make "$port" 100000 large)"
echo "== 1. wrk -t1 -c64 -d$duration -s update.lua, interleaved (load average: $(cat /proc/loadavg))"
for round in 1 2; do
    rate 10 "$small"
    rate 100000 "$large"
done
stop_listd

for items in 10 100000; do
    start_listd
    "$bin/ServiceBenchmarks" engine "$port" "$listd_pid" "$items" "l$items"
    stop_listd
done

if [ "$big" -gt 0 ]; then
    start_listd
    echo "== $big items"
    "$bin/ServiceBenchmarks" engine "$port" "$listd_pid" "$big" "huge" 10000
    rate "$big" /lists/huge
    stop_listd
fi

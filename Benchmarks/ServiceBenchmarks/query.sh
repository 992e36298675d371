#!/usr/bin/env bash
# Issue 14's item-query figures against a real listd (release build, loopback only).
#  1. ServiceBenchmarks query: first/middle/last page of 100, where= on an indexed path
#     with 1% matches, q= with a 5-character term, on a BIG-item list (default 1,000,000)
#  2. wrk -t1 -c64 single-op PATCH updateItem on two 100,000-item lists in one listd,
#     one with indexes on k and name and the text index, one with none, interleaved rounds
#     (ROUNDS, default 2, after 3 s of uncounted writes to each)
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
duration="${DURATION:-10s}"
port="${PORT:-8080}"
big="${BIG:-1000000}"
single_listd
rate() {  # rate LABEL PATH
    LIST_PATH="$2" ITEMS=100000 wrk -t1 -c64 -d"$duration" -s "$here/update-query.lua" "http://127.0.0.1:$port" \
        | awk -v n="$1" '/Requests\/sec/ { printf "%s: %s writes/s", n, $2 } /Latency/ { lat = $2 } END { printf " (mean latency %s)\n", lat }'
}

echo "cores: $(nproc); load average: $(cat /proc/loadavg)"
start_listd
echo "== 1. $big items (load average: $(cat /proc/loadavg))"
"$bin/ServiceBenchmarks" query "$port" "$big" huge
stop_listd

start_listd
plain="$("$bin/ServiceBenchmarks" make "$port" 100000 plain query)"
indexed="$("$bin/ServiceBenchmarks" make "$port" 100000 indexed query)"
curl -sf -X PUT "http://127.0.0.1:$port$indexed/indexes/k" > /dev/null
curl -sf -X PUT "http://127.0.0.1:$port$indexed/indexes/name" > /dev/null
curl -sf -X PUT "http://127.0.0.1:$port$indexed/text-index" > /dev/null
# Building the indexes left megabytes of log to checkpoint: 3 s of writes to each list first, not
# counted, so both are measured in the same steady state (caches warm, the log back to its usual size).
for warm in "$plain" "$indexed"; do
    LIST_PATH="$warm" ITEMS=100000 wrk -t1 -c64 -d3s -s "$here/update-query.lua" "http://127.0.0.1:$port" > /dev/null
done
echo "== 2. wrk -t1 -c64 -d$duration -s update-query.lua, interleaved (load average: $(cat /proc/loadavg))"
for round in $(seq "${ROUNDS:-2}"); do
    rate "100000 items, no index" "$plain"
    rate "100000 items, indexes on k, name + text" "$indexed"
done
stop_listd

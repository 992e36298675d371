#!/usr/bin/env bash
# Issue 21's writer-thread figure against a real listd (release build, loopback only):
# CPU of the store's writer thread ("store-writer", from /proc/PID/task/*/stat) per
# single-op write (wrk -t1 -c64 update.lua) on a 100,000-item list, with no followers
# and with FOLLOWERS event streams open on the list (ServiceBenchmarks sse-hold), in
# alternating rounds in one listd. With BASE (a checkout with a release listd), each
# round runs that build's listd too, on a fresh database, for before/after in one run.
# [BASE=...] PORT=8080 ITEMS=100000 FOLLOWERS=100 ROUNDS=3 DURATION=10 writercpu.sh
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
port="${PORT:-8080}"
items="${ITEMS:-100000}"
followers="${FOLLOWERS:-100}"
rounds="${ROUNDS:-3}"
duration="${DURATION:-10}"
single_listd
ticks_per_second=$(getconf CLK_TCK)
writer_ticks() {  # utime + stime of the thread named store-writer
    for task in /proc/"$listd_pid"/task/*; do
        if [ "$(cat "$task/comm")" = store-writer ]; then
            awk '{ print $14 + $15 }' "$task/stat"
            return
        fi
    done
    echo "no store-writer thread in listd $listd_pid" >&2
    exit 1
}
streams() { curl -sf "http://127.0.0.1:$port/metrics" | awk '/^listd_event_streams / { print int($2) }'; }
measure() {  # measure LABEL: one wrk run; prints writes/s and writer CPU per write
    local before after requests
    before=$(writer_ticks)
    requests=$(LIST_PATH="$list_path" ITEMS="$items" wrk -t1 -c64 -d"${duration}s" -s "$here/update.lua" \
        "http://127.0.0.1:$port" | awk '/requests in/ { print $1 }')
    after=$(writer_ticks)
    awk -v label="$1" -v n="$requests" -v t=$((after - before)) -v hz="$ticks_per_second" -v d="$duration" \
        'BEGIN { printf "%s: %.0f writes/s, writer thread %.1f us/write\n", label, n / d, t / hz * 1e6 / n }'
}

echo "cores: $(nproc); load average: $(cat /proc/loadavg)"
for round in $(seq "$rounds"); do
    for build in $builds; do
        start_listd_of "$build"
        make_list "$items" writercpu
        LIST_PATH="$list_path" ITEMS="$items" wrk -t1 -c64 -d3s -s "$here/update.lua" "http://127.0.0.1:$port" > /dev/null
        measure "round $round, $build, no followers"
        "$bin/ServiceBenchmarks" sse-hold "$port" "$list" "$followers" $((duration + 30)) > "$work/hold.txt" &
        holder=$!
        for _ in $(seq 300); do [ "$(streams)" -ge "$followers" ] && break; sleep 0.1; done
        measure "round $round, $build, $(streams) event streams"
        kill "$holder" 2>/dev/null || true
        wait "$holder" 2>/dev/null || true
        stop_listd
    done
done

#!/usr/bin/env bash
# Issue 21's catch-up figure against a real listd (release build, loopback only):
# single-op writes/s (wrk -t1 -c64, update.lua) on a 100,000-item list alone, then
# while CLIENTS clients continuously catch up from 1,000-8,000 versions behind
# (ServiceBenchmarks catchup), in alternating rounds in one listd; then a client
# 10,000 single-op versions behind, and 20 more such first answers (ServiceBenchmarks
# engine's figures). With BASE (a
# checkout with a release listd), each round runs that build's listd too, for before/after.
# [BASE=...] PORT=8080 ITEMS=100000 CLIENTS=4 ROUNDS=3 DURATION=10 catchup.sh
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
port="${PORT:-8080}"
items="${ITEMS:-100000}"
clients="${CLIENTS:-4}"
rounds="${ROUNDS:-3}"
duration="${DURATION:-10}"
single_listd
rate() {  # rate SECONDS: prints writes/s and wrk's latency line
    LIST_PATH="$list_path" ITEMS="$items" wrk -t1 -c64 -d"${1}s" --latency -s "$here/update.lua" "http://127.0.0.1:$port" \
        | awk '/Requests\/sec/ { rps = $2 } /^ +99%/ { p99 = $2 } END { printf "%s writes/s, p99 %s\n", rps, p99 }'
}

echo "cores: $(nproc); load average: $(cat /proc/loadavg)"
for round in $(seq "$rounds"); do
    for build in $builds; do
        start_listd_of "$build"
        make_list "$items" catchup
        # History to catch up through: more than 10,000 versions before measuring.
        while :; do
            rate 3 > /dev/null
            # The ETag is "<epoch>-<version>".
            version=$(curl -sf -o /dev/null -D - "http://127.0.0.1:$port/lists/$list" | tr -d '\r"' \
                | awk -F- 'tolower($0) ~ /^etag:/ { print $NF }')
            [ "$version" -gt 10000 ] && break
        done
        alone=$(rate "$duration")
        "$bin/ServiceBenchmarks" catchup "$port" "$list" "$clients" "$duration" 1000 8000 > "$work/catchup.txt" &
        catching=$!
        beside=$(rate "$duration")
        wait "$catching"
        a=$(echo "$alone" | awk '{print $1}')
        b=$(echo "$beside" | awk '{print $1}')
        echo "round $round, $build (list at v$version): alone $alone; with $clients catching up $beside;" \
            "ratio $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')x"
        echo "    $(cat "$work/catchup.txt")"
        stop_listd
    done
done
for build in $builds; do
    start_listd_of "$build"
    echo "$build: $("$bin/ServiceBenchmarks" engine "$port" "$listd_pid" "$items" behind 10000 | grep -E "behind by|more first answers" || true)"
    stop_listd
done

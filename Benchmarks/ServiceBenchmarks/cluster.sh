#!/usr/bin/env bash
# Issue 12's figures: two listd instances on one throwaway PostgreSQL 15 (release build, loopback).
#  6. durable single-op writes/s through both instances (wrk, 64 connections in all),
#     then pgbench -N at 64 clients on the same server, in the same run (ROUNDS times, alternating)
#  4. 10,000 long-polls spread over both instances, one write on A: until all are answered
#  5. 100 writes/s on A, one follower on B: write sent -> follower answered, p50/p99
# Needs: apt-get install -y postgresql wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
duration="${DURATION:-10}"
rounds="${ROUNDS:-2}"
parked="${PARKED:-10000}"
port_a="${PORT_A:-18081}"
port_b="${PORT_B:-18082}"
for busy in "$port_a" "$port_b"; do
    if ss -Htln "sport = :$busy" | grep -q .; then echo "port $busy is in use; set PORT_A/PORT_B" >&2; exit 1; fi
done

export LISTD_POSTGRES_DIR="${LISTD_POSTGRES_DIR:-/tmp/listd-cluster-bench-$(id -u)}"
url=$(.ci/postgres start)
work="$(mktemp -d)"
cleanup() {
    for pid in ${pid_a:-} ${pid_b:-}; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    .ci/postgres stop || true
    rm -rf "$work"
}
trap cleanup EXIT
psql() { "$pgbin/psql" -q -v ON_ERROR_STOP=1 "$@"; }
echo "PostgreSQL: $("$pgbin/postgres" --version); synchronous_commit=$(psql "$url" -Atc 'SHOW synchronous_commit'), fsync=$(psql "$url" -Atc 'SHOW fsync')"

start_pair() {
    psql "$url" -c "DROP DATABASE IF EXISTS bench WITH (FORCE)" -c "CREATE DATABASE bench"
    db=${url%/postgres}/bench
    (ulimit -n "$(ulimit -Hn)"; exec "$bin/listd" serve --port "$port_a" --store "$db" --migrations Migrations \
        > "$work/a.log" 2>&1) &
    pid_a=$!
    # The second waits for the first's migrations.
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port_a/healthz" > /dev/null && break; sleep 0.1; done
    (ulimit -n "$(ulimit -Hn)"; exec "$bin/listd" serve --port "$port_b" --store "$db" --migrations Migrations \
        > "$work/b.log" 2>&1) &
    pid_b=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port_b/healthz" > /dev/null && return; sleep 0.1; done
    cat "$work/a.log" "$work/b.log"; exit 1
}
stop_pair() { kill "$pid_a" "$pid_b"; wait "$pid_a" "$pid_b" 2>/dev/null || true; pid_a=""; pid_b=""; }

writes_per_second() { awk '/Requests\/sec/ { print $2 }' "$1"; }

for round in $(seq "$rounds"); do
    start_pair
    for i in $(seq 0 15); do
        curl -sf -o /dev/null -X POST "localhost:$port_a/lists" \
            -d "{\"id\":\"bench$i\",\"name\":\"\",\"sections\":[{\"id\":\"s\",\"model\":{}}]}"
    done
    echo "== 6. ($round) listd: wrk -t1 -c32 -d${duration}s on each instance, single-op PATCH (load average: $(cat /proc/loadavg))"
    wrk -t1 -c32 -d"${duration}s" -s "$here/cluster-patch.lua" "http://127.0.0.1:$port_a" > "$work/wrk-a" &
    wrk_a=$!
    wrk -t1 -c32 -d"${duration}s" -s "$here/cluster-patch.lua" "http://127.0.0.1:$port_b" > "$work/wrk-b"
    wait "$wrk_a"
    grep -hE "Non-2xx|Socket errors" "$work/wrk-a" "$work/wrk-b" || true
    a=$(writes_per_second "$work/wrk-a"); b=$(writes_per_second "$work/wrk-b")
    listd=$(echo "$a + $b" | bc)
    stop_pair
    "$pgbin/pgbench" -i -s 10 -q "${url%/postgres}/bench" > /dev/null 2>&1
    echo "== 6. ($round) pgbench -N -c 64 -j 2 -T $duration (load average: $(cat /proc/loadavg))"
    pg=$("$pgbin/pgbench" -N -c 64 -j 2 -T "$duration" "${url%/postgres}/bench" 2>/dev/null \
        | awk '/^tps/ { print $3; exit }')
    echo "listd: $a + $b = $listd writes/s; pgbench -N: $pg tps; ratio $(echo "scale=2; $listd / $pg" | bc)"
done

start_pair
echo "== 4. $bin/ServiceBenchmarks cluster $port_a $port_b $parked (load average: $(cat /proc/loadavg))"
"$bin/ServiceBenchmarks" cluster "$port_a" "$port_b" "$parked"
echo "== 5. $bin/ServiceBenchmarks crosswake $port_a $port_b 10 (load average: $(cat /proc/loadavg))"
"$bin/ServiceBenchmarks" crosswake "$port_a" "$port_b" 10
stop_pair

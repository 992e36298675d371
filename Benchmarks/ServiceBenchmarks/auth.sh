#!/usr/bin/env bash
# Issue 23's figures against a real listd (release build, loopback only):
#  1. FLOOD connections without a token, each announcing 32 MiB and sending it
#     without waiting for 100 Continue (ServiceBenchmarks unauth-flood): listd's
#     peak VmRSS growth (goal < 64 MiB), and the write rate of an authenticated
#     writer (wrk, update-auth.lua) alone and beside the flood.
#  2. GET throughput of one list's snapshot (wrk, auth.lua) with the static
#     write token and with a signed token, HS256 and then EdDSA, in alternating
#     rounds in one listd per key (goal: signed >= 0.9x static).
# PORT=8080 ITEMS=1000 FLOOD=64 DURATION=10 ROUNDS=3 auth.sh
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
port="${PORT:-8080}"
items="${ITEMS:-1000}"
flood="${FLOOD:-64}"
duration="${DURATION:-10}"
rounds="${ROUNDS:-3}"
single_listd
write_token="bench-write-token"
export LISTD_TOKEN="$write_token"
"$bin/listd" token keygen --hs256 --out "$work/hs256.key" > /dev/null
"$bin/listd" token keygen --ed25519 --out "$work/ed25519.key" > /dev/null

echo "cores: $(nproc); load average: $(cat /proc/loadavg)"
rate() {  # rate SCRIPT CONNECTIONS [env...]: requests/s of one wrk run
    local script="$1" connections="$2"
    shift 2
    env "$@" wrk -t1 -c"$connections" -d"${duration}s" -s "$here/$script" "http://127.0.0.1:$port" \
        | awk '/Requests\/sec/ { printf "%.0f", $2 }'
}

echo "== 1. $flood unauthenticated connections announcing 32 MiB each"
LISTD_WRITE_TOKEN="$write_token" start_listd
make_list "$items" auth-bench
alone=$(rate update-auth.lua 16 LIST_PATH="$list_path" ITEMS="$items" TOKEN="$write_token")
"$bin/ServiceBenchmarks" unauth-flood "$port" "$listd_pid" "$flood" 32 "$duration" > "$work/flood.txt" &
flooder=$!
sleep 0.5
beside=$(rate update-auth.lua 16 LIST_PATH="$list_path" ITEMS="$items" TOKEN="$write_token")
wait "$flooder"
cat "$work/flood.txt"
awk -v a="$alone" -v b="$beside" 'BEGIN { printf "authenticated writes/s: alone %d, beside the flood %d (%.2fx)\n", a, b, b / a }'
stop_listd

for algorithm in hs256 ed25519; do
    echo "== 2. GET /lists/{id} with the static token vs a signed $algorithm token"
    LISTD_WRITE_TOKEN="$write_token" start_listd --token-key "$work/$algorithm.key"
    make_list "$items" auth-bench
    signed=$("$bin/listd" token mint --key "$work/$algorithm.key" --lists 'auth-*' --rights read --ttl 1h --sub bench)
    for round in $(seq "$rounds"); do
        static_rate=$(rate auth.lua 64 LIST_PATH="$list_path" TOKEN="$write_token")
        signed_rate=$(rate auth.lua 64 LIST_PATH="$list_path" TOKEN="$signed")
        awk -v r="$round" -v s="$static_rate" -v t="$signed_rate" -v alg="$algorithm" \
            'BEGIN { printf "round %d: static %d GET/s, signed %s %d GET/s (%.2fx)\n", r, s, alg, t, t / s }'
    done
    stop_listd
done

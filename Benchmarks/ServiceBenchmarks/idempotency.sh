#!/usr/bin/env bash
# The Idempotency-Key figure against a real listd (release build, loopback only):
# single-op writes/s (wrk -t1 -c64) on a list of ITEMS items, without a key
# (update.lua) and with a fresh key per request (update-idempotent.lua: a UUIDv7
# as listd's clients make them, so keys arrive in the order they were made), in
# alternating rounds in one listd, so both see the same machine, then a round
# with keys in no order (KEYS=random: random UUIDv4s, as other clients send).
# SQLite by default; with STORE=postgres://... on that database (a fresh list per run).
# Each line also gives listd's CPU a write (utime + stime of every thread, from
# /proc over the round's requests) and, on SQLite, the writer thread's: the key's
# cost on the one thread that bounds the rate, without the disk's noise in writes/s.
# [STORE=postgres://...] PORT=8080 ITEMS=10000 ROUNDS=3 DURATION=10 [RANDOM_KEYS=0] idempotency.sh
# Ends with the median of the rounds' ratios (a fresh key each / without a key) and of
# the CPU a write (the same ratio the other way up: cost).
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
port="${PORT:-8080}"
items="${ITEMS:-10000}"
rounds="${ROUNDS:-3}"
duration="${DURATION:-10}"
single_listd
ticks_per_second=$(getconf CLK_TCK)
writer_ticks() {  # utime + stime of listd's thread named store-writer (SQLite's writer); nothing if none
    for task in /proc/"$listd_pid"/task/*; do
        if [ "$(cat "$task/comm" 2>/dev/null)" = store-writer ]; then
            awk '{ print $14 + $15 }' "$task/stat"
            return
        fi
    done
}
listd_ticks() {  # utime + stime of the whole listd process (every thread)
    awk '{ print $14 + $15 }' "/proc/$listd_pid/stat"
}
measure() {  # measure LABEL SCRIPT [KEYS]: one wrk run; prints writes/s, the writer thread's and listd's CPU a write
    local requests before after process_before process_after
    process_before=$(listd_ticks)
    before=$(writer_ticks)
    requests=$(KEYS="${3:-}" LIST_PATH="$list_path" ITEMS="$items" wrk -t1 -c64 -d"${duration}s" -s "$here/$2" \
        "http://127.0.0.1:$port" | awk '/requests in/ { print $1 }')
    after=$(writer_ticks)
    process_after=$(listd_ticks)
    last_process=$(awk -v n="$requests" -v b="$process_before" -v a="$process_after" -v hz="$ticks_per_second" \
        'BEGIN { printf "%.2f", (a - b) / hz * 1e6 / n }')
    last_rate=$(awk -v n="$requests" -v d="$duration" 'BEGIN { printf "%.1f", n / d }')
    last_writer=$(awk -v n="$requests" -v b="$before" -v a="$after" -v hz="$ticks_per_second" \
        'BEGIN { if (b != "" && a != "") printf "%.2f", (a - b) / hz * 1e6 / n }')
    awk -v label="$1" -v n="$requests" -v d="$duration" -v b="$before" -v a="$after" -v hz="$ticks_per_second" \
        'BEGIN { printf "%s: %.0f writes/s", label, n / d
                 if (b != "" && a != "") printf ", writer thread %.1f us/write", (a - b) / hz * 1e6 / n
                 printf "\n" }'
    echo "    listd (all threads): $last_process us/write"
}

echo "cores: $(nproc); load average: $(cat /proc/loadavg); store: ${STORE:+postgres}${STORE:-sqlite}"
if [ -n "${STORE:-}" ]; then
    (ulimit -n "$(ulimit -Hn)"; exec "$bin/listd" serve --port "$port" --store "$STORE" --migrations Migrations \
        > "$work/listd.log" 2>&1) &
    listd_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done
else
    start_listd
fi
make_list "$items" "idempotency-$$"
LIST_PATH="$list_path" ITEMS="$items" wrk -t1 -c64 -d3s -s "$here/update.lua" "http://127.0.0.1:$port" > /dev/null
fresh_ratios=()
writer_ratios=()
process_ratios=()
random_ratios=()
for round in $(seq "$rounds"); do
    # Which kind runs first alternates (AB BA ...): a drift of the machine's
    # speed within a round then favours neither.
    if [ $((round % 2)) = 1 ]; then
        measure "round $round, without a key" update.lua
        without=$last_rate without_writer=$last_writer without_process=$last_process
        measure "round $round, a fresh key each" update-idempotent.lua
        fresh=$last_rate fresh_writer=$last_writer fresh_process=$last_process
    else
        measure "round $round, a fresh key each" update-idempotent.lua
        fresh=$last_rate fresh_writer=$last_writer fresh_process=$last_process
        measure "round $round, without a key" update.lua
        without=$last_rate without_writer=$last_writer without_process=$last_process
    fi
    process_ratios+=("$(awk -v a="$fresh_process" -v b="$without_process" 'BEGIN { printf "%.2f", a / b }')")
    if [ -n "$fresh_writer" ] && [ -n "$without_writer" ]; then
        writer_ratios+=("$(awk -v a="$fresh_writer" -v b="$without_writer" 'BEGIN { printf "%.2f", a / b }')")
    fi
    fresh_ratios+=("$(awk -v a="$fresh" -v b="$without" 'BEGIN { printf "%.2f", a / b }')")
    if [ "${RANDOM_KEYS:-1}" = 1 ]; then
        measure "round $round, a fresh random key each" update-idempotent.lua random
        random_ratios+=("$(awk -v a="$last_rate" -v b="$without" 'BEGIN { printf "%.2f", a / b }')")
    fi
done
stop_listd
# The machine's speed drifts by tens of percent within seconds here (2 shared
# cores), so the figure is the median of the rounds' ratios: many short rounds
# (ROUNDS=15 DURATION=1) give a steadier one than a few long ones.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.2f", NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
echo "fresh key / without, by round: ${fresh_ratios[*]}; median $(median "${fresh_ratios[@]}")x (goal >= 0.9x)"
if [ "${#writer_ratios[@]}" -gt 0 ]; then
    echo "writer thread's CPU a write, fresh key / without, by round: ${writer_ratios[*]}; median $(median "${writer_ratios[@]}")x"
fi
echo "listd's CPU a write (all threads), fresh key / without, by round: ${process_ratios[*]}; median $(median "${process_ratios[@]}")x"
if [ "${#random_ratios[@]}" -gt 0 ]; then
    echo "random key / without, by round: ${random_ratios[*]}; median $(median "${random_ratios[@]}")x"
fi

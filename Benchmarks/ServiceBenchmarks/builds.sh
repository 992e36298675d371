#!/usr/bin/env bash
# Two listd builds side by side on SQLite (release, loopback only): the
# base (BASE, a checkout of an older commit with its own release build) and
# this tree's, each serving its own list of ITEMS items, loaded in
# alternating rounds of DURATION seconds (which goes first alternates too),
# so both see the same machine. Per round: single-op writes/s (wrk -t1 -c64,
# SCRIPT, update.lua by default) and the writer thread's CPU a write; at the
# end, the medians of the rounds' ratios (this tree / base). On this
# machine's two shared cores the speed drifts by ±20% within seconds; a
# build against itself gives medians within 1-2% of 1.00 over 20 rounds.
# BASE=/path/to/checkout PORT=8080 ITEMS=10000 ROUNDS=20 DURATION=1 [SCRIPT=update-idempotent.lua] builds.sh
# Needs: apt-get install -y wrk
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -n "${BASE:-}" ] || { echo "set BASE to a checkout of the commit to compare with (release build made)" >&2; exit 1; }
port="${PORT:-8080}"
items="${ITEMS:-10000}"
rounds="${ROUNDS:-20}"
duration="${DURATION:-1}"
script="${SCRIPT:-update.lua}"
work="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
serve() {  # serve BINARY_DIR MIGRATIONS PORT: starts a listd on a fresh database
    (ulimit -n "$(ulimit -Hn)"; exec "$1/listd" serve --port "$3" --db "$work/$3.sqlite" --migrations "$2" \
        > "$work/$3.log" 2>&1) &
    pids+=($!)
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$3/healthz" > /dev/null && return; sleep 0.1; done
    cat "$work/$3.log"; exit 1
}
for p in "$port" $((port + 1)); do
    if ss -Htln "sport = :$p" | grep -q .; then echo "port $p is in use; set PORT=..." >&2; exit 1; fi
done
serve "$base_bin" "$BASE/Migrations" "$port"
serve "$bin" Migrations $((port + 1))
base_pid=${pids[0]} after_pid=${pids[1]}
base_list="$("$bin/ServiceBenchmarks" make "$port" "$items" builds-base)"
after_list="$("$bin/ServiceBenchmarks" make $((port + 1)) "$items" builds-after)"
writer_ticks() {  # utime + stime of the listd's thread named store-writer
    for task in /proc/"$1"/task/*; do
        if [ "$(cat "$task/comm" 2>/dev/null)" = store-writer ]; then awk '{ print $14 + $15 }' "$task/stat"; return; fi
    done
}
ticks_per_second=$(getconf CLK_TCK)
round_of() {  # round_of PID PORT LIST_PATH: prints "writes/s writer-us-a-write"
    local before after requests
    before=$(writer_ticks "$1")
    requests=$(LIST_PATH="$3" ITEMS="$items" wrk -t1 -c64 -d"${duration}s" -s "$here/$script" \
        "http://127.0.0.1:$2" | awk '/requests in/ { print $1 }')
    after=$(writer_ticks "$1")
    awk -v n="$requests" -v d="$duration" -v b="$before" -v a="$after" -v hz="$ticks_per_second" \
        'BEGIN { printf "%.1f %.2f\n", n / d, (a - b) / hz * 1e6 / n }'
}
echo "cores: $(nproc); load average: $(cat /proc/loadavg); base: $(git -C "$BASE" log -1 --format='%h %s' | cut -c1-60)"
round_of "$base_pid" "$port" "$base_list" > /dev/null
round_of "$after_pid" $((port + 1)) "$after_list" > /dev/null
rate_ratios=()
writer_ratios=()
for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then
        read -r base_rate base_writer < <(round_of "$base_pid" "$port" "$base_list")
        read -r after_rate after_writer < <(round_of "$after_pid" $((port + 1)) "$after_list")
    else
        read -r after_rate after_writer < <(round_of "$after_pid" $((port + 1)) "$after_list")
        read -r base_rate base_writer < <(round_of "$base_pid" "$port" "$base_list")
    fi
    echo "round $round: base $base_rate writes/s, writer $base_writer us/write; this tree $after_rate writes/s, writer $after_writer us/write"
    rate_ratios+=("$(awk -v a="$after_rate" -v b="$base_rate" 'BEGIN { printf "%.3f", a / b }')")
    writer_ratios+=("$(awk -v a="$after_writer" -v b="$base_writer" 'BEGIN { printf "%.3f", a / b }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.3f", NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
echo "this tree / base: writes/s median $(median "${rate_ratios[@]}")x; writer thread's CPU a write median $(median "${writer_ratios[@]}")x"

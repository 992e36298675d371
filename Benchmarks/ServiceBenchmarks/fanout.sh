#!/usr/bin/env bash
# Issue 21's fan-out figure, listd and nginx + nchan in the same run (loopback only):
#   long-poll: COUNT parked long-polls, one write, time to the last answer
#              (listd: ServiceBenchmarks parked; nchan: ServiceBenchmarks nchan-parked)
#   SSE:       COUNT event streams, one write, time to the last event
#              (listd: ServiceBenchmarks streams; nchan: ServiceBenchmarks nchan-sse)
# Each figure on a freshly started server (listd: fresh SQLite database), in
# ROUNDS alternating rounds (odd rounds listd first, even rounds nchan first);
# then a table of listd/nchan ratios per round and their medians.
# Target: listd <= 0.5x nchan on both.
# Both figures are also taken on ServiceBenchmarks floor-server (Floor.swift: two
# threads that do nothing but keep the subscribers and send each one fixed answer
# or event, one send() each), in the same rounds: the floor, what the kernel and
# the client cost on this machine, and its ratio to nchan's. FLOOR=0 skips it.
# Usage: [ROUNDS=3] [COUNT=10000] [SCRATCH=.build] Benchmarks/ServiceBenchmarks/fanout.sh
# Needs: apt-get install -y nginx-light libnginx-mod-nchan
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
rounds="${ROUNDS:-3}"
count="${COUNT:-10000}"
scratch="${SCRATCH:-.build}"
# Each run is bounded: the tool itself gives up after a minute per phase.
run_timeout="${RUN_TIMEOUT:-300}"

# Every server and the client hold one descriptor per connection.
hard="$(ulimit -Hn)"
need=$((count + 100))
if [ "$hard" = unlimited ]; then
    nofile=1048576
elif [ "$hard" -lt "$need" ]; then
    echo "fanout.sh: the descriptor hard limit (ulimit -Hn) is $hard: too low for $count connections," \
        "which need at least $need in the client and in each server. Raise it or set COUNT lower." >&2
    exit 1
else
    nofile="$hard"
fi
module="$(dpkg -L libnginx-mod-nchan 2>/dev/null | grep '/ngx_nchan_module\.so$' | head -n 1 || true)"
if [ -z "$module" ] || ! command -v nginx > /dev/null; then
    echo "fanout.sh: needs nginx and nchan: apt-get install -y nginx-light libnginx-mod-nchan" >&2
    exit 1
fi

# With --static-swift-stdlib, as lib.sh builds: one release build serves every script.
swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product listd 2>&1 | tail -n 1
swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product ServiceBenchmarks 2>&1 | tail -n 1
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2> /dev/null || true
        wait "$server_pid" 2> /dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A loopback port nothing uses (below the ephemeral range the client's connections take).
free_port() {
    local candidate
    for _ in $(seq 100); do
        candidate=$((20000 + RANDOM % 12000))
        if ! ss -Htan "( sport = :$candidate or dport = :$candidate )" | grep -q .; then
            echo "$candidate"
            return
        fi
    done
    echo "fanout.sh: no free loopback port found" >&2
    return 1
}

# wait_ready PATH LOG [ok]: until the server on $port answers PATH (any status; with
# "ok", a 2xx: listd answers 503 while it opens its database), or fail with LOG.
wait_ready() {
    local flags=-s
    if [ "${3:-}" = ok ]; then flags=-sf; fi
    for _ in $(seq 100); do
        if curl "$flags" -o /dev/null "http://127.0.0.1:$port$1"; then return; fi
        if ! kill -0 "$server_pid" 2> /dev/null; then break; fi
        sleep 0.1
    done
    echo "fanout.sh: the server did not start:" >&2
    cat "$2" >&2
    exit 1
}

start_listd() {
    port="$(free_port)"
    rm -f "$work"/db.sqlite*
    # listd's descriptor limit: the hard limit (one per waiter).
    (ulimit -n "$nofile"; exec "$bin/listd" serve --port "$port" --db "$work/db.sqlite" --migrations Migrations \
        > "$work/listd.log" 2>&1) &
    server_pid=$!
    wait_ready /healthz "$work/listd.log" ok
}

start_nchan() {
    port="$(free_port)"
    rm -rf "$work/nginx"
    mkdir -p "$work/nginx/tmp"
    sed -e "s|@NCHAN_MODULE@|$module|" -e "s|@NOFILE@|$nofile|g" -e "s|@PORT@|$port|" \
        "$here/nchan.conf" > "$work/nginx/nchan.conf"
    # nginx's workers run as nobody when the master is root.
    chmod -R a+rX "$work"
    (ulimit -n "$nofile"; exec nginx -e "$work/nginx/error.log" -p "$work/nginx/" -c "$work/nginx/nchan.conf" \
        > "$work/nginx/stdout.log" 2>&1) &
    server_pid=$!
    wait_ready /pub/ready "$work/nginx/error.log"
}

start_floor() {
    port="$(free_port)"
    ("$bin/ServiceBenchmarks" floor-server "$port" > "$work/floor.log" 2>&1) &
    server_pid=$!
    wait_ready /count "$work/floor.log"
}

stop_server() {
    kill "$server_pid"
    wait "$server_pid" 2> /dev/null || true
    server_pid=""
}

declare -A sent answered
# measure ROUND SIDE MODE: one figure on a fresh server; keeps "PATCH/publish
# sent -> all" and "answered -> all" in sent[ROUND,SIDE,MODE], answered[...].
measure() {
    local round="$1" side="$2" mode="$3" command output complete
    case "$side,$mode" in
        listd,lp) command=parked ;;
        listd,sse) command=streams ;;
        nchan,lp) command=nchan-parked ;;
        nchan,sse) command=nchan-sse ;;
        floor,lp) command=floor-parked ;;
        floor,sse) command=floor-sse ;;
    esac
    case "$side" in
        listd) start_listd ;;
        nchan) start_nchan ;;
        floor) start_floor ;;
    esac
    echo "== round $round, $side, $mode: $bin/ServiceBenchmarks $command $port $server_pid $count"
    if ! output="$(timeout "$run_timeout" "$bin/ServiceBenchmarks" "$command" "$port" "$server_pid" "$count")"; then
        echo "$output"
        echo "fanout.sh: ServiceBenchmarks $command failed" >&2
        exit 1
    fi
    stop_server
    echo "$output"
    complete="$(sed -nE 's/.*, correct \([^)]*\): ([0-9]+)$/\1/p' <<< "$output")"
    if [ "$complete" != "$count" ]; then
        echo "fanout.sh: only ${complete:-?} of $count subscribers got the write: no figure" >&2
        exit 1
    fi
    sent[$round,$side,$mode]="$(sed -nE 's/^[A-Za-z]+ sent -> all [0-9]+ [a-z]+: ([0-9.]+) ms$/\1/p' <<< "$output")"
    answered[$round,$side,$mode]="$(sed -nE 's/^[A-Za-z]+ answered -> all [0-9]+ [a-z]+: ([0-9.]+) ms$/\1/p' <<< "$output")"
}

echo "cores: $(nproc); load average: $(cat /proc/loadavg); listd: $(git rev-parse --short HEAD), default event loops;" \
    "$(nginx -v 2>&1), nchan $(dpkg-query -W -f '${Version}' libnginx-mod-nchan), worker_processes 2;" \
    "$count subscribers; $rounds rounds; descriptor limit $nofile"
floor="${FLOOR:-1}"
for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then order="listd nchan"; else order="nchan listd"; fi
    for mode in lp sse; do
        sides="$order"
        if [ "$floor" = 1 ]; then
            if [ $((round % 2)) = 1 ]; then sides="$order floor"; else sides="floor $order"; fi
        fi
        for side in $sides; do measure "$round" "$side" "$mode"; done
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.2f", NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
echo
echo "== write sent -> last subscriber's answer (ms), listd/nchan; $count subscribers each"
printf '%-6s | %-27s | %-27s | %s\n' round "long-poll: listd nchan ratio" "SSE: listd nchan ratio" \
    "write answered -> last (ms): lp listd nchan, sse listd nchan"
declare -a lp_ratios sse_ratios
for round in $(seq "$rounds"); do
    lp="$(ratio "${sent[$round,listd,lp]}" "${sent[$round,nchan,lp]}")"
    sse="$(ratio "${sent[$round,listd,sse]}" "${sent[$round,nchan,sse]}")"
    lp_ratios+=("$lp")
    sse_ratios+=("$sse")
    printf '%-6s | %8s %8s %8sx | %8s %8s %8sx | %s %s, %s %s\n' "$round" \
        "${sent[$round,listd,lp]}" "${sent[$round,nchan,lp]}" "$lp" \
        "${sent[$round,listd,sse]}" "${sent[$round,nchan,sse]}" "$sse" \
        "${answered[$round,listd,lp]}" "${answered[$round,nchan,lp]}" \
        "${answered[$round,listd,sse]}" "${answered[$round,nchan,sse]}"
done
lp_median="$(median "${lp_ratios[@]}")"
sse_median="$(median "${sse_ratios[@]}")"
printf '%-6s | %26sx | %26sx |\n' median "$lp_median" "$sse_median"
for mode in long-poll SSE; do
    if [ "$mode" = SSE ]; then value="$sse_median"; else value="$lp_median"; fi
    if awk -v r="$value" 'BEGIN { exit !(r <= 0.5) }'; then verdict=met; else verdict="not met"; fi
    echo "target listd <= 0.5x nchan, $mode (median ratio of write sent -> last answer): ${value}x, $verdict"
done
if [ "$floor" = 1 ]; then
    echo
    echo "== the floor (floor-server: sends and nothing else), write sent -> last answer (ms)"
    printf '%-6s | %-35s | %s\n' round "long-poll: floor listd nchan" "SSE: floor listd nchan"
    declare -a floor_lp floor_sse
    for round in $(seq "$rounds"); do
        floor_lp+=("$(ratio "${sent[$round,floor,lp]}" "${sent[$round,nchan,lp]}")")
        floor_sse+=("$(ratio "${sent[$round,floor,sse]}" "${sent[$round,nchan,sse]}")")
        printf '%-6s | %8s %8s %8s  floor/nchan %sx | %8s %8s %8s  floor/nchan %sx\n' "$round" \
            "${sent[$round,floor,lp]}" "${sent[$round,listd,lp]}" "${sent[$round,nchan,lp]}" "${floor_lp[-1]}" \
            "${sent[$round,floor,sse]}" "${sent[$round,listd,sse]}" "${sent[$round,nchan,sse]}" "${floor_sse[-1]}"
    done
    echo "median floor/nchan: long-poll $(median "${floor_lp[@]}")x, SSE $(median "${floor_sse[@]}")x" \
        "(the least a server that sends each answer with one send() gets on this machine)"
fi

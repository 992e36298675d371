#!/usr/bin/env bash
# The three follower transports side by side against one listd: ListClient over
# SocketTransport, ListClient over URLSessionTransport, and raw HTTPClientCall
# long-polls (the baseline), ROUNDS times in rotating order.
#
#   Benchmarks/FollowBenchmarks/compare.sh [SECONDS] [ROUNDS] [FOLLOWERS] [RATE]
#
# Needs release builds of listd and FollowBenchmarks in $BUILD (default .build/release):
#   swift build -c release --product listd && swift build -c release --product FollowBenchmarks
set -euo pipefail

seconds=${1:-20}
rounds=${2:-1}
followers=${3:-100}
rate=${4:-50}
build=${BUILD:-.build/release}
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"$build/listd" serve --host 127.0.0.1 --port "$port" --db "$dir/follow.sqlite" \
    --max-connections $((followers * 2 + 16)) --log-level warning &
listd=$!
trap 'kill $listd 2>/dev/null; wait $listd 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done

orders=("socket urlsession raw" "urlsession raw socket" "raw socket urlsession")
for round in $(seq "$rounds"); do
    for transport in ${orders[$(((round - 1) % 3))]}; do
        echo "== round $round, --transport $transport"
        "$build/FollowBenchmarks" --url "http://127.0.0.1:$port" --followers "$followers" --rate "$rate" \
            --seconds "$seconds" --transport "$transport" || echo "(exit status $?)"
    done
done

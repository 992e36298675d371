#!/usr/bin/env bash
# Issue 22's view figures against a real listd (release build, loopback only), on a
# 100,000-item list whose items are {"owner": "u<k mod 1000>", "rank": r, "score": s},
# with an index on owner:
#  1. a cold view's first snapshot (where=owner:uK&order=rank: 100 of 100,000, indexed),
#     a view's one-change answer, a view follower 10,000 single-op versions behind;
#  2. single-op writes/s (wrk -t1 -c64, update-view.lua) with no views followed, then with
#     VIEWS long-poll followers, one per view (ServiceBenchmarks views), alternating rounds;
#  3. a window order=-score&limit=50 followed by 100 long-polls, under score updates of
#     items at rank ~10, ~1,000 and ~90,000: writes/s and the followers' answers;
#  and listd's RSS per kept view.
# PORT=8080 ITEMS=100000 VIEWS=1000 ROUNDS=2 DURATION=10 views.sh   (STORE=postgres://... for PostgreSQL)
# Needs: apt-get install -y wrk curl python3
set -euo pipefail
source "$(dirname "$0")/lib.sh"
port="${PORT:-8080}"
items="${ITEMS:-100000}"
views="${VIEWS:-1000}"
rounds="${ROUNDS:-2}"
duration="${DURATION:-10}"
single_listd
if [ -n "${STORE:-}" ]; then
    psql "$STORE" -qc "DROP SCHEMA public CASCADE; CREATE SCHEMA public;" > /dev/null
    start_listd() {
        (ulimit -n "$(ulimit -Hn)"; exec "$bin/listd" serve --port "$port" --store "$STORE" --migrations Migrations \
            > "$work/listd.log" 2>&1) &
        listd_pid=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && return; sleep 0.1; done
        cat "$work/listd.log"; exit 1
    }
fi
start_listd
B="http://127.0.0.1:$port"
python3 - "$items" "$work" <<'PY'
import json, random, sys
n, work = int(sys.argv[1]), sys.argv[2]
random.seed(1)
items = [{"id": f"i{k}", "model": {"owner": f"u{k % 1000}", "rank": random.randrange(10**6), "score": random.randrange(10**6)}} for k in range(n)]
body = {"id": "v", "sections": [{"id": "s0", "items": items[: n // 2]}, {"id": "s1", "items": items[n // 2 :]}], "indexes": ["owner"]}
open(f"{work}/body.json", "w").write(json.dumps(body))
ranked = sorted(items, key=lambda item: (-item["model"]["score"], item["id"]))
for depth in (10, 1000, 90000):
    window = ranked[max(0, depth - 5) : depth + 5]
    open(f"{work}/depth-{depth}", "w").write(" ".join(f'{i["id"]}:{i["model"]["score"]}' for i in window))
PY
curl -sf -o /dev/null -XPOST "$B/lists" --data-binary @"$work/body.json"
t() { curl -s -o /dev/null -w "%{time_total}" "$@"; }
ms() { awk -v t="$1" 'BEGIN { printf "%.2f", t * 1000 }'; }
version() { curl -s -o /dev/null -D - "$B/lists/v?where=owner:u0" | tr -d '\r"' | awk -F- 'tolower($0) ~ /^etag:/ { print $NF }'; }
echo "cores: $(nproc); load average: $(cat /proc/loadavg); store: ${STORE:+postgresql}${STORE:-sqlite}"
echo -n "1. cold view snapshots (where=owner:uK&order=rank, 100 of $items, indexed), ms:"
for k in 3 4 5 6 7; do echo -n " $(ms "$(t "$B/lists/v?where=owner:u$k&order=rank")")"; done; echo
echo -n "   one-change answers (the view of u7; its item i7 updated), ms:"
for r in 1 2 3 4 5; do
    curl -sf -o /dev/null -XPATCH "$B/lists/v" -d "{\"ops\":[{\"op\":\"updateItem\",\"id\":\"i7\",\"model\":{\"owner\":\"u7\",\"rank\":$r,\"score\":$r}}]}"
    v=$(version)
    echo -n " $(ms "$(t "$B/lists/v/changes?since=$((v - 1))&timeout=0&where=owner:u7&order=rank")")"
done; echo
base=$(version)
LIST_PATH=/lists/v ITEMS="$items" wrk -t1 -c16 -d600s -s "$here/update-view.lua" "$B" > /dev/null 2>&1 &
writer=$!
while [ "$(version)" -lt $((base + 10000)) ]; do sleep 0.2; done
kill "$writer"; wait "$writer" 2>/dev/null || true
behind=$(( $(version) - 10000 ))
echo -n "   10,000 single-op versions behind, the view of u7: first, one later, ms:"
echo " $(ms "$(t "$B/lists/v/changes?since=$behind&timeout=0&where=owner:u7&order=rank")")" \
    "$(ms "$(t "$B/lists/v/changes?since=$((behind + 1))&timeout=0&where=owner:u7&order=rank")")"
echo "   (an answer: $(curl -s "$B/lists/v/changes?since=$behind&timeout=0&where=owner:u7&order=rank" | head -c 120))"
rate() {  # rate SECONDS [IDS]: writes/s and p99
    LIST_PATH=/lists/v ITEMS="$items" IDS="${2:-}" wrk -t1 -c64 -d"${1}s" --latency -s "$here/update-view.lua" "$B" \
        | awk '/Requests\/sec/ { rps = $2 } /^ +99%/ { p99 = $2 } END { printf "%s writes/s, p99 %s", rps, p99 }'
}
echo "2. $views views followed (one long-poll each, where=owner:uK&order=rank):"
for round in $(seq "$rounds"); do
    alone=$(rate "$duration")
    "$bin/ServiceBenchmarks" views "$port" v "$views" "$((duration + 2))" > "$work/followers.txt" &
    followers=$!
    sleep 3  # the followers read their views' snapshots (building them), then follow
    beside=$(rate "$duration")
    wait "$followers"
    a=${alone%% *}; b=${beside%% *}
    echo "   round $round: no views $alone; with $views views $beside; ratio $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')x"
    echo "      $(cat "$work/followers.txt")"
done
echo "   listd RSS $(awk '/VmRSS/ {print $2}' "/proc/$listd_pid/status") KiB; $(curl -s "$B/metrics" | grep -E '^listd_views_kept(_bytes)? ' | tr '\n' ' ')"
echo "3. window order=-score&limit=50, 100 followers, score updates at depth:"
for depth in 10 1000 90000; do
    "$bin/ServiceBenchmarks" views "$port" v 100 "$((duration + 1))" "order=-score&limit=50" > "$work/window.txt" &
    followers=$!
    sleep 1
    echo "   rank ~$depth: $(rate "$duration" "$(cat "$work/depth-$depth")")"
    wait "$followers"
    echo "      $(cat "$work/window.txt")"
done

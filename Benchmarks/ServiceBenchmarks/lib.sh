# Shared by the benchmark scripts here: `source "$(dirname "$0")/lib.sh"`.
# Sets here and root, changes to the repository root, builds listd and
# ServiceBenchmarks in release mode and sets bin to their folder.
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
swift build -c release --product listd 2>&1 | tail -1
swift build -c release --product ServiceBenchmarks 2>&1 | tail -1
bin="$(swift build -c release --show-bin-path)"

# One listd at a time on $port with a fresh database in a temporary folder:
# start_listd [serve flags], stop_listd; the folder goes when the script exits.
single_listd() {
    if ss -Htln "sport = :$port" | grep -q .; then echo "port $port is in use; set PORT=..." >&2; exit 1; fi
    work="$(mktemp -d)"
    trap cleanup EXIT
}
cleanup() {
    [ -n "${listd_pid:-}" ] && kill "$listd_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
start_listd() {
    rm -f "$work"/db.sqlite*
    "$bin/listd" serve --port "$port" --db "$work/db.sqlite" --migrations Migrations "$@" > "$work/listd.log" 2>&1 &
    listd_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && return; sleep 0.1; done
    cat "$work/listd.log"; exit 1
}
stop_listd() { kill "$listd_pid"; wait "$listd_pid" 2>/dev/null || true; listd_pid=""; }

# Shared by the benchmark scripts here: `source "$(dirname "$0")/lib.sh"`.
# Sets here and root, changes to the repository root, builds listd and
# ServiceBenchmarks in release mode and sets bin to their folder.
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
# With --static-swift-stdlib, as the Dockerfile, CI's release step and .ci/torture
# build: the binary measured is the one shipped, and one build serves them all
# (a release build with other flags rebuilds every module, minutes on 2 cores).
swift build -c release --static-swift-stdlib --product listd 2>&1 | tail -1
swift build -c release --static-swift-stdlib --product ServiceBenchmarks 2>&1 | tail -1
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
# With BASE set (a checkout of an older commit with a release build of listd),
# builds lists "after" then "base", and start_listd_of NAME starts that build's listd.
builds="after"
if [ -n "${BASE:-}" ]; then
    base_bin="$(cd "$BASE" && swift build -c release --show-bin-path)"
    [ -x "$base_bin/listd" ] || { echo "no release listd in $base_bin: build it in $BASE first" >&2; exit 1; }
    builds="after base"
fi
start_listd_of() {  # start_listd_of after|base [serve flags]
    local which="$1"
    shift
    if [ "$which" = base ]; then
        listd_bin="$base_bin" listd_migrations="$BASE/Migrations" start_listd "$@"
    else
        start_listd "$@"
    fi
}
start_listd() {
    rm -f "$work"/db.sqlite*
    (ulimit -n "$(ulimit -Hn)"; exec "${listd_bin:-$bin}/listd" serve --port "$port" --db "$work/db.sqlite" \
        --migrations "${listd_migrations:-Migrations}" "$@" > "$work/listd.log" 2>&1) &
    listd_pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && return; sleep 0.1; done
    cat "$work/listd.log"; exit 1
}
# make_list ITEMS ID: a list of ITEMS items in the running listd; sets list_path (/lists/ID) and list.
make_list() {
    list_path="$("$bin/ServiceBenchmarks" make "$port" "$1" "$2")"
    list="${list_path##*/}"
}
stop_listd() { kill "$listd_pid"; wait "$listd_pid" 2>/dev/null || true; listd_pid=""; }

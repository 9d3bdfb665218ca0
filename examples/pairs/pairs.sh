#!/usr/bin/env bash
# Real SDK clients (client.mjs on the TypeScript SDK, client.py on the Python SDK) against real
# SDK servers (server-everything, the TypeScript and Python fixtures of targets/), one line a
# pairing, each client in its three scenarios: a cancel after the first progress, a deadline
# (the SDK's timeout sends the cancel) and a late cancel (TypeScript: an abort a second after
# the answer; Python: a deadline due when the answer is).
#
#   examples/pairs/pairs.sh plain  [NAME...]   the client talks to the server directly
#   examples/pairs/pairs.sh record [NAME...]   through `conformance record` (stdio, and
#                                              --listen/--to over HTTP); traces in $OUT/traces/
#   examples/pairs/pairs.sh compare [NAME...]  both, then says whether each client printed the same
#
# Needs `targets/install.sh server-everything typescript-sdk python-sdk typescript-client
# python-client` first (same CONFORMANCE_TARGETS_DIR) and the harness built (CONFORMANCE, by
# default target/debug/conformance). Writes $OUT (default /tmp/conformance-pairs).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mode=${1:-plain}
shift || true
only=" $* "
dir=${CONFORMANCE_TARGETS_DIR:-$repo/targets/.install}
conformance=${CONFORMANCE:-$repo/target/debug/conformance}
out=${OUT:-/tmp/conformance-pairs}

case $mode in
plain | record) ;;
compare)
    "$0" plain "$@" && "$0" record "$@" || exit
    differ=0
    for f in "$out"/plain/*.out; do
        if cmp -s "$f" "$out/record/${f##*/}"; then echo "same: ${f##*/}"; else echo "DIFFERS: ${f##*/}"; differ=1; fi
    done
    exit $differ
    ;;
*) echo "usage: $0 plain|record|compare [NAME...]" >&2; exit 2 ;;
esac

# Node resolves packages from the script's folder: the client runs beside the SDK's install.
ts_dir=$dir/clients/typescript-client
[ -d "$ts_dir/node_modules" ] || { echo "$ts_dir: not installed; run targets/install.sh typescript-client" >&2; exit 2; }
cmp -s "$here/client.mjs" "$ts_dir/pairs-client.mjs" || cp "$here/client.mjs" "$ts_dir/pairs-client.mjs"
ts_client="node $ts_dir/pairs-client.mjs"
py_client="$dir/clients/python/venv/bin/python $here/client.py"
everything="node $dir/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
ts_server="node $dir/tssdk-run/server.mjs"
py_server="$dir/pysdk/venv/bin/python $repo/targets/python-sdk/server.py"
mkdir -p "$out/$mode" "$out/traces"

scenarios() { case $1 in ts) echo progress-cancel deadline late-cancel ;; py) echo progress-cancel deadline race ;; esac; }
client() { case $1 in ts) echo "$ts_client" ;; py) echo "$py_client" ;; esac; }

# Waits until something listens on 127.0.0.1:$1 (20 s at most).
wait_port() {
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on port $1" >&2
    return 1
}

stop() { [ -z "${1:-}" ] || { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }; }

# pair NAME CLIENT KIND TRANSPORT SERVER: KIND names the tools (everything or fixture); over
# HTTP, {port} in SERVER is the port it is started on.
pair() {
    local name=$1 who=$2 kind=$3 transport=$4 server=$5 s
    [ "$only" = "  " ] || [[ $only == *" $name "* ]] || return 0
    for s in $(scenarios "$who"); do
        local id=$name--$s rc
        local trace=$out/traces/$id log=$out/$mode/$id
        rm -rf "$trace"
        if [ "$transport" = stdio ]; then
            local argv=$server
            [ "$mode" = plain ] || argv="$conformance record -o $trace -- $server"
            # shellcheck disable=SC2086 # the commands are words
            timeout 60 $(client "$who") "$s" "$kind" -- $argv >"$log.out" 2>"$log.err"
            rc=$?
        else
            local port=$((18700 + RANDOM % 1000)) rport=$((19700 + RANDOM % 1000)) spid rpid=
            # shellcheck disable=SC2086
            ${server//\{port\}/$port} >"$log.server.err" 2>&1 &
            spid=$!
            wait_port "$port"
            local url=http://127.0.0.1:$port/mcp
            if [ "$mode" = record ]; then
                "$conformance" record --listen "127.0.0.1:$rport" --to "$url" -o "$trace" 2>"$log.record.err" &
                rpid=$!
                wait_port "$rport"
                url=http://127.0.0.1:$rport/mcp
            fi
            # shellcheck disable=SC2086
            timeout 60 $(client "$who") "$s" "$kind" --url "$url" >"$log.out" 2>"$log.err"
            rc=$?
            stop "$rpid"
            stop "$spid"
        fi
        echo "$id ($mode): exit $rc" >&2
    done
}

pair ts-everything-stdio ts everything stdio "$everything stdio"
pair ts-python-stdio     ts fixture    stdio "$py_server"
pair py-typescript-stdio py fixture    stdio "$ts_server"
pair py-everything-stdio py everything stdio "$everything stdio"
pair py-python-stdio     py fixture    stdio "$py_server"
pair ts-python-http      ts fixture    http  "$py_server --http --port {port}"
pair py-typescript-http  py fixture    http  "$ts_server --http --port {port}"
pair py-python-http      py fixture    http  "$py_server --http --port {port}"
pair ts-everything-http  ts everything http  "env PORT={port} $everything streamableHttp"
pair py-everything-http  py everything http  "env PORT={port} $everything streamableHttp"

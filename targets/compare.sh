#!/usr/bin/env bash
# Regenerates the comparison of every SDK and server this repository tests: installs the
# pinned targets (install.sh), runs every target file here over its transport at every
# protocol version it speaks and every client adapter in examples/ over stdio and HTTP, each
# with --json into a reports folder, then `conformance compare` writes
# targets/comparison.json (the results as data), the HTML page of every run, and the tables
# between the generated markers of targets/README.md and docs/sdk-comparison.md.
#
#   targets/compare.sh                     install, run everything, compare (about 45 min on 2 cores)
#   targets/compare.sh rmcp python-sdk-http client-rmcp-client
#                                          run these (target files, client-ADAPTER), then compare
#                                          every report in the reports folder
#   COMPARE_REPORTS=/tmp/r targets/compare.sh    reports and logs there (default targets/.reports)
#   COMPARE_INSTALL=0 targets/compare.sh         use what install.sh installed earlier
#   CONFORMANCE=/path/to/conformance targets/compare.sh   this harness (default: built here, --release)
#
# Exit status: 0 when every run gave a report and the comparison was written; 1 when a run
# gave none (its log, in the reports folder, says why; the tables are then left as they
# were); 2 on a usage error. Findings of the targets are the comparison's content, not
# errors of this script.
set -euo pipefail

targets=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$targets")
reports=${COMPARE_REPORTS:-$targets/.reports}
case "$reports" in /*) ;; *) reports=$PWD/$reports ;; esac
CLIENTS="typescript-client typescript-v2-client python-client python-highlevel-client rmcp-client"
say() { echo "compare.sh: $*" >&2; }

if [ -z "${CONFORMANCE:-}" ]; then
    say "building the harness (cargo build --release)"
    cargo build --release --locked --manifest-path "$repo/Cargo.toml" -p conformance --bin conformance
    CONFORMANCE=$repo/target/release/conformance
fi

# The server target files, each a report of its name; the client adapters as client-NAME.
all_runs() {
    for file in "$targets"/*.json; do
        case "$(basename "$file")" in clients.json | comparison.json) continue ;; esac
        basename "$file" .json
    done
    for client in $CLIENTS; do echo "client-$client"; done
}

# The adapter's command, as its README gives it.
adapter() {
    local dir=${CONFORMANCE_TARGETS_DIR:-$targets/.install}/clients
    case "$1" in
    typescript-client | typescript-v2-client) echo "node $dir/$1/adapter.mjs" ;;
    python-client | python-highlevel-client) echo "$dir/python/venv/bin/python $repo/examples/$1/adapter.py" ;;
    rmcp-client) echo "$dir/rmcp-client/target/debug/rmcp-conformance-adapter" ;;
    *) return 1 ;;
    esac
}

# Runs one; its exit status 0 or 1 (findings) gave a report, anything else did not.
run_one() {
    local name=$1 status=0 argv
    local json=$reports/$name.json log=$reports/$name.log
    rm -f "$json"
    if [ "${name#client-}" != "$name" ]; then
        read -ra argv <<<"$(adapter "${name#client-}")"
        "$CONFORMANCE" client --protocol-version all --json "$json" -- "${argv[@]}" >"$log" 2>&1 || status=$?
    else
        "$CONFORMANCE" server --target "$targets/$name.json" --protocol-version all --json "$json" >"$log" 2>&1 || status=$?
    fi
    if [ "$status" -gt 1 ] || [ ! -f "$json" ]; then
        say "$name gave no report (exit $status); see $log"
        return 1
    fi
    say "$name: $(tail -n 1 "$log")"
}

mkdir -p "$reports"
if [ $# -eq 0 ]; then
    mapfile -t runs < <(all_runs)
else
    runs=("$@")
fi
known=" $(all_runs | tr '\n' ' ') "
for name in "${runs[@]}"; do
    name=$(basename "$name" .json)
    case "$known" in *" $name "*) ;; *)
        say "unknown run '$name'; known: $known"
        exit 2
        ;;
    esac
done

if [ "${COMPARE_INSTALL:-1}" != 0 ]; then
    install=()
    for name in "${runs[@]}"; do install+=("${name#client-}"); done
    "$targets/install.sh" "${install[@]}"
fi

failed=()
for name in "${runs[@]}"; do
    name=$(basename "$name" .json)
    say "running $name"
    run_one "$name" || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
    say "no report from: ${failed[*]}; the comparison is not rewritten"
    exit 1
fi

present=()
for name in $known; do
    if [ -f "$reports/$name.json" ]; then present+=("$reports/$name.json"); fi
done
cd "$repo"
# The committed comparison is the run before: a latency median is shown where it held.
previous=()
if [ -f targets/comparison.json ]; then previous=(--previous targets/comparison.json); fi
"$CONFORMANCE" compare "${present[@]}" "${previous[@]}" --targets targets --evidence targets/evidence.md \
    --json targets/comparison.json --html "$reports/comparison.html" \
    --markdown targets/README.md --markdown docs/sdk-comparison.md
say "the page of every run: $reports/comparison.html"

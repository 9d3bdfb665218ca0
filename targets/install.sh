#!/usr/bin/env bash
# Installs what the target files in targets/ (and the client adapters in examples/) need,
# into one folder: $CONFORMANCE_TARGETS_DIR, by default targets/.install (git ignores it).
# The target files name their installs as ${CONFORMANCE_TARGETS_DIR:-.install}/…, so this
# folder and theirs agree. Running it again only redoes what changed: sources are copied
# when they differ, packages installed when their pinned versions differ, and cargo rebuilds
# what it must.
#
#   targets/install.sh                  every server target
#   targets/install.sh rmcp python-sdk  these (a target file's name works too: rmcp-http.json)
#   targets/install.sh typescript-client python-client rmcp-client   client adapters (examples/)
#   targets/install.sh all              servers and client adapters
#   CONFORMANCE_TARGETS_DIR=/tmp/tp targets/install.sh   install elsewhere (an absolute path)
#
# Needs node and npm for the TypeScript ones, python3 (with venv) for the Python ones, cargo
# for the Rust ones. Everything comes from the npm registry, PyPI and crates.io.
set -euo pipefail

targets=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$targets")
dir=${CONFORMANCE_TARGETS_DIR:-$targets/.install}
case "$dir" in
/*) ;;
*)
    echo "install.sh: CONFORMANCE_TARGETS_DIR must be an absolute path (it is '$dir'): target files read it from their own folder, this script from yours" >&2
    exit 2
    ;;
esac

SERVERS="server-everything typescript-sdk typescript-sdk-v2 python-sdk fastmcp rmcp typescript-sdk-tasks rmcp-tasks fastmcp-tasks published"
CLIENTS="typescript-client typescript-v2-client python-client rmcp-client"
EVERYTHING_VERSION=2026.8.31
# The published servers tested as they ship (server-filesystem.json, mcp-server-time.json, …).
PUBLISHED_NPM="@modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-sequential-thinking@2026.8.31"
PUBLISHED_PYPI="mcp-server-time==2026.10.19 mcp-server-git==2026.10.19"
TS1_CLIENT_SDK=@modelcontextprotocol/sdk@1.32.2
TS2_CLIENT_SDK=@modelcontextprotocol/client@2.4.0
PY_CLIENT_SDK='mcp==2.3.0'

say() { echo "install.sh: $*" >&2; }

# Copies $1 to $2 when they differ (an unchanged copy keeps its time, so cargo does not
# rebuild for it).
put() {
    mkdir -p "$(dirname "$2")"
    if ! cmp -s "$1" "$2"; then
        cp "$1" "$2"
    fi
}

# Whether the stamp $1 records the text $2 (what was installed last time).
stamped() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# npm_into DEST SPEC…: the packages at exactly these versions in DEST/node_modules.
npm_into() {
    local dest=$1
    shift
    if stamped "$dest/.installed" "$*" && [ -d "$dest/node_modules" ]; then
        say "$dest: $* already installed"
        return
    fi
    mkdir -p "$dest"
    npm install --no-audit --no-fund --prefix "$dest" "$@"
    echo "$*" >"$dest/.installed"
}

# npm_project DEST: DEST/package.json's dependencies installed (copied there first).
npm_project() {
    local dest=$1
    if stamped "$dest/.installed" "$(cat "$dest/package.json")" && [ -d "$dest/node_modules" ]; then
        say "$dest: up to date"
        return
    fi
    npm install --no-audit --no-fund --prefix "$dest"
    cat "$dest/package.json" >"$dest/.installed"
}

# venv DEST ARG…: a virtual environment at DEST/venv, `pip install ARG…` in it (ARG a
# requirement, or -r and a requirements file, whose lines are what is compared next time).
venv() {
    local dest=$1
    shift
    local want=$*
    for arg in "$@"; do
        if [ -f "$arg" ]; then want="$want $(cat "$arg")"; fi
    done
    if stamped "$dest/.installed" "$want" && [ -x "$dest/venv/bin/python" ]; then
        say "$dest: up to date"
        return
    fi
    [ -x "$dest/venv/bin/python" ] || python3 -m venv "$dest/venv"
    "$dest/venv/bin/pip" install --disable-pip-version-check -q "$@"
    echo "$want" >"$dest/.installed"
}

install_one() {
    case "$1" in
    server-everything)
        npm_into "$dir/everything" "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
        ;;
    typescript-sdk)
        put "$targets/typescript-sdk/server.mjs" "$dir/tssdk-run/server.mjs"
        put "$targets/typescript-sdk/package.json" "$dir/tssdk-run/package.json"
        npm_project "$dir/tssdk-run"
        ;;
    typescript-sdk-v2)
        put "$targets/typescript-sdk-v2/server.mjs" "$dir/tssdk2-run/server.mjs"
        put "$targets/typescript-sdk-v2/package.json" "$dir/tssdk2-run/package.json"
        npm_project "$dir/tssdk2-run"
        ;;
    python-sdk)
        venv "$dir/pysdk" -r "$targets/python-sdk/requirements.txt"
        ;;
    fastmcp)
        venv "$dir/fastmcp" -r "$targets/fastmcp/requirements.txt"
        ;;
    rmcp)
        # The fixture's manifest names this checkout's conformance crate for its
        # `cargo test --test conformance` (docs/cargo-test.md).
        local manifest
        manifest=$(mktemp)
        sed "s|path = \"../../../conformance\"|path = \"$repo/conformance\"|" \
            "$targets/rmcp/Cargo.toml.txt" >"$manifest"
        put "$manifest" "$dir/rmcp-server/Cargo.toml"
        rm -f "$manifest"
        put "$targets/rmcp/main.rs" "$dir/rmcp-server/src/main.rs"
        put "$targets/rmcp/conformance.rs" "$dir/rmcp-server/tests/conformance.rs"
        put "$targets/rmcp/conformance-baseline.txt" "$dir/rmcp-server/conformance-baseline.txt"
        cargo build --manifest-path "$dir/rmcp-server/Cargo.toml"
        ;;
    typescript-sdk-tasks)
        put "$targets/typescript-sdk-tasks/server.mjs" "$dir/tssdk-tasks-run/server.mjs"
        put "$targets/typescript-sdk-tasks/package.json" "$dir/tssdk-tasks-run/package.json"
        npm_project "$dir/tssdk-tasks-run"
        ;;
    rmcp-tasks)
        put "$targets/rmcp-tasks/Cargo.toml.txt" "$dir/rmcp-tasks/Cargo.toml"
        put "$targets/rmcp-tasks/main.rs" "$dir/rmcp-tasks/src/main.rs"
        cargo build --manifest-path "$dir/rmcp-tasks/Cargo.toml"
        ;;
    fastmcp-tasks)
        venv "$dir/fastmcp-tasks" -r "$targets/fastmcp-tasks/requirements.txt"
        ;;
    published)
        # shellcheck disable=SC2086 # the lists are words on purpose
        npm_into "$dir/published" $PUBLISHED_NPM
        # shellcheck disable=SC2086
        venv "$dir/published/python" $PUBLISHED_PYPI
        # What the servers are given to serve: an empty folder and an empty repository.
        mkdir -p "$dir/published/files"
        [ -d "$dir/published/repo/.git" ] || git init -q "$dir/published/repo"
        ;;
    typescript-client)
        npm_into "$dir/clients/typescript-client" "$TS1_CLIENT_SDK"
        put "$repo/examples/typescript-client/adapter.mjs" "$dir/clients/typescript-client/adapter.mjs"
        ;;
    typescript-v2-client)
        npm_into "$dir/clients/typescript-v2-client" "$TS2_CLIENT_SDK"
        put "$repo/examples/typescript-v2-client/adapter.mjs" "$dir/clients/typescript-v2-client/adapter.mjs"
        ;;
    python-client | python-highlevel-client)
        venv "$dir/clients/python" "$PY_CLIENT_SDK"
        ;;
    rmcp-client)
        put "$repo/examples/rmcp-client/Cargo.toml.txt" "$dir/clients/rmcp-client/Cargo.toml"
        put "$repo/examples/rmcp-client/main.rs" "$dir/clients/rmcp-client/src/main.rs"
        cargo build --manifest-path "$dir/clients/rmcp-client/Cargo.toml"
        ;;
    *)
        say "unknown name '$1'; known: $SERVERS $CLIENTS all (or a target file's name)"
        exit 2
        ;;
    esac
}

# A name as given: a target file (targets/rmcp-http.json), an example folder, or a name.
unit_of() {
    local name=${1%/}
    name=${name##*/}
    name=${name%.json}
    case "$name" in
    all) echo "$SERVERS $CLIENTS" ;;
    typescript-sdk-v2*) echo typescript-sdk-v2 ;;
    typescript-sdk-tasks*) echo typescript-sdk-tasks ;;
    rmcp-tasks*) echo rmcp-tasks ;;
    fastmcp-tasks*) echo fastmcp-tasks ;;
    typescript-sdk*) echo typescript-sdk ;;
    server-everything*) echo server-everything ;;
    python-sdk*) echo python-sdk ;;
    fastmcp*) echo fastmcp ;;
    rmcp-client) echo rmcp-client ;;
    server-filesystem | server-memory | server-sequential-thinking | mcp-server-time | mcp-server-git) echo published ;;
    rmcp*) echo rmcp ;;
    *) echo "$name" ;;
    esac
}

wanted=()
if [ $# -eq 0 ]; then
    read -ra wanted <<<"$SERVERS"
fi
for arg in "$@"; do
    read -ra units <<<"$(unit_of "$arg")"
    wanted+=("${units[@]}")
done

mkdir -p "$dir"
done_already=" "
for unit in "${wanted[@]}"; do
    case "$done_already" in *" $unit "*) continue ;; esac
    done_already="$done_already$unit "
    say "$unit into $dir"
    install_one "$unit"
done
say "done; the target files find these through CONFORMANCE_TARGETS_DIR${CONFORMANCE_TARGETS_DIR:+=$CONFORMANCE_TARGETS_DIR} (default targets/.install)"

#!/usr/bin/env bash
# `make test`: the whole suite against SQLite and PostgreSQL, then the
# documents' examples (scripts/docs-check.sh).
#
# PostgreSQL, in order of preference (PRODUCT.md, "Setup and running"):
#   1. DATABASE_URL (or EDIHUB_TEST_DATABASE_URL) when it is a postgres:// URL;
#   2. a server on 127.0.0.1:5432 (user postgres, trust auth) that allows at
#      least MIN_CONNECTIONS connections;
#   3. a throwaway cluster from the installed PostgreSQL binaries, installing
#      Debian's `postgresql` package first when none exist and we are root.
# Tests create and drop their own databases (edihub_t_*) on that server.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=$PWD
PGTEST_DIR="$ROOT/.pgtest"
STARTED_CLUSTER=""

log() { printf '[make test] %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

find_pg_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

# as_postgres_when_root (initdb and pgbouncer refuse to run as root),
# start_pgbouncer and stop_pgbouncer.
# shellcheck source=scripts/lib/pgbouncer.sh
. "$ROOT/scripts/lib/pgbouncer.sh"

# The suite runs tests in parallel, each with its own pools, and the fault
# tests start several hubs at once: a server that allows fewer connections
# than this fails them with "too many clients".
MIN_CONNECTIONS=300

# The server's max_connections, or 0 when it cannot be read (no psql, or the
# server refuses the trust login).
server_max_connections() {
    local n
    n=$(psql -h "$1" -p "$2" -U postgres -d postgres -Atc 'SHOW max_connections' 2>/dev/null) || n=0
    [[ "$n" =~ ^[0-9]+$ ]] || n=0
    echo "$n"
}

start_throwaway_cluster() {
    local bin port=55432
    if ! bin=$(find_pg_bin); then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            log "no PostgreSQL binaries: installing Debian's postgresql package"
            apt-get update -qq >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
            bin=$(find_pg_bin) || { log "postgresql installed but initdb not found"; exit 1; }
        else
            log "no PostgreSQL reachable and no binaries to start one (install postgresql or set DATABASE_URL)"
            exit 1
        fi
    fi
    as_postgres_when_root
    local as=("${AS_POSTGRES[@]}")
    rm -rf "$PGTEST_DIR"
    mkdir -p "$PGTEST_DIR"
    [ "$(id -u)" = 0 ] && chown postgres "$PGTEST_DIR"
    log "starting a throwaway PostgreSQL from $bin on 127.0.0.1:$port"
    "${as[@]}" "$bin/initdb" -D "$PGTEST_DIR/data" -U postgres -A trust >"$PGTEST_DIR/initdb.log" 2>&1 ||
        { cat "$PGTEST_DIR/initdb.log" >&2; exit 1; }
    "${as[@]}" "$bin/pg_ctl" -D "$PGTEST_DIR/data" -l "$PGTEST_DIR/server.log" -w \
        -o "-p $port -k $PGTEST_DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" start >&2
    STARTED_CLUSTER="$bin"
    PG_AS=("${as[@]}")
    export EDIHUB_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

stop_cluster() {
    if [ -n "$STARTED_CLUSTER" ]; then
        "${PG_AS[@]}" "$STARTED_CLUSTER/pg_ctl" -D "$PGTEST_DIR/data" -m fast stop >/dev/null 2>&1 || true
    fi
}

# PgBouncer (scripts/lib/pgbouncer.sh) in front of the test PostgreSQL: its
# own directory, a pool of 20 server connections per database.
PGB_DIR="$ROOT/.pgbouncer"

cleanup() {
    stop_pgbouncer
    stop_cluster
}
trap cleanup EXIT

# EDIHUB_TEST_PG=throwaway forces step 3 (to test this script itself).
if [ "${EDIHUB_TEST_PG:-}" = throwaway ]; then
    start_throwaway_cluster
elif [ -n "${EDIHUB_TEST_DATABASE_URL:-}" ]; then
    log "PostgreSQL from EDIHUB_TEST_DATABASE_URL"
elif [[ "${DATABASE_URL:-}" == postgres* ]]; then
    export EDIHUB_TEST_DATABASE_URL="$DATABASE_URL"
    log "PostgreSQL from DATABASE_URL"
elif port_open 127.0.0.1 5432 && [ "$(server_max_connections 127.0.0.1 5432)" -ge "$MIN_CONNECTIONS" ]; then
    export EDIHUB_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
    log "PostgreSQL on 127.0.0.1:5432"
else
    port_open 127.0.0.1 5432 &&
        log "PostgreSQL on 127.0.0.1:5432 allows fewer than $MIN_CONNECTIONS connections: using a throwaway cluster instead"
    start_throwaway_cluster
fi
# The binary under test must not pick up a stray DATABASE_URL.
unset DATABASE_URL

# pkg-config, libssl-dev and the openssl command (scripts/build-deps.sh).
./scripts/build-deps.sh

# Python packages the tests check against, installed only when missing (found,
# not imported: importing runs a package's own start-up checks). A failed
# install does not stop the run: the tests that need the package fail and say why.
#   standardwebhooks: the Standard Webhooks reference (crates/edihub-server/tests/api/signature_schemes.rs)
#   pyx12, pydifact:  independent X12 and EDIFACT readers of the acknowledgements
#                     (crates/edihub-server/tests/api/edi_acks.rs, tests/ack_check/)
#   pyas2lib:         an independent AS2 implementation (crates/edihub-server/tests/as2/)
for module in standardwebhooks pyx12 pydifact pyas2lib; do
    if command -v python3 >/dev/null 2>&1 &&
        ! python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$module') is None)" 2>/dev/null; then
        log "installing the $module Python package for the tests"
        PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
            python3 -m pip install --quiet "$module" >&2 ||
            log "could not install $module: the tests that use it will fail"
    fi
done

# The browser test (crates/edihub-server/tests/api/browser.rs) drives headless
# Chromium; install Debian's package when it is missing and we are root.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing Debian's chromium for the browser test"
    { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2; } ||
        log "could not install chromium: the browser test will fail"
fi

# EDIHUB_TEST_POOLED=1 with a filtered run (`make chaos`'s four-replica
# test): the run itself goes through PgBouncer, started as below.
if [ $# -gt 0 ] && [ "${EDIHUB_TEST_POOLED:-}" = 1 ]; then
    start_pgbouncer "$EDIHUB_TEST_DATABASE_URL" "$PGB_DIR" 20 56433
    export EDIHUB_TEST_POOLER_URL="$POOLER_URL"
fi

# A filtered run (`make chaos`) is that run alone.
if [ $# -gt 0 ]; then
    cargo test --workspace --locked "$@"
    exit 0
fi

# The whole suite builds every test binary once and runs them all; the runs
# that follow execute those same binaries. (Another cargo selection, such
# as `-p edihub-server --test api`, resolves other features and builds the
# crates again: about ten minutes on two cores.)
TEST_BINARIES="$ROOT/target/test-binaries.json"
cargo test --workspace --locked --no-run --message-format=json-render-diagnostics >"$TEST_BINARIES"
cargo test --workspace --locked

# run_test_binary NAME ARGS…: the test binary NAME (an integration test's
# file or folder name) built above, run as cargo runs it (from its package's
# folder, with CARGO_MANIFEST_DIR set).
run_test_binary() {
    local name=$1 found exe dir
    shift
    found=$(python3 - "$TEST_BINARIES" "$name" <<'PY'
import json, os, sys
for line in open(sys.argv[1]):
    m = json.loads(line) if line.startswith("{") else {}
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable") and t.get("name") == sys.argv[2] and "test" in t.get("kind", []):
        print(m["executable"], os.path.dirname(m["manifest_path"]))
        break
PY
)
    [ -n "$found" ] || { log "no test binary $name in $TEST_BINARIES"; exit 1; }
    read -r exe dir <<<"$found"
    log "$name $*"
    (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$exe" "$@")
}

# The PostgreSQL tests of the store, and the API tests of ingest, keys,
# packets, acknowledgements, webhooks, delivery claims, the feed, retention and
# the admin API, again with the hub's pools behind PgBouncer in transaction
# mode, and the four-replica fault test F9 (database_pooler = "transaction"; the tests create and drop their
# databases directly). docs/scale.md, "PgBouncer".
POOLED_API_TESTS=(receive_ edi_acks:: webhook_dedup:: webhook_races:: delivery feed:: retention:: admin_api:: audit_api::)
start_pgbouncer "$EDIHUB_TEST_DATABASE_URL" "$PGB_DIR" 20 56433
export EDIHUB_TEST_POOLER_URL="$POOLER_URL"
run_test_binary conformance postgres
run_test_binary api --skip sqlite:: "${POOLED_API_TESTS[@]}"
# F9: four replicas through PgBouncer, one SIGKILLed (RELIABILITY.md).
run_test_binary faults f9_
unset EDIHUB_TEST_POOLER_URL
stop_pgbouncer

# The documents' examples, against a fresh hub (docs/testing.md,
# "Docs that run"), with the binary the suite built and tested: its `testing` feature
# only adds the test-support modules, and building it without them would
# compile the crates once more.
EDIHUB_BIN_DIR="$ROOT/target/debug" ./scripts/docs-check.sh

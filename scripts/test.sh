#!/usr/bin/env bash
# `make test`: the whole suite against SQLite and PostgreSQL, then the
# documents' examples (scripts/docs-check.sh).
#
# PostgreSQL, in order of preference (PRODUCT.md, "Setup and running"):
#   1. DATABASE_URL (or EDIHUB_TEST_DATABASE_URL) when it is a postgres:// URL;
#   2. a server on 127.0.0.1:5432 (user postgres, trust auth);
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

# initdb and pgbouncer refuse to run as root: as root, they run as the
# postgres user (created by the package, or here). Sets AS_POSTGRES, the
# command prefix for them.
as_postgres_when_root() {
    AS_POSTGRES=()
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        AS_POSTGRES=(runuser -u postgres --)
    fi
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

# PgBouncer in transaction mode in front of the test PostgreSQL (docs/scale.md,
# "PgBouncer"), on a private port with its own directory; Debian's pgbouncer
# package is installed first when missing and we are root. Sets POOLER_URL.
PGB_DIR="$ROOT/.pgbouncer"
PGB_PID=""
start_pgbouncer() {
    if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            log "no pgbouncer: installing Debian's pgbouncer package"
            apt-get update -qq >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >&2
        else
            log "pgbouncer is not installed (install Debian's pgbouncer package): the tests through it cannot run"
            exit 1
        fi
    fi
    local bin
    bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
    # postgres://user[:password]@host[:port]/database
    local re='^postgres(ql)?://(([^:@/]*)(:([^@/]*))?@)?([^:/?]+)(:([0-9]+))?/'
    [[ "$EDIHUB_TEST_DATABASE_URL" =~ $re ]] ||
        { log "cannot read host and port from $EDIHUB_TEST_DATABASE_URL for pgbouncer"; exit 1; }
    local user=${BASH_REMATCH[3]:-postgres} password=${BASH_REMATCH[5]:-}
    local host=${BASH_REMATCH[6]} port=${BASH_REMATCH[8]:-5432} listen=56433
    while port_open 127.0.0.1 "$listen"; do listen=$((listen + 1)); done
    as_postgres_when_root
    local as=("${AS_POSTGRES[@]}")
    rm -rf "$PGB_DIR"
    mkdir -p "$PGB_DIR"
    printf '"%s" "%s"\n' "$user" "$password" >"$PGB_DIR/userlist.txt"
    # Every test database through one wildcard entry; a pool of 20 server
    # connections per database, as many clients as the tests open.
    cat >"$PGB_DIR/pgbouncer.ini" <<EOF_INI
[databases]
* = host=$host port=$port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $listen
unix_socket_dir =
auth_type = trust
auth_file = $PGB_DIR/userlist.txt
pool_mode = transaction
max_client_conn = 900
default_pool_size = 20
server_idle_timeout = 30
ignore_startup_parameters = extra_float_digits,options
logfile = $PGB_DIR/pgbouncer.log
pidfile = $PGB_DIR/pgbouncer.pid
EOF_INI
    [ "$(id -u)" = 0 ] && chown -R postgres "$PGB_DIR"
    "${as[@]}" "$bin" -d "$PGB_DIR/pgbouncer.ini" >&2 || { cat "$PGB_DIR/pgbouncer.log" >&2; exit 1; }
    local tries=0
    until port_open 127.0.0.1 "$listen"; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || { log "pgbouncer did not start"; cat "$PGB_DIR/pgbouncer.log" >&2; exit 1; }
        sleep 0.1
    done
    PGB_PID=$(cat "$PGB_DIR/pgbouncer.pid")
    log "PgBouncer $("$bin" --version | head -1 | awk '{print $2}') in transaction mode on 127.0.0.1:$listen, in front of $host:$port"
    POOLER_URL="postgres://$user${password:+:$password}@127.0.0.1:$listen/postgres"
}

stop_pgbouncer() {
    if [ -n "$PGB_PID" ]; then
        kill "$PGB_PID" 2>/dev/null || true
        PGB_PID=""
    fi
}

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
elif port_open 127.0.0.1 5432; then
    export EDIHUB_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres"
    log "PostgreSQL on 127.0.0.1:5432"
else
    start_throwaway_cluster
fi
# The binary under test must not pick up a stray DATABASE_URL.
unset DATABASE_URL

# Python packages the tests check against, installed only when missing. A failed
# install does not stop the run: the tests that need the package fail and say why.
#   standardwebhooks: the Standard Webhooks reference (crates/edihub-server/tests/api/signature_schemes.rs)
#   pyx12, pydifact:  independent X12 and EDIFACT readers of the acknowledgements
#                     (crates/edihub-server/tests/api/edi_acks.rs, tests/ack_check/)
for module in standardwebhooks pyx12 pydifact; do
    if command -v python3 >/dev/null 2>&1 && ! python3 -c "import $module" 2>/dev/null; then
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

cargo test --workspace --locked "$@"

# The PostgreSQL tests of the store, and the API tests of ingest, keys,
# packets, acknowledgements, webhooks, delivery claims, the feed, retention and
# the admin API, again with the hub's pools behind PgBouncer in transaction
# mode (database_pooler = "transaction"; the tests create and drop their
# databases directly). Only for the whole suite. docs/scale.md, "PgBouncer".
POOLED_API_TESTS=(receive_ edi_acks:: webhook_dedup:: webhook_races:: delivery feed:: retention:: admin_api:: audit_api::)
if [ $# -eq 0 ]; then
    start_pgbouncer
    export EDIHUB_TEST_POOLER_URL="$POOLER_URL"
    cargo test --locked -p edihub-store --test conformance postgres
    cargo test --locked -p edihub-server --test api -- --skip sqlite:: "${POOLED_API_TESTS[@]}"
    unset EDIHUB_TEST_POOLER_URL
    stop_pgbouncer
fi

# The documents' examples, against a fresh hub (README.md, "Docs that run").
# Only for the whole suite: a filtered run (`make chaos`) skips them.
if [ $# -eq 0 ]; then
    ./scripts/docs-check.sh
fi

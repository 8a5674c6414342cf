#!/usr/bin/env bash
# `make bench`: edihub's benchmark (see BENCHMARKS.md, "Method").
#
# 1. installs what is missing (wrk, PostgreSQL with pgbench, python3, openssl) with apt;
# 2. builds the release binary and runs the criterion benches of edihub-core;
# 3. starts a throwaway PostgreSQL cluster on its own port and socket directory
#    (never the system one on 5432), owned by the postgres user;
# 4. runs scripts/bench/bench.py: edihub on that cluster and on a SQLite file,
#    wrk with scripts/bench/load.lua as the load generator, pgbench for the
#    ceiling; prints the tables and writes them into BENCHMARKS.md;
#    For scenario R, PgBouncer in transaction mode in front of that cluster
#    (scripts/lib/pgbouncer.sh, as `make test` starts it; BENCH_PGB_POOL server
#    connections, default 32);
# 5. stops everything it started and removes the cluster and its files.
#
# Knobs (environment): BENCH_DURATION (20), BENCH_WARMUP (3), BENCH_CONNECTIONS
# (32), BENCH_THREADS (wrk's, 2), BENCH_SCENARIOS (S1,F,S2,S7,R,S3,S4,S5,D,A,S6,T,P; F reads
# the pull feed of what ran before it, scripts/bench/feed.py; D alone runs its own S1 baseline; R is R1, one replica through PgBouncer, and R2, two; A is
# AS2 against the plain endpoint, scripts/bench/as2.py), BENCH_AS2_MESSAGES (A's
# messages per path, 5000), BENCH_AS2_WARMUP (A's warm-up messages per path, 100),
# BENCH_AS2_CONNECTIONS (A's sender connections, 8), BENCH_S6_ROWS (5000000),
# BENCH_T_ROWS (5000000), BENCH_T_DAYS_AGO (100) and BENCH_T_HOT=1 (the day left in
# the page cache; by default it is put out, as a day past retention is) for T, BENCH_PARTITION_DAYS (81),
# BENCH_DB_CONNECTIONS (edihub's pool, 32), BENCH_PG_PORT (55433),
# BENCH_PG_SETTINGS (extra `-c name=value …` for the cluster), BENCH_PG_EXTRA_SQL
# (SQL run on the benchmark database once the hub has migrated it, before any
# scenario: e.g. an index whose ingest cost is measured), BENCH_PROFILE=1
# (perf profiles of edihub under S1 load and during D's drain) with BENCH_PROFILE_MODE
# (unique: S1's load, the default; mixed: S2's), BENCH_STATEMENTS (pg_stat_statements
# rows per scenario, 4), BENCH_DELIVERY_IN_FLIGHT (D's delivery.max_in_flight_per_destination;
# the hub's default when unset), BENCH_PGB_POOL (R's PgBouncer server connections, 32),
# BENCH_S6_CEILING=1 (pgbench again after the 5 M rows), BENCH_WRITE=0 (print only),
# BENCH_CRITERION=0 (skip the criterion benches), BENCH_QUIET=0 (no CHECKPOINT and
# no wait for idle CPUs before each scenario), BENCH_EDIHUB=/path/to/edihub
# (measure that binary instead of building this checkout's, e.g. an older
# commit's release build for a before/after comparison in one harness),
# BENCH_HUB_ENV (space-separated NAME=value settings for every hub the run
# starts, e.g. BENCH_HUB_ENV="EDIHUB_MAX_INFLIGHT_BODY_BYTES=12582912" to
# measure a setting; the caller's own EDIHUB_* variables never reach a hub).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH_T0=$(date +%s)
export BENCH_T0

log() { printf '[make bench] %s\n' "$*" >&2; }

# --- tools -------------------------------------------------------------------
find_pg_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && [ -x "$d/pgbench" ] && { echo "$d"; return 0; }
    done
    return 1
}

APT_UPDATED=""
apt_install() {
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        log "missing: $* (install it, or run as root on Debian so this script can)"
        exit 1
    fi
    if [ -z "$APT_UPDATED" ]; then
        apt-get update -qq >&2
        APT_UPDATED=1
    fi
    log "installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

command -v wrk >/dev/null || apt_install wrk
find_pg_bin >/dev/null || apt_install postgresql
command -v python3 >/dev/null || apt_install python3
command -v openssl >/dev/null || apt_install openssl  # scenario A makes its AS2 bodies with it
PG_BIN=$(find_pg_bin) || { log "PostgreSQL installed but initdb/pgbench not found"; exit 1; }

# --- build ---------------------------------------------------------------------
# The binary on its own, as `make release` builds it: a build that includes a
# bench target also resolves the workspace's dev-dependencies, which would
# switch on the store's `testing` feature and link test support into the
# binary under test. The criterion bench of edihub-core is built next; its
# executable is then run directly.
log "building the release binary and the criterion bench"
t=$(date +%s)
cargo build --release --locked -p edihub --bins
BUILD_JSON=$(mktemp /tmp/edihub-bench-build.XXXXXX)
cargo build --release --locked -p edihub-core --bench core \
    --message-format=json-render-diagnostics >"$BUILD_JSON"
export BENCH_BUILD_S=$(( $(date +%s) - t ))
EDIHUB=${BENCH_EDIHUB:-$ROOT/target/release/edihub}
CORE_BENCH=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    t = m.get("target") or {}
    if m.get("reason") == "compiler-artifact" and t.get("name") == "core" and "bench" in t.get("kind", []):
        print(m["executable"])
' "$BUILD_JSON")
rm -f "$BUILD_JSON"

if [ "${BENCH_CRITERION:-1}" = 1 ]; then
    log "criterion: parse + fingerprint of edihub-core (one core)"
    # Short runs: a few inputs, a few seconds each, enough for a stable mean.
    (cd crates/edihub-core && CRITERION_HOME="$ROOT/target/criterion" "$CORE_BENCH" --bench \
        --warm-up-time 1 --measurement-time 3 --noplot) >&2
fi

# --- throwaway PostgreSQL ---------------------------------------------------------
WORK=$(mktemp -d /tmp/edihub-bench.XXXXXX)
PG_DATA="$WORK/pgdata"
PG_SOCK="$WORK/sock"
PG_LOG="$WORK/pglog"
PG_PORT=${BENCH_PG_PORT:-55433}
AS=()
if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    AS=(runuser -u postgres --)
    chmod 755 "$WORK"
fi
mkdir -p "$PG_SOCK" "$PG_DATA" "$PG_LOG"
[ "$(id -u)" = 0 ] && chown postgres "$PG_SOCK" "$PG_DATA" "$PG_LOG"

# shellcheck source=scripts/lib/pgbouncer.sh
. "$ROOT/scripts/lib/pgbouncer.sh"

cleanup() {
    local pid
    stop_pgbouncer
    if [ -f "$WORK/pids" ]; then
        while read -r pid; do
            kill "$pid" 2>/dev/null || true
        done <"$WORK/pids"
    fi
    if [ -f "$PG_DATA/postmaster.pid" ]; then
        "${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if (exec 3<>"/dev/tcp/127.0.0.1/$PG_PORT") 2>/dev/null; then
    log "port $PG_PORT is taken; set BENCH_PG_PORT"
    exit 1
fi
log "starting a throwaway PostgreSQL ($PG_BIN) on 127.0.0.1:$PG_PORT in $WORK"
"${AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -A trust --no-sync >"$WORK/initdb.log" 2>&1 ||
    { cat "$WORK/initdb.log" >&2; exit 1; }
# Durable commits (fsync, synchronous_commit on) as in production; memory and
# checkpoints sized so that no checkpoint lands inside a measured run.
# shellcheck disable=SC2086
"${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG/postgres.log" -w -t 60 -o "\
 -p $PG_PORT -k $PG_SOCK -c listen_addresses=127.0.0.1 -c max_connections=200 \
 -c shared_buffers=1GB -c max_wal_size=16GB -c checkpoint_timeout=30min \
 -c maintenance_work_mem=512MB -c shared_preload_libraries=pg_stat_statements \
 -c pg_stat_statements.track=top ${BENCH_PG_SETTINGS:-}" start >&2

# Scenario R is in the default list (scripts/bench/bench.py).
SCENARIOS=",$(printf '%s' "${BENCH_SCENARIOS:-R}" | tr -d ' ' | tr '[:lower:]' '[:upper:]'),"
if [[ "$SCENARIOS" == *,R,* ]]; then
    start_pgbouncer "postgres://postgres@127.0.0.1:$PG_PORT/postgres" "$WORK/pgbouncer" "${BENCH_PGB_POOL:-32}" 56533
    export BENCH_POOLER_URL="$POOLER_URL" BENCH_POOLER_PID="$PGB_PID"
fi

export BENCH_WORK="$WORK" BENCH_PG_BIN="$PG_BIN" BENCH_PG_DATA="$PG_DATA" BENCH_PG_PORT="$PG_PORT"
export BENCH_EDIHUB="$EDIHUB"
python3 scripts/bench/bench.py
log "done in $(( $(date +%s) - BENCH_T0 )) s"

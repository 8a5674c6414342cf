#!/usr/bin/env bash
# Instructions per stored message of the SQLite ingest, under callgrind.
# Instruction counts do not
# depend on what else the machine runs, so a few per cent show where a
# wall-clock benchmark on a busy machine cannot.
#
#   scripts/bench/sqlite_ingest_instructions.sh [variant ...]
#
# A variant is `head` (the migrated schema as it is) or the name of a trigger
# on `messages` to drop from a copy of the migrated database before the run
# (e.g. messages_enqueue_deliveries); the committed migrations are never
# changed. For each variant, the example `sqlite_ingest` (crates/edihub-store/
# examples) runs on a fresh copy twice under callgrind: storing
# SQLITE_INGEST_MESSAGES messages (default 4096) and storing none. The
# difference, divided by the messages, is printed in instructions per message.
# Needs valgrind; builds the example in release.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${SQLITE_INGEST_MESSAGES:-4096}
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(head)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

cargo build --release --locked -q -p edihub-store --example sqlite_ingest
BIN=$PWD/target/release/examples/sqlite_ingest
"$BIN" "$WORK/migrated.db" 0

# Total instructions (Ir) of one run of the example on a fresh copy of `db`.
instructions() {
    local db=$1 count=$2 run=$WORK/run.db
    cp "$db" "$run"
    valgrind --tool=callgrind --callgrind-out-file="$WORK/out" "$BIN" "$run" "$count" 2>/dev/null
    rm -f "$run" "$run-wal" "$run-shm"
    awk '/^totals:/ { print $2 }' "$WORK/out"
}

printf '%-32s %16s %16s %14s\n' variant "Ir ($N msgs)" "Ir (0 msgs)" "Ir per msg"
for v in "${VARIANTS[@]}"; do
    db=$WORK/$v.db
    cp "$WORK/migrated.db" "$db"
    if [ "$v" != head ]; then
        python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("DROP TRIGGER " + sys.argv[2]); c.commit()' "$db" "$v"
    fi
    full=$(instructions "$db" "$N")
    empty=$(instructions "$db" 0)
    printf '%-32s %16s %16s %14s\n' "$v" "$full" "$empty" "$(( (full - empty) / N ))"
done

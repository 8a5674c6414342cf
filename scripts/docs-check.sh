#!/usr/bin/env bash
# `make docs-check`: runs the shell examples of README.md and docs/*.md, in
# order, against a fresh hub, and fails on the first one that does not give
# what its document says (docs/testing.md, "Docs that run").
#
# The hub: the built `edihub` with the demo config (config/edihub.toml), the
# demo secrets of the Makefile, a new SQLite database in a temporary
# directory, on a free loopback port. Before the real run, a self-check runs
# the examples once with one documented status changed and requires the
# runner to fail at exactly that line (so a check that cannot fail is caught).
# DOCS_CHECK_SELF_TEST=0 skips it. The demo receiver of deliveries (`edihub
# listen` on 127.0.0.1:9999, where config/edihub.toml's `demo-listener`
# points) runs beside the hub, as `make listen` does for `make run`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '[docs-check] %s\n' "$*" >&2; }

# EDIHUB_BIN_DIR: a folder with an `edihub` already built (`make test`
# passes the suite's); otherwise the binary is built here.
if [ -z "${EDIHUB_BIN_DIR:-}" ]; then
    ${CARGO:-cargo} build --locked -p edihub --quiet
    EDIHUB_BIN_DIR="$ROOT/target/debug"
fi
[ -x "$EDIHUB_BIN_DIR/edihub" ] || { log "no edihub binary in $EDIHUB_BIN_DIR"; exit 1; }
export PATH="$EDIHUB_BIN_DIR:$PATH"
# The demo secrets, from the Makefile (one definition for `make run` and this check).
# shellcheck disable=SC2046
export $(make -s --no-print-directory demo-secrets)
# The demo AS2 station's key and certificates (PEM text, so not through the line above).
EDIHUB_SECRET_AS2_DEMO_KEY=$(cat config/as2-demo/edihub.key)
EDIHUB_SECRET_AS2_DEMO_CERT=$(cat config/as2-demo/edihub.crt)
EDIHUB_SECRET_AS2_DEMO_PARTNER_CERT=$(cat config/as2-demo/partner.crt)
export EDIHUB_SECRET_AS2_DEMO_KEY EDIHUB_SECRET_AS2_DEMO_CERT EDIHUB_SECRET_AS2_DEMO_PARTNER_CERT

WORK=$(mktemp -d "${TMPDIR:-/tmp}/edihub-docs-check.XXXXXX")
HUB_PID=""
LISTEN_PID=""
stop_hub() {
    if [ -n "$HUB_PID" ]; then
        kill "$HUB_PID" 2>/dev/null || true
        wait "$HUB_PID" 2>/dev/null || true
        HUB_PID=""
    fi
}
stop_listener() {
    if [ -n "$LISTEN_PID" ]; then
        kill "$LISTEN_PID" 2>/dev/null || true
        wait "$LISTEN_PID" 2>/dev/null || true
        LISTEN_PID=""
    fi
}
# The documented examples write their sample files as /tmp/edihub-doc-*
# (paths a reader can type); they are removed with the rest.
cleanup() { stop_hub; stop_listener; rm -rf "$WORK" /tmp/edihub-doc-*; }
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts a hub on a new database; sets DOCS_HUB and the variables the examples
# use (EDIHUB_DATABASE_URL lets `edihub fingerprint` read that hub's rules).
start_hub() {
    local name=$1 port
    port=$(free_port)
    export EDIHUB_DATABASE_URL="sqlite://$WORK/$name.db"
    export DOCS_HUB="http://127.0.0.1:$port"
    export EDIHUB_URL="$DOCS_HUB"
    EDIHUB_LISTEN="127.0.0.1:$port" EDIHUB_LOG=warn \
        edihub --config config/edihub.toml serve >"$WORK/$name.log" 2>&1 &
    HUB_PID=$!
    for _ in $(seq 1 100); do
        if curl -sf "$DOCS_HUB/readyz" >/dev/null 2>&1; then return 0; fi
        if ! kill -0 "$HUB_PID" 2>/dev/null; then break; fi
        sleep 0.1
    done
    log "the hub did not start:"
    cat "$WORK/$name.log" >&2
    exit 1
}

if [ "${DOCS_CHECK_SELF_TEST:-1}" != 0 ]; then
    # The first documented HTTP status of README.md, changed: the run must fail there.
    line=$(grep -n -m1 -E '^\s*#\s*->\s*[0-9]{3}' README.md | cut -d: -f1)
    start_hub self-test
    if out=$(python3 scripts/docs_check.py --mutate "README.md:$line" README.md 2>&1); then
        log "self-check FAILED: a changed status on README.md:$line went unnoticed"
        exit 1
    fi
    if ! grep -q "FAILED at README.md:$line: documented status" <<<"$out"; then
        log "self-check FAILED: expected a mismatch at README.md:$line, got:"
        printf '%s\n' "$out" >&2
        exit 1
    fi
    log "self-check: a changed status on README.md:$line is reported"
    stop_hub
fi

# The demo receiver; one already listening on 9999 (`make listen`) serves as well.
edihub listen --port 9999 --secret-env STD_WEBHOOK_SECRET >"$WORK/listen.log" 2>&1 &
LISTEN_PID=$!
for _ in $(seq 1 50); do
    if grep -q '^listening on' "$WORK/listen.log" 2>/dev/null; then break; fi
    if ! kill -0 "$LISTEN_PID" 2>/dev/null; then
        LISTEN_PID=""
        log "edihub listen did not start ($(cat "$WORK/listen.log")); using whatever listens on 9999"
        break
    fi
    sleep 0.1
done

start_hub docs
python3 scripts/docs_check.py

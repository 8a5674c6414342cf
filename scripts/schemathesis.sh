#!/usr/bin/env bash
# schemathesis (PyPI) against a live `edihub serve`, with valid credentials:
# no 5xx, responses (status, content type, headers, body) match /openapi.json,
# authentication is never ignored, invalid input is rejected. Run by
# `make chaos` (slow); results in RELIABILITY.md.
#
# Three passes over the OpenAPI document of the running hub:
#   1. admin + operations routes with the admin token, every check except
#      positive_data_acceptance;
#   2. sender routes (receive, webhook) with a sender key, the same checks;
#   3. positive_data_acceptance on all routes, reported but not failing: the
#      spec cannot say "a valid IDoc" or "a configured tenant", so some
#      schema-valid requests are rightly refused (RELIABILITY.md, O1).
# The run fails when pass 1 or 2 fails, or when edihub logged a 5xx, an
# ERROR line or a panic.
#
# Environment: SCHEMATHESIS_EXAMPLES (per operation, default 100),
# SCHEMATHESIS_SEED (default random, printed), SCHEMATHESIS_DATABASE_URL
# (default: an SQLite file in a temp dir), SCHEMATHESIS_OUT (reports, the hub
# log and schemathesis's crash cache `.schemathesis/`, default
# target/schemathesis).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${SCHEMATHESIS_OUT:-$ROOT/target/schemathesis}
EXAMPLES=${SCHEMATHESIS_EXAMPLES:-100}
SEED=${SCHEMATHESIS_SEED:-$((RANDOM * 32768 + RANDOM))}
WORK=$(mktemp -d)
HUB_PID=""

log() { printf '[schemathesis] %s\n' "$*" >&2; }

cleanup() {
    if [ -n "$HUB_PID" ] && kill -0 "$HUB_PID" 2>/dev/null; then
        kill -TERM "$HUB_PID" 2>/dev/null || true
        wait "$HUB_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if ! command -v schemathesis >/dev/null 2>&1; then
    log "installing schemathesis from PyPI"
    PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
        python3 -m pip install --quiet 'schemathesis>=4,<5' >&2
fi
log "$(schemathesis --version)"

cargo build --locked -q -p edihub
BIN=$ROOT/target/debug/edihub
mkdir -p "$OUT"
rm -f "$OUT"/*.xml "$OUT"/*.out "$OUT"/edihub.log

sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
ADMIN_TOKEN="st-admin-$SEED"
SENDER_KEY="st-sender-$SEED"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
DB_URL=${SCHEMATHESIS_DATABASE_URL:-sqlite://$WORK/edihub.db}

cat >"$WORK/edihub.toml" <<EOF
listen = "127.0.0.1:$PORT"
database_url = "$DB_URL"
log_format = "json"
request_timeout_secs = 10

[admin]
token_sha256 = "$(sha "$ADMIN_TOKEN")"

[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["$(sha "$SENDER_KEY")"]
  [[tenants.environments]]
  id = "qa"
  on_key_reuse = "replay"

[[message_types]]
id = "ORDERS05"
duplicate_key_fields = ["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"]

[[message_types]]
id = "shop.order"
duplicate_key_fields = ["\$.id"]

# Unsigned, so schemathesis reaches the parser and the store.
[[integrations]]
id = "open"
tenant = "acme"
environment = "prod"
message_type = "shop.order"
event_id = { path = "\$.id" }
signature = { scheme = "none" }

# Signed: every generated request is refused with 401.
[[integrations]]
id = "signed"
tenant = "acme"
environment = "prod"
message_type = "shop.order"
signature = { scheme = "shopify", secret_env = "ST_SHOP_SECRET" }
EOF

env -i PATH="$PATH" ST_SHOP_SECRET="st-shop-secret-$SEED" EDIHUB_LOG=info \
    "$BIN" --config "$WORK/edihub.toml" serve >"$OUT/edihub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 1 100); do
    curl -fsS "$URL/healthz" >/dev/null 2>&1 && break
    kill -0 "$HUB_PID" 2>/dev/null || { cat "$OUT/edihub.log" >&2; exit 1; }
    sleep 0.2
done
curl -fsS "$URL/healthz" >/dev/null

# One real message, so the message routes also answer 200 (and their bodies are checked).
MESSAGE_ID=$(curl -fsS -H "Authorization: Bearer $SENDER_KEY" -H 'Content-Type: application/xml' \
    --data-binary @fixtures/idoc/orders05.xml "$URL/api/edi-hub/receive-message" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
cat >"$WORK/schemathesis.toml" <<EOF
[parameters]
"path.integration_id" = "open"

[[operations]]
include-path = ["/admin/messages/{id}", "/admin/messages/{id}/payload"]
parameters = { "path.id" = "$MESSAGE_ID" }
EOF

log "edihub at $URL on ${DB_URL%%:*}, seed $SEED, $EXAMPLES examples per operation"
COMMON=(--no-color --config-file "$WORK/schemathesis.toml" run "$URL/openapi.json" --seed "$SEED"
    --max-examples "$EXAMPLES" --workers 2 --request-timeout 15)
status=0
run_pass() { # name, then schemathesis arguments
    local name=$1
    shift
    log "pass $name"
    if (cd "$OUT" && schemathesis "${COMMON[@]}" --report junit --report-junit-path "$OUT/$name.xml" "$@") \
        >"$OUT/$name.out" 2>&1; then
        log "pass $name: OK ($(grep -E 'generated' "$OUT/$name.out" | tr -s ' ' | head -1))"
        return 0
    fi
    log "pass $name: FAILED (see $OUT/$name.out)"
    sed -n '/^=* SUMMARY =*$/,$p' "$OUT/$name.out" >&2
    return 1
}
run_pass admin -H "Authorization: Bearer $ADMIN_TOKEN" \
    --include-path-regex '^/admin/|^/(healthz|readyz|metrics|openapi\.json)$' \
    --checks all --exclude-checks positive_data_acceptance || status=1
run_pass sender -H "Authorization: Bearer $SENDER_KEY" --include-path-regex '^/api/' \
    --checks all --exclude-checks positive_data_acceptance || status=1
log "pass acceptance (report only)"
(cd "$OUT" && schemathesis "${COMMON[@]}" -H "Authorization: Bearer $ADMIN_TOKEN" --include-path-regex '^/admin/' \
    --checks positive_data_acceptance) >"$OUT/acceptance.out" 2>&1 || true
grep -E '^(_+ [A-Z]+ /|- ST|\[[0-9]{3}\])' "$OUT/acceptance.out" | head -40 >&2 || true

# What edihub itself says about the run.
fivexx=$(grep -c '"status":5[0-9][0-9]' "$OUT/edihub.log" || true)
errors=$(grep -c '"level":"ERROR"' "$OUT/edihub.log" || true)
panics=$(grep -ci 'panicked' "$OUT/edihub.log" || true)
requests=$(grep -c '"message":"request finished"' "$OUT/edihub.log" || true)
log "edihub answered $requests requests: $fivexx 5xx, $errors ERROR lines, $panics panics"
[ "$fivexx" = 0 ] && [ "$errors" = 0 ] && [ "$panics" = 0 ] || status=1
exit $status

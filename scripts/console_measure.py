#!/usr/bin/env python3
"""Times the console's pages with 1 million stored messages on PostgreSQL.

Not part of `make test` or `make bench`: run by hand, then copy the table
into BENCHMARKS.md ("Console pages with 1 million messages").

    cargo build --release -p edihub
    scripts/console_measure.py            # EDIHUB_BIN, MEASURE_PG, MEASURE_ROWS, MEASURE_REPEAT

1. creates the database `edihub_console_measure` on MEASURE_PG (default the
   local server, user postgres) and lets `edihub migrate` create the schema;
2. fills it in SQL (generate_series): MEASURE_ROWS messages (1,000,000) over
   30 days in acme/prod and acme/qa, four message types, 5 % of them with a
   blocked duplicate in the audit log, one delivery each to `erp` (with one
   attempt; the last 2,000 still pending, 500 failed) - then VACUUM ANALYZE;
3. starts `edihub serve` on it (the destination disabled, so its worker
   sends nothing) and requests each page MEASURE_REPEAT (20) times in a row
   as a browser would (Accept: text/html, Basic credentials), after one
   warm-up request; prints the warm-up request's time ("first": for the
   overview, the roll-up of the hours not yet in its hourly rollup) and
   p50/p95/max per page as a Markdown table; then walks two searches that
   no index answers (a sender with no messages, a key value 15 days back)
   page by page through their JSON `next_cursor` to the end;
4. stops edihub (by its PID) and drops the database (MEASURE_KEEP=1 keeps
   it; MEASURE_REUSE=1 then measures again on it without filling).
"""

import base64
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("EDIHUB_BIN", os.path.join(ROOT, "target/release/edihub"))
PG = os.environ.get("MEASURE_PG", "postgres://postgres@127.0.0.1:5432")
DB = "edihub_console_measure"
ROWS = int(os.environ.get("MEASURE_ROWS", "1000000"))
REPEAT = int(os.environ.get("MEASURE_REPEAT", "20"))
PORT = int(os.environ.get("MEASURE_PORT", "18481"))
ADMIN = "measure-admin-token"

CONFIG = f"""
listen = "127.0.0.1:{PORT}"
database_url = "{PG}/{DB}"

[admin]
token_sha256 = "{hashlib.sha256(ADMIN.encode()).hexdigest()}"

[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{hashlib.sha256(b'measure-prod').hexdigest()}"]
  [[tenants.environments]]
  id = "qa"
  api_keys_sha256 = ["{hashlib.sha256(b'measure-qa').hexdigest()}"]

[[message_types]]
id = "ORDERS05"
duplicate_key_fields = ["E1EDK01.BELNR"]

[delivery]
allow_private_destinations = true

[[destinations]]
id = "erp"
tenant = "acme"
environment = "prod"
url = "http://127.0.0.1:9/erp"
enabled = false
"""

# Messages: i = 1..ROWS, newest last, spread over 30 days before now.
FILL = """
INSERT INTO destinations (id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at)
VALUES ('erp', 'acme', 'prod', NULL, true,
        '{{"id":"erp","tenant":"acme","environment":"prod","url":"http://127.0.0.1:9/erp","format":"envelope","timeout_secs":10,"enabled":true}}',
        'config', now());
-- Ids as edihub mints them (UUIDv7: the receive time in the first 48 bits),
-- so each row lands in the partition of its time; no fingerprint holds a
-- claim (no message_claims rows).
INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender,
    key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, provider_event_id,
    packet_index, content_type, payload, received_at)
SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(r, 1, 3)
        || '8' || substr(r, 4, 15))::uuid,
    'acme', CASE WHEN i % 10 = 0 THEN 'qa' ELSE 'prod' END,
    (ARRAY['ORDERS05', 'INVOIC02', 'DELVRY07', 'shop.order'])[1 + i % 4],
    'ORDERS', lpad(i::text, 16, '0'), 'PARTNER' || (i % 200),
    md5('f' || i), 'key', NULL,
    jsonb_build_array(jsonb_build_object('path', 'E1EDK01.BELNR', 'values', jsonb_build_array('PO-' || i))),
    NULL, NULL, 0, 'application/xml',
    convert_to('<ORDERS05><IDOC><EDI_DC40><DOCNUM>' || lpad(i::text, 16, '0') || '</DOCNUM></EDI_DC40>'
        || repeat('<E1EDP01><MENGE>1</MENGE></E1EDP01>', 20) || '</IDOC></ORDERS05>', 'UTF8'),
    t
FROM generate_series(1, {rows}) AS i,
     LATERAL (SELECT md5('m' || i) AS r, now() - interval '30 days' * (1 - i::float8 / {rows}) AS t) AS x;
-- The outbox rows edihub's insert statement writes with each message
-- (migration 0013): one to `erp` per message of acme/prod.
INSERT INTO deliveries (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at)
SELECT id, 'erp', 'pending', 0, received_at, received_at, received_at FROM messages
WHERE tenant_id = 'acme' AND environment_id = 'prod';
INSERT INTO audit_events (occurred_at, action, tenant_id, environment_id, message_type, fingerprint,
    detected_by, message_id, details)
SELECT m.received_at + interval '1 minute', 'message.duplicate_blocked', m.tenant_id, m.environment_id,
    m.message_type, m.key_fingerprint, 'fingerprint', m.id,
    jsonb_build_object('docnum', m.docnum, 'key_values', m.key_values)
FROM messages m WHERE ('x' || substr(m.id::text, 1, 8))::bit(32)::int % 20 = 0;
UPDATE deliveries SET status = 'delivered', attempts = 1, last_status_code = 200, updated_at = created_at
WHERE created_at < now() - interval '1 hour';
UPDATE deliveries SET status = 'failed', attempts = 10, last_status_code = 500, last_error = 'HTTP 500'
WHERE message_id IN (SELECT message_id FROM deliveries WHERE status = 'delivered'
                     ORDER BY created_at DESC LIMIT 500);
INSERT INTO delivery_attempts (message_id, destination_id, attempted_at, status_code, latency_ms, error,
    response_prefix)
SELECT message_id, destination_id, created_at + interval '1 second', last_status_code, 12, last_error, 'ok'
FROM deliveries WHERE status <> 'pending';
ANALYZE;
"""


def psql(dbname, sql):
    subprocess.run(["psql", f"{PG}/{dbname}", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True)


def get(path, auth):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}",
                                 headers={"Accept": "text/html", "Authorization": auth})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req) as res:
        res.read()
        status = res.status
    return status, (time.perf_counter() - t0) * 1000


def pages():
    mid = subprocess.run(["psql", f"{PG}/{DB}", "-At", "-c",
                          "SELECT message_id FROM audit_events ORDER BY id DESC LIMIT 1"],
                         check=True, capture_output=True, text=True).stdout.strip()
    mid_rows = ROWS // 2
    return [
        ("overview", "/admin"),
        ("message list (newest 100)", "/admin/messages"),
        ("search by docnum", f"/admin/messages?docnum={mid_rows}"),
        ("search by a recent key value", f"/admin/messages?key_value=PO-{ROWS - 50}"),
        ("search by a key value 15 days back (first page)", f"/admin/messages?key_value=PO-{mid_rows}"),
        ("search by fingerprint", f"/admin/messages?fingerprint={hashlib.md5(f'f{mid_rows}'.encode()).hexdigest()}"),
        ("search by sender", "/admin/messages?sender=PARTNER7"),
        ("search by a sender with no messages", "/admin/messages?sender=NOBODY"),
        ("search by type and time range", "/admin/messages?message_type=INVOIC02&since=2020-01-01T00:00:00Z"),
        ("message detail (duplicates, deliveries)", f"/admin/messages/{mid}"),
        ("audit log (newest 100)", "/admin/audit"),
        ("audit filtered by action", "/admin/audit?action=message.duplicate_blocked"),
        ("message types", "/admin/message-types"),
        ("integrations", "/admin/integrations"),
        ("destinations", "/admin/destinations"),
    ]


def walk(query, auth):
    """Follows a JSON search's next_cursor until it is null: (pages, found,
    total ms, slowest page ms)."""
    cursor, pages, found, times = None, 0, 0, []
    while True:
        path = f"/admin/messages?{query}" + (f"&cursor={cursor}" if cursor else "")
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", headers={"Authorization": auth})
        t0 = time.perf_counter()
        with urllib.request.urlopen(req) as res:
            body = json.loads(res.read())
        times.append((time.perf_counter() - t0) * 1000)
        pages += 1
        found += len(body["messages"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages, found, sum(times), max(times)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    reuse = os.environ.get("MEASURE_REUSE") == "1"
    if not reuse:
        psql("postgres", f"DROP DATABASE IF EXISTS {DB}")
        psql("postgres", f"CREATE DATABASE {DB}")
    server = None
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(CONFIG)
        config = f.name
    try:
        if not reuse:
            subprocess.run([BIN, "--config", config, "migrate"], check=True)
            t0 = time.time()
            psql(DB, FILL.format(rows=ROWS))
            # What autovacuum does on a live hub (the local test server runs
            # with autovacuum off): without it, the deliveries' indexes keep
            # an entry for each of the 900,000 rows updated to `delivered`.
            psql(DB, "VACUUM ANALYZE")
            print(f"filled {ROWS} messages in {time.time() - t0:.0f} s", file=sys.stderr)
        log = open(os.path.join(tempfile.gettempdir(), "edihub-console-measure.log"), "w")
        env = dict(os.environ, EDIHUB_LOG="warn")
        server = subprocess.Popen([BIN, "--config", config, "serve"], stdout=log, stderr=log, env=env)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/readyz").read()
                break
            except OSError:
                time.sleep(0.1)
        auth = "Basic " + base64.b64encode(f"admin:{ADMIN}".encode()).decode()
        print(f"| Page | Request | first ms | p50 ms | p95 ms | max ms |\n|---|---|---:|---:|---:|---:|")
        for name, path in pages():
            status, first = get(path, auth)
            assert status == 200, (path, status)
            times = [get(path, auth)[1] for _ in range(REPEAT)]
            print(f"| {name} | `{path}` | {first:.1f} | {percentile(times, 50):.1f} | {percentile(times, 95):.1f} "
                  f"| {max(times):.1f} |")
        print("\n| Whole search, following next_cursor (JSON) | pages | found | total ms | slowest page ms |")
        print("|---|---:|---:|---:|---:|")
        for query in ["sender=NOBODY", f"key_value=PO-{ROWS // 2}"]:
            pages_, found, total, slowest = walk(query, auth)
            print(f"| `{query}` | {pages_} | {found} | {total:.0f} | {slowest:.1f} |")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        os.unlink(config)
        if os.environ.get("MEASURE_KEEP") != "1":
            psql("postgres", f"DROP DATABASE IF EXISTS {DB}")


if __name__ == "__main__":
    main()

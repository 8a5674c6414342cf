#!/usr/bin/env python3
"""Writes everything `make bench` sends or runs into a work directory.

    gen.py WORKDIR PG_URL SQLITE_PATH PORT_PG PORT_SQLITE

Files (nothing here is committed; the directory is thrown away):
- orders05.tmpl    ~5 KB ORDERS05 IDoc-XML with {{DOCNUM}}, {{BELNR}}, {{PONUM}}
                   markers that the Lua script fills per request;
- invoic02.tmpl    ~10 MB INVOIC02 IDoc-XML with 20,000 E1EDP01 items;
- webhook.tmpl     ~1 KB JSON webhook body with {{ID}};
- edihub-pg.toml / edihub-sqlite.toml   the server configurations;
- ceiling.sql      the pgbench script: BEGIN, edihub's message insert taken
                   verbatim from postgres/ingest/insert.rs, COMMIT;
- ceiling.vars     pgbench -D values for the ceiling (payload, key values);
- bulk-{1,2}.sql   S6: five million stored messages, two INSERT … SELECT halves.
"""
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

API_KEY = "bench-sender-key"
# The pull feed's consumer (scripts/bench/feed.py).
CONSUMER_KEY = "bench-consumer-key"
ADMIN_TOKEN = "bench-admin-token"
TENANT, ENV = "bench", "prod"
ORDERS_KEYS = ["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"]
INVOIC_KEYS = ["E1EDK02[QUALF=009].BELNR", "E1EDK01.BELNR"]


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def control(idoctyp, mestyp):
    return f"""    <EDI_DC40 SEGMENT="1">
      <TABNAM>EDI_DC40</TABNAM>
      <MANDT>100</MANDT>
      <DOCNUM>{{{{DOCNUM}}}}</DOCNUM>
      <DOCREL>757</DOCREL>
      <STATUS>30</STATUS>
      <DIRECT>2</DIRECT>
      <OUTMOD>2</OUTMOD>
      <IDOCTYP>{idoctyp}</IDOCTYP>
      <MESTYP>{mestyp}</MESTYP>
      <SNDPOR>SAPQ01</SNDPOR>
      <SNDPRT>LS</SNDPRT>
      <SNDPRN>Q01CLNT100</SNDPRN>
      <RCVPOR>EDIHUB</RCVPOR>
      <RCVPRT>LS</RCVPRT>
      <RCVPRN>EDIHUB</RCVPRN>
      <CREDAT>20240612</CREDAT>
      <CRETIM>101500</CRETIM>
    </EDI_DC40>
"""


def orders05():
    """An ORDERS05 like fixtures/idoc/orders05.xml, with items up to ~5 KB."""
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<ORDERS05>\n  <IDOC BEGIN="1">\n'
        + control("ORDERS05", "ORDERS")
        + """    <E1EDK01 SEGMENT="1">
      <ACTION>000</ACTION>
      <CURCY>EUR</CURCY>
      <BSART>NB</BSART>
      <BELNR>{{BELNR}}</BELNR>
    </E1EDK01>
    <E1EDK14 SEGMENT="1">
      <QUALF>008</QUALF>
      <ORGID>1000</ORGID>
    </E1EDK14>
    <E1EDK03 SEGMENT="1">
      <IDDAT>012</IDDAT>
      <DATUM>20240612</DATUM>
    </E1EDK03>
    <E1EDKA1 SEGMENT="1">
      <PARVW>AG</PARVW>
      <PARTN>0000100200</PARTN>
      <NAME1>Müller GmbH</NAME1>
      <STRAS>Hauptstraße 5</STRAS>
      <ORT01>Köln</ORT01>
      <PSTLZ>50667</PSTLZ>
      <LAND1>DE</LAND1>
    </E1EDKA1>
    <E1EDK02 SEGMENT="1">
      <QUALF>001</QUALF>
      <BELNR>{{PONUM}}</BELNR>
      <DATUM>20240611</DATUM>
    </E1EDK02>
    <E1EDK02 SEGMENT="1">
      <QUALF>002</QUALF>
      <BELNR>{{BELNR}}</BELNR>
    </E1EDK02>
"""
    )
    tail = "  </IDOC>\n</ORDERS05>\n"
    items = []
    i = 0
    while len((head + "".join(items) + tail).encode()) < 5000:
        i += 1
        items.append(
            f"""    <E1EDP01 SEGMENT="1">
      <POSEX>{i * 10:05d}</POSEX>
      <MENGE>{i * 3}.000</MENGE>
      <MENEE>PCE</MENEE>
      <E1EDP19 SEGMENT="1">
        <QUALF>001</QUALF>
        <IDTNR>CUST-MAT-{i}</IDTNR>
      </E1EDP19>
      <E1EDP19 SEGMENT="1">
        <QUALF>002</QUALF>
        <IDTNR>MAT-{100200 + i}</IDTNR>
        <KTEXT>Schraube M{i} &amp; Mutter</KTEXT>
      </E1EDP19>
    </E1EDP01>
"""
        )
    return head + "".join(items) + tail


def invoic02(items=20000, target=10 * 1024 * 1024):
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<INVOIC02>\n  <IDOC BEGIN="1">\n'
        + control("INVOIC02", "INVOIC")
        + """    <E1EDK01 SEGMENT="1">
      <CURCY>EUR</CURCY>
      <BELNR>{{BELNR}}</BELNR>
    </E1EDK01>
    <E1EDK02 SEGMENT="1">
      <QUALF>009</QUALF>
      <BELNR>{{PONUM}}</BELNR>
      <DATUM>20240612</DATUM>
    </E1EDK02>
"""
    )
    tail = "  </IDOC>\n</INVOIC02>\n"

    def item(i, pad):
        return f"""    <E1EDP01 SEGMENT="1">
      <POSEX>{i:06d}</POSEX>
      <MENGE>{i % 97 + 1}.000</MENGE>
      <MENEE>PCE</MENEE>
      <NTGEW>{i % 13}.250</NTGEW>
      <E1EDP02 SEGMENT="1">
        <QUALF>001</QUALF>
        <BELNR>4500{i:06d}</BELNR>
      </E1EDP02>
      <E1EDP19 SEGMENT="1">
        <QUALF>002</QUALF>
        <IDTNR>MAT-{i:08d}</IDTNR>
        <KTEXT>Item {i} {"x" * pad}</KTEXT>
      </E1EDP19>
      <E1EDP26 SEGMENT="1">
        <QUALF>003</QUALF>
        <BETRG>{i * 7 % 10000}.50</BETRG>
      </E1EDP26>
    </E1EDP01>
"""

    base = len((head + tail).encode()) + sum(len(item(i, 0).encode()) for i in range(1, items + 1))
    pad = max(0, (target - base) // items)
    return head + "".join(item(i, pad) for i in range(1, items + 1)) + tail


def webhook():
    """~1 KB of JSON, unique by {{ID}} (also the Standard Webhooks webhook-id)."""
    lines = [
        {"sku": f"SKU-{i:05d}", "qty": i, "price": f"{i * 3}.99", "title": f"Bench article number {i}"}
        for i in range(1, 12)
    ]
    body = {
        "id": "{{ID}}",
        "type": "order.created",
        "created_at": "2024-06-12T10:15:00Z",
        "data": {"order": {"id": "{{ID}}", "currency": "EUR", "customer": "cust-4711", "lines": lines}},
    }
    return json.dumps(body, separators=(",", ":"))


def config(port, url, max_conns):
    wh = "\n".join(
        [
            "[[integrations]]",
            'id = "bench-hooks"',
            f'tenant = "{TENANT}"',
            f'environment = "{ENV}"',
            'message_type = "bench.event"',
            'event_id = { header = "webhook-id" }',
            'signature = { scheme = "standard-webhooks", secret_env = "BENCH_WH_SECRET" }',
        ]
    )
    return f"""# Generated by scripts/bench/gen.py for `make bench`; thrown away afterwards.
listen = "127.0.0.1:{port}"
database_url = "{url}"
max_body_bytes = 33554432
database_max_connections = {max_conns}
request_timeout_secs = 60

[admin]
token_sha256 = "{sha(ADMIN_TOKEN)}"

[[tenants]]
id = "{TENANT}"
  [[tenants.environments]]
  id = "{ENV}"
  api_keys_sha256 = ["{sha(API_KEY)}"]
  consumer_keys_sha256 = ["{sha(CONSUMER_KEY)}"]
  on_key_reuse = "reject"

[[message_types]]
id = "ORDERS05"
duplicate_key_fields = {json.dumps(ORDERS_KEYS)}
duplicate_window_hours = 168

[[message_types]]
id = "INVOIC02"
duplicate_key_fields = {json.dumps(INVOIC_KEYS)}
duplicate_window_hours = 720

[[message_types]]
id = "bench.event"
duplicate_key_fields = ["$.id"]
duplicate_window_hours = 72

{wh}
{delivery_settings()}"""


def delivery_settings():
    """The `[delivery]` section: private destinations allowed, and
    BENCH_DELIVERY_IN_FLIGHT as `delivery.max_in_flight_per_destination`
    for scenario D (the hub's default when unset)."""
    n = os.environ.get("BENCH_DELIVERY_IN_FLIGHT")
    # The bench's receivers listen on loopback.
    in_flight = f"max_in_flight_per_destination = {int(n)}\n" if n else ""
    return f"\n[delivery]\nallow_private_destinations = true\n{in_flight}"


INSERT_RS = "crates/edihub-store/src/postgres/ingest/insert.rs"


def insert_statement(insert_rs):
    """The statement of `insert_messages` in INSERT_RS as S1 runs it (its
    payload bound, nothing leased): the text before the bound `VALUES` list
    and the text after it, from the function's string literals (the
    payload column's expression between the second and the third; the
    lease arrays bound between the later ones, each empty, as S1 has no
    destination to lease), with Rust's `\\`-newline continuations joined."""
    body = insert_rs[insert_rs.index("pub(crate) async fn insert_messages"):]
    body = body[:body.index("\n}\n")]
    literals = [re.sub(r"\\\n\s*", "", lit) for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', body, re.S)]
    if len(literals) != 6:
        sys.exit(f"gen.py: insert_messages in {INSERT_RS} has {len(literals)} string literals, not 6 "
                 "(head, claim and message, outbox up to the lease arrays, the three arrays' casts)")
    head, before, after = literals[:3]
    tail = before + "payload" + "'{}'".join([after] + literals[3:])
    if not head.startswith("WITH v (") or "INSERT INTO messages" not in tail or not after.startswith(", received_at") \
            or not after.endswith("unnest("):
        sys.exit(f"gen.py: insert_messages in {INSERT_RS} no longer reads `WITH v (` … `content_type, <payload>, "
                 "received_at` … `unnest(<lease arrays>)`")
    return head, tail


# The PostgreSQL type of each of the 19 bound columns: in the insert's
# `VALUES` (a CTE) pgbench's untyped parameters need them; sqlx sends typed ones.
ROW_TYPES = ["uuid", "text", "text", "text", "text", "text", "text", "text", "text", "text",
             "timestamptz", "jsonb", "text", "text", "int4", "text", "bytea", "timestamptz", "uuid"]


def ceiling(insert_rs):
    """pgbench's version of one new message: the statement edihub's
    `insert_messages` builds for one row on PostgreSQL (its head, one
    VALUES tuple of 19 parameters, the fingerprint bound twice, its tail:
    the claim, the message, its outbox rows and its answer), in
    autocommit, its parameters bound from pgbench variables (sent as
    parameters with -M prepared, like sqlx does) or computed on the server
    where they must be unique per transaction."""
    order = (1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18)
    values = "VALUES (" + ", ".join(f"(${i})::{t}" for i, t in zip(order, ROW_TYPES)) + ")"
    head, tail = insert_statement(insert_rs)
    insert = head + values + tail
    params = {
        # uuid v7-like (millisecond prefix), as edihub's Uuid::now_v7: the
        # primary key grows at its right edge.
        1: "(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') "
        "|| substr(md5(:r1::text || :client_id::text), 1, 20))::uuid",
        2: ":tenant",
        3: ":env",
        4: ":mtype",
        5: ":mestyp",
        6: ":docnum",
        7: ":sender",
        8: "encode(sha256((:r1::text || '.' || :r2::text || '.' || :client_id::text)::bytea), 'hex')",
        9: ":basis",
        10: "now() + interval '168 hours'",
        11: ":keyvalues",
        12: "NULL",
        13: "NULL",
        14: "0",
        15: ":ctype",
        16: ":payload",
        17: "now()",
        # payload_message_id: a single document stores its own body.
        18: "NULL",
    }
    stmt = re.sub(r"\$(\d+)\b", lambda m: params[int(m.group(1))], insert)
    return (
        f"-- Generated by scripts/bench/gen.py from {INSERT_RS} (insert_messages).\n"
        "\\set r1 random(1, 9223372036854775806)\n"
        "\\set r2 random(1, 9223372036854775806)\n"
        "\\set docnum random(1, 9999999999999999)\n"
        # One autocommit INSERT per message: what one message costs when each
        # is its own transaction. edihub sends the same row as part of a
        # multi-row INSERT (crates/edihub-store/src/ingest/group/), so a ratio above
        # 1.0 is the gain of group insert over one commit per message.
        + stmt + ";\n"
    )


def bulk(n, lo=1, hi=None):
    """Rows lo..hi of n stored ORDERS05 messages of the last 80 days: 4 of 5 still hold their
    fingerprint (window not passed), 1 of 5 released it; nothing that the
    retention task would release or purge during the run."""
    hi = n if hi is None else hi
    return f"""-- Generated by scripts/bench/gen.py: rows {lo}..{hi} of S6's {n} stored messages.
-- Ids as edihub mints them (UUIDv7), so each row lands in the partition of
-- its time; the fingerprints still held are rows of message_claims.
WITH m AS (
INSERT INTO messages (id, tenant_id, environment_id, message_type, mestyp, docnum, sender,
    key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values,
    idempotency_key, provider_event_id, packet_index, content_type, payload, received_at)
SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || substr(fp, 1, 3)
        || '8' || substr(fp, 4, 15))::uuid,
       '{TENANT}', '{ENV}', 'ORDERS05', 'ORDERS', lpad(g::text, 16, '0'), 'Q01CLNT100',
       fp, 'key_fields',
       CASE WHEN g % 5 = 0 THEN t + interval '168 hours' ELSE now() + interval '1 hour' * (g % 160 + 1) END,
       jsonb_build_array(jsonb_build_object('path', 'E1EDK01.BELNR', 'values', jsonb_build_array('B' || g)),
                         jsonb_build_object('path', 'E1EDK02[QUALF=001].BELNR', 'values', jsonb_build_array('PO-' || g))),
       NULL, NULL, 0, 'application/xml',
       convert_to(repeat('<E1EDP01><POSEX>' || g || '</POSEX></E1EDP01>', 4), 'UTF8'),
       t
FROM generate_series({lo}, {hi}) AS g,
     LATERAL (SELECT encode(sha256(('bulk-' || g)::bytea), 'hex') AS fp,
                     now() - interval '80 days' * (1 - g::float8 / {n}) - interval '1 minute' AS t) AS x
RETURNING id, docnum, key_fingerprint, fingerprint_expires_at, received_at)
INSERT INTO message_claims (tenant_id, environment_id, fingerprint, message_id, expires_at, message_type,
    mestyp, docnum, received_at)
SELECT '{TENANT}', '{ENV}', key_fingerprint, id, fingerprint_expires_at, 'ORDERS05', 'ORDERS', docnum, received_at
FROM m WHERE docnum::bigint % 5 <> 0;
"""


def main_with(work, pg_url, sqlite_path, port_pg, port_sqlite):
    bulk_rows = int(os.environ.get("BENCH_S6_ROWS", "5000000"))
    pool = int(os.environ.get("BENCH_DB_CONNECTIONS", "32"))
    os.makedirs(work, exist_ok=True)

    def write(name, text):
        with open(os.path.join(work, name), "w", encoding="utf-8") as f:
            f.write(text)

    orders = orders05()
    write("orders05.tmpl", orders)
    write("invoic02.tmpl", invoic02())
    write("webhook.tmpl", webhook())
    write("edihub-pg.toml", config(port_pg, pg_url, pool))
    write("edihub-sqlite.toml", config(port_sqlite, f"sqlite://{sqlite_path}", 8))
    with open(os.path.join(ROOT, INSERT_RS), encoding="utf-8") as f:
        write("ceiling.sql", ceiling(f.read()))
    # What edihub binds for a typical S1 message (bytea in hex input form).
    body = orders.replace("{{DOCNUM}}", "0000000000000001").replace("{{BELNR}}", "B-1").replace("{{PONUM}}", "PO-1")
    key_values = json.dumps([{"path": p, "values": ["B-1" if "K01" in p else "PO-1"]} for p in ORDERS_KEYS])
    variables = {
        "tenant": TENANT,
        "env": ENV,
        "mtype": "ORDERS05",
        "mestyp": "ORDERS",
        "sender": "Q01CLNT100",
        "basis": "key_fields",
        "keyvalues": key_values,
        "ctype": "application/xml",
        "payload": "\\x" + body.encode().hex(),
    }
    write("ceiling.vars", json.dumps(variables))
    # Two halves, loaded by two sessions at once (one per core).
    half = bulk_rows // 2
    write("bulk-1.sql", bulk(bulk_rows, 1, half))
    write("bulk-2.sql", bulk(bulk_rows, half + 1, bulk_rows))
    write("keys.json", json.dumps({"api_key": API_KEY, "admin_token": ADMIN_TOKEN}))


if __name__ == "__main__":
    main_with(*sys.argv[1:6])

-- The console's hourly counts. Kept in step with
-- migrations/postgres/0011_activity_rollup.sql, except for its GIN index on
-- `key_values` (SQLite has none: a key-value search reads the messages the
-- other filters leave).

-- The overview's counts of each closed hour, per (tenant, environment,
-- message type) and what was counted (`accepted`, a duplicate detector or
-- `webhook.signature_rejected`): written by the first overview read after
-- the hour has settled, never by the ingest (see
-- crates/edihub-store/src/activity_rollup.rs).
CREATE TABLE activity_hours (
    hour           TEXT    NOT NULL,
    tenant_id      TEXT    NOT NULL,
    environment_id TEXT    NOT NULL,
    message_type   TEXT    NOT NULL,
    what           TEXT    NOT NULL,
    count          INTEGER NOT NULL,
    PRIMARY KEY (hour, tenant_id, environment_id, message_type, what)
);

-- The hours `activity_hours` holds: every whole hour from `rolled_from` to
-- `rolled_until` (NULL: none yet). One row; roll-ups take SQLite's write
-- lock, so they take turns.
CREATE TABLE activity_rollup (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    rolled_from  TEXT,
    rolled_until TEXT
);
INSERT INTO activity_rollup (id) VALUES (1);

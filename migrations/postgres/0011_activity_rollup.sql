-- The console's hourly counts and the key-value lookup. Kept in step with
-- migrations/sqlite/0011_activity_rollup.sql (which has no key-value index).

-- The overview's counts of each closed hour, per (tenant, environment,
-- message type) and what was counted (`accepted`, a duplicate detector or
-- `webhook.signature_rejected`): written by the first overview read after
-- the hour has settled, never by the ingest (see
-- crates/edihub-store/src/activity_rollup.rs).
CREATE TABLE activity_hours (
    hour           TIMESTAMPTZ NOT NULL,
    tenant_id      TEXT        NOT NULL,
    environment_id TEXT        NOT NULL,
    message_type   TEXT        NOT NULL,
    what           TEXT        NOT NULL,
    count          BIGINT      NOT NULL,
    PRIMARY KEY (hour, tenant_id, environment_id, message_type, what)
);

-- The hours `activity_hours` holds: every whole hour from `rolled_from` to
-- `rolled_until` (NULL: none yet). One row; roll-ups lock it, so replicas
-- take turns.
CREATE TABLE activity_rollup (
    id           INTEGER     PRIMARY KEY CHECK (id = 1),
    rolled_from  TIMESTAMPTZ,
    rolled_until TIMESTAMPTZ
);
INSERT INTO activity_rollup (id) VALUES (1);

-- Message search by key value is a containment query
-- (`key_values @> '[{"values": ["…"]}]'`) that a GIN index on key_values
-- (jsonb_path_ops) would answer in milliseconds. It is not created: measured
-- with `make bench` on a quiet machine, it cost S1 8-10 % of its throughput
-- and tripled its p99 (pending-list merges on the insert path); see
-- BENCHMARKS.md, "Console pages with 1 million messages".

-- Time partitions and the claims table (docs/scale.md, "Partitioning").
-- PostgreSQL only: migrations/sqlite keeps its unpartitioned schema.
--
-- `messages`, `deliveries` and `delivery_attempts` become range-partitioned
-- on the message id (a UUIDv7: its first 48 bits are the receive time in
-- milliseconds), `audit_events` on `occurred_at`. Each existing table is
-- renamed to `<table>_p_initial` and attached, as it is, as the first
-- partition: from MINVALUE to the start of tomorrow (UTC). The attach
-- checks the old rows against that bound (one scan of each table); the
-- parent's indexes adopt the old table's indexes of the same definition
-- instead of building them again. Only the indexes whose key must now
-- include the partition key are built. The whole migration runs in one
-- transaction holding ACCESS EXCLUSIVE on the old tables: writes wait for
-- it (docs/scale.md has the time per million rows).
--
-- Fingerprint claims move to `message_claims`, an unpartitioned table
-- whose primary key is the only arbiter of fingerprint races: a unique
-- index on a partitioned table must include the partition key, so the
-- partial unique index on `messages` cannot stay.

-- Bounds: the UUID whose 48-bit prefix is `at` in milliseconds, the rest zero.
CREATE FUNCTION edihub_uuid_bound(at timestamptz) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid;

-- The claims: one row per fingerprint that blocks repeats, deleted when
-- released. Tenant first, so the table can be distributed by tenant. A
-- claim carries what a duplicate's answer names of its holder (type,
-- MESTYP, DOCNUM, time), so the duplicate path reads this table alone: a
-- join to `messages` by id cannot be pruned at planning, and PostgreSQL 15
-- locks and opens every partition of such a plan (docs/scale.md).
CREATE TABLE message_claims (
    tenant_id      TEXT        NOT NULL,
    environment_id TEXT        NOT NULL,
    fingerprint    TEXT        NOT NULL,
    message_id     UUID        NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    message_type   TEXT        NOT NULL,
    mestyp         TEXT,
    docnum         TEXT,
    received_at    TIMESTAMPTZ NOT NULL
);
-- The active claims, copied before the keys and indexes are built: a
-- sorted build is several times faster than inserting into the indexes.
INSERT INTO message_claims (tenant_id, environment_id, fingerprint, message_id, expires_at,
                            message_type, mestyp, docnum, received_at)
SELECT tenant_id, environment_id, fingerprint, id, COALESCE(fingerprint_expires_at, 'infinity'),
       message_type, mestyp, docnum, received_at
FROM messages WHERE fingerprint IS NOT NULL;
ALTER TABLE message_claims ADD PRIMARY KEY (tenant_id, environment_id, fingerprint);
CREATE INDEX message_claims_expires_at ON message_claims (expires_at);
CREATE INDEX message_claims_message_id ON message_claims (message_id);

-- The old tables keep their rows; their triggers move to the parent.
DROP TRIGGER messages_enqueue_deliveries ON messages;
DROP TRIGGER messages_drop_deliveries ON messages;
DROP INDEX messages_fingerprint_active;
DROP INDEX messages_fingerprint_expiry;
ALTER TABLE messages DROP COLUMN fingerprint;

ALTER TABLE messages RENAME TO messages_p_initial;
ALTER INDEX messages_pkey RENAME TO messages_p_initial_pkey;
ALTER INDEX messages_key_fingerprint RENAME TO messages_p_initial_key_fingerprint;
ALTER INDEX messages_docnum RENAME TO messages_p_initial_docnum;
ALTER INDEX messages_received_at RENAME TO messages_p_initial_received_at;
ALTER INDEX messages_payload_message_id RENAME TO messages_p_initial_payload_message_id;
ALTER INDEX messages_feed RENAME TO messages_p_initial_feed;

ALTER TABLE deliveries RENAME TO deliveries_p_initial;
ALTER INDEX deliveries_pkey RENAME TO deliveries_p_initial_pkey;
ALTER INDEX deliveries_due RENAME TO deliveries_p_initial_due;
ALTER INDEX deliveries_line RENAME TO deliveries_p_initial_line;

-- Its primary key must include the partition key: (message_id, id).
ALTER TABLE delivery_attempts RENAME TO delivery_attempts_p_initial;
ALTER TABLE delivery_attempts_p_initial DROP CONSTRAINT delivery_attempts_pkey;
ALTER TABLE delivery_attempts_p_initial ALTER COLUMN id DROP IDENTITY;
ALTER TABLE delivery_attempts_p_initial ADD CONSTRAINT delivery_attempts_p_initial_pkey PRIMARY KEY (message_id, id);
ALTER INDEX delivery_attempts_delivery RENAME TO delivery_attempts_p_initial_delivery;

-- Its primary key must include the partition key: (id, occurred_at).
ALTER TABLE audit_events RENAME TO audit_events_p_initial;
ALTER TABLE audit_events_p_initial DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events_p_initial ALTER COLUMN id DROP IDENTITY;
ALTER TABLE audit_events_p_initial ADD CONSTRAINT audit_events_p_initial_pkey PRIMARY KEY (id, occurred_at);
ALTER INDEX audit_events_action RENAME TO audit_events_p_initial_action;
ALTER INDEX audit_events_fingerprint RENAME TO audit_events_p_initial_fingerprint;
ALTER INDEX audit_events_scope RENAME TO audit_events_p_initial_scope;
ALTER INDEX audit_events_occurred_at RENAME TO audit_events_p_initial_occurred_at;
ALTER INDEX audit_events_message_id RENAME TO audit_events_p_initial_message_id;

-- The parents: the same columns, defaults and compression.
CREATE TABLE messages (LIKE messages_p_initial INCLUDING DEFAULTS INCLUDING COMPRESSION INCLUDING STORAGE)
    PARTITION BY RANGE (id);
ALTER TABLE messages ADD PRIMARY KEY (id);
CREATE TABLE deliveries (LIKE deliveries_p_initial INCLUDING DEFAULTS)
    PARTITION BY RANGE (message_id);
ALTER TABLE deliveries ADD PRIMARY KEY (message_id, destination_id);
CREATE TABLE delivery_attempts (LIKE delivery_attempts_p_initial INCLUDING DEFAULTS)
    PARTITION BY RANGE (message_id);
ALTER TABLE delivery_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
ALTER TABLE delivery_attempts ADD PRIMARY KEY (message_id, id);
CREATE TABLE audit_events (LIKE audit_events_p_initial INCLUDING DEFAULTS)
    PARTITION BY RANGE (occurred_at);
ALTER TABLE audit_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
ALTER TABLE audit_events ADD PRIMARY KEY (id, occurred_at);
SELECT setval(pg_get_serial_sequence('delivery_attempts', 'id'),
              (SELECT COALESCE(max(id), 0) + 1 FROM delivery_attempts_p_initial), false);
SELECT setval(pg_get_serial_sequence('audit_events', 'id'),
              (SELECT COALESCE(max(id), 0) + 1 FROM audit_events_p_initial), false);

-- The old tables as first partitions, up to the start of tomorrow (UTC).
DO $$
DECLARE
    tomorrow timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '1 day';
BEGIN
    EXECUTE format('ALTER TABLE messages ATTACH PARTITION messages_p_initial FOR VALUES FROM (MINVALUE) TO (%L)',
                   edihub_uuid_bound(tomorrow));
    EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION deliveries_p_initial FOR VALUES FROM (MINVALUE) TO (%L)',
                   edihub_uuid_bound(tomorrow));
    EXECUTE format('ALTER TABLE delivery_attempts ATTACH PARTITION delivery_attempts_p_initial '
                   'FOR VALUES FROM (MINVALUE) TO (%L)', edihub_uuid_bound(tomorrow));
    EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION audit_events_p_initial '
                   'FOR VALUES FROM (MINVALUE) TO (%L)', tomorrow);
END
$$;

-- The parents' indexes: each adopts the first partition's index of the
-- same definition (no build).
CREATE INDEX messages_key_fingerprint ON messages (tenant_id, environment_id, key_fingerprint);
CREATE INDEX messages_docnum ON messages (tenant_id, environment_id, docnum);
CREATE INDEX messages_received_at ON messages (received_at);
CREATE INDEX messages_payload_message_id ON messages (payload_message_id) WHERE payload_message_id IS NOT NULL;
CREATE INDEX messages_feed ON messages (tenant_id, environment_id, feed_xid, id);
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_line ON deliveries (destination_id, created_at, message_id)
    WHERE status IN ('pending', 'failed');
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (message_id, destination_id, id);
CREATE INDEX audit_events_action ON audit_events (action, id);
CREATE INDEX audit_events_fingerprint ON audit_events (fingerprint, id);
CREATE INDEX audit_events_scope ON audit_events (tenant_id, environment_id, id);
CREATE INDEX audit_events_occurred_at ON audit_events (occurred_at);
CREATE INDEX audit_events_message_id ON audit_events (message_id, id) WHERE message_id IS NOT NULL;

-- The outbox trigger, now on the parent: a statement trigger with a
-- transition table fires once per insert into the partitioned table.
CREATE TRIGGER messages_enqueue_deliveries AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages
    FOR EACH STATEMENT EXECUTE FUNCTION messages_enqueue_deliveries();

-- A message deleted row by row (retention's stragglers) takes its
-- deliveries, their attempts and any claim left on it. A dropped partition
-- fires no trigger: retention drops the deliveries' partitions of the same
-- range with it, and never one a claim still points into.
CREATE OR REPLACE FUNCTION messages_drop_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM delivery_attempts a USING old_messages o WHERE a.message_id = o.id;
    DELETE FROM deliveries d USING old_messages o WHERE d.message_id = o.id;
    DELETE FROM message_claims c USING old_messages o WHERE c.message_id = o.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_drop_deliveries AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_messages
    FOR EACH STATEMENT EXECUTE FUNCTION messages_drop_deliveries();

-- Delivery: push destinations and the transactional outbox. Kept in step
-- with migrations/sqlite/0008_delivery.sql.

-- Push destinations, seeded from `[[destinations]]` and changed by admins.
-- Tenant, environment, message type filter and `enabled` are columns (the
-- outbox trigger joins on them); the rest (url, format, signature,
-- timeout) is read whole, as JSON.
CREATE TABLE destinations (
    id             TEXT        PRIMARY KEY,
    tenant_id      TEXT        NOT NULL,
    environment_id TEXT        NOT NULL,
    message_types  JSONB,                  -- NULL: every message type
    enabled        BOOLEAN     NOT NULL,
    definition     JSONB       NOT NULL,
    source         TEXT        NOT NULL,   -- 'config' | 'admin'
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX destinations_scope ON destinations (tenant_id, environment_id);

-- One row per (message, destination): the outbox. Written by the trigger
-- below in the statement that inserts the message, so no committed message
-- ever lacks its pending deliveries.
CREATE TABLE deliveries (
    message_id       UUID        NOT NULL,
    destination_id   TEXT        NOT NULL,
    status           TEXT        NOT NULL,  -- 'pending' | 'delivered' | 'failed'
    attempts         INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ NOT NULL,
    -- Set while a worker runs an attempt; another worker may claim the row
    -- once it has passed (the first one died).
    lease_until      TIMESTAMPTZ,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (message_id, destination_id)
);
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at) WHERE status = 'pending';

CREATE TABLE delivery_attempts (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id      UUID        NOT NULL,
    destination_id  TEXT        NOT NULL,
    attempted_at    TIMESTAMPTZ NOT NULL,
    status_code     INTEGER,
    latency_ms      BIGINT      NOT NULL,
    error           TEXT,
    response_prefix TEXT
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (message_id, destination_id, id);

-- A statement-level trigger with a transition table: a group insert of 64
-- messages costs one trigger call and one INSERT … SELECT. Duplicates never
-- insert a message row, so they never get deliveries.
CREATE FUNCTION messages_enqueue_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deliveries (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at)
    SELECT m.id, d.id, 'pending', 0, m.received_at, m.received_at, m.received_at
    FROM new_messages m
    JOIN destinations d ON d.tenant_id = m.tenant_id AND d.environment_id = m.environment_id
    WHERE d.enabled AND (d.message_types IS NULL OR d.message_types ? m.message_type);
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_enqueue_deliveries AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages
    FOR EACH STATEMENT EXECUTE FUNCTION messages_enqueue_deliveries();

-- A purged message takes its deliveries and their attempts with it (a
-- message no longer stored cannot be delivered), one call per DELETE.
CREATE FUNCTION messages_drop_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM delivery_attempts a USING old_messages o WHERE a.message_id = o.id;
    DELETE FROM deliveries d USING old_messages o WHERE d.message_id = o.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_drop_deliveries AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_messages
    FOR EACH STATEMENT EXECUTE FUNCTION messages_drop_deliveries();

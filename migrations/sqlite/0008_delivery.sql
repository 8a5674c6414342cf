-- Delivery: push destinations and the transactional outbox. Kept in step
-- with migrations/postgres/0008_delivery.sql.

CREATE TABLE destinations (
    id             TEXT    PRIMARY KEY,
    tenant_id      TEXT    NOT NULL,
    environment_id TEXT    NOT NULL,
    message_types  TEXT,              -- JSON array; NULL: every message type
    enabled        INTEGER NOT NULL,
    definition     TEXT    NOT NULL,
    source         TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);
CREATE INDEX destinations_scope ON destinations (tenant_id, environment_id);

CREATE TABLE deliveries (
    message_id       BLOB    NOT NULL,
    destination_id   TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    lease_until      TEXT,
    last_status_code INTEGER,
    last_error       TEXT,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    PRIMARY KEY (message_id, destination_id)
);
CREATE INDEX deliveries_due ON deliveries (destination_id, next_attempt_at) WHERE status = 'pending';

CREATE TABLE delivery_attempts (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id      BLOB    NOT NULL,
    destination_id  TEXT    NOT NULL,
    attempted_at    TEXT    NOT NULL,
    status_code     INTEGER,
    latency_ms      INTEGER NOT NULL,
    error           TEXT,
    response_prefix TEXT
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (message_id, destination_id, id);

-- SQLite has no statement-level triggers: one row trigger per message,
-- still inside the inserting statement.
CREATE TRIGGER messages_enqueue_deliveries AFTER INSERT ON messages
BEGIN
    INSERT INTO deliveries (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at)
    SELECT NEW.id, d.id, 'pending', 0, NEW.received_at, NEW.received_at, NEW.received_at
    FROM destinations d
    WHERE d.tenant_id = NEW.tenant_id AND d.environment_id = NEW.environment_id AND d.enabled
      AND (d.message_types IS NULL
           OR EXISTS (SELECT 1 FROM json_each(d.message_types) WHERE value = NEW.message_type));
END;

-- A purged message takes its deliveries and their attempts with it.
CREATE TRIGGER messages_drop_deliveries AFTER DELETE ON messages
BEGIN
    DELETE FROM delivery_attempts WHERE message_id = OLD.id;
    DELETE FROM deliveries WHERE message_id = OLD.id;
END;

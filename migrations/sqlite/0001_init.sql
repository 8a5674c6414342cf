-- edihub schema, SQLite flavour. Kept in step with migrations/postgres.
-- UUIDs are 16-byte BLOBs, JSON is TEXT, timestamps are RFC 3339 TEXT in UTC
-- (all written by edihub in one format, so they also sort as text).

CREATE TABLE message_types (
    tenant_id                TEXT    NOT NULL,
    id                       TEXT    NOT NULL,
    duplicate_key_fields     TEXT    NOT NULL,
    exclude_fields           TEXT    NOT NULL,
    duplicate_window_seconds INTEGER NOT NULL,
    source                   TEXT    NOT NULL,
    updated_at               TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE messages (
    id                     BLOB    PRIMARY KEY,
    tenant_id              TEXT    NOT NULL,
    environment_id         TEXT    NOT NULL,
    message_type           TEXT    NOT NULL,
    mestyp                 TEXT,
    docnum                 TEXT,
    sender                 TEXT,
    fingerprint            TEXT,
    key_fingerprint        TEXT,
    fingerprint_basis      TEXT    NOT NULL,
    fingerprint_expires_at TEXT,
    key_values             TEXT    NOT NULL,
    idempotency_key        TEXT,
    provider_event_id      TEXT,
    packet_index           INTEGER NOT NULL,
    content_type           TEXT,
    payload                BLOB    NOT NULL,
    received_at            TEXT    NOT NULL
);

CREATE UNIQUE INDEX messages_fingerprint_active
    ON messages (tenant_id, environment_id, fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX messages_key_fingerprint ON messages (tenant_id, environment_id, key_fingerprint);
CREATE INDEX messages_docnum ON messages (tenant_id, environment_id, docnum);
CREATE INDEX messages_received_at ON messages (received_at);
CREATE INDEX messages_fingerprint_expiry
    ON messages (fingerprint_expires_at) WHERE fingerprint IS NOT NULL;

CREATE TABLE idempotency_keys (
    tenant_id      TEXT    NOT NULL,
    environment_id TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    key            TEXT    NOT NULL,
    request_sha256 TEXT    NOT NULL,
    status_code    INTEGER NOT NULL,
    response_body  TEXT    NOT NULL,
    message_id     BLOB,
    created_at     TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, environment_id, kind, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

CREATE TABLE audit_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    occurred_at     TEXT    NOT NULL,
    action          TEXT    NOT NULL,
    tenant_id       TEXT,
    environment_id  TEXT,
    message_type    TEXT,
    fingerprint     TEXT,
    idempotency_key TEXT,
    detected_by     TEXT,
    message_id      BLOB,
    details         TEXT    NOT NULL
);
CREATE INDEX audit_events_action ON audit_events (action, id);
CREATE INDEX audit_events_fingerprint ON audit_events (fingerprint, id);
CREATE INDEX audit_events_scope ON audit_events (tenant_id, environment_id, id);
CREATE INDEX audit_events_occurred_at ON audit_events (occurred_at);

-- edihub schema, PostgreSQL flavour. Kept in step with migrations/sqlite:
-- the same tables, columns and indexes, in each database's native types.

CREATE TABLE message_types (
    tenant_id                TEXT        NOT NULL,  -- '' = global default
    id                       TEXT        NOT NULL,
    duplicate_key_fields     JSONB       NOT NULL,
    exclude_fields           JSONB       NOT NULL,
    duplicate_window_seconds BIGINT      NOT NULL,
    source                   TEXT        NOT NULL,  -- 'config' | 'admin'
    updated_at               TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE messages (
    id                     UUID        PRIMARY KEY,
    tenant_id              TEXT        NOT NULL,
    environment_id         TEXT        NOT NULL,
    message_type           TEXT        NOT NULL,
    mestyp                 TEXT,
    docnum                 TEXT,
    sender                 TEXT,
    -- The active dedup claim: set while the window lasts, NULL once released.
    fingerprint            TEXT,
    -- The fingerprint as computed, kept for lookups after the release.
    key_fingerprint        TEXT,
    fingerprint_basis      TEXT        NOT NULL,
    fingerprint_expires_at TIMESTAMPTZ,
    key_values             JSONB       NOT NULL,
    idempotency_key        TEXT,
    provider_event_id      TEXT,
    packet_index           INTEGER     NOT NULL,
    content_type           TEXT,
    payload                BYTEA       NOT NULL,
    received_at            TIMESTAMPTZ NOT NULL
);

-- The only arbiter of fingerprint races, across every replica.
CREATE UNIQUE INDEX messages_fingerprint_active
    ON messages (tenant_id, environment_id, fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX messages_key_fingerprint ON messages (tenant_id, environment_id, key_fingerprint);
CREATE INDEX messages_docnum ON messages (tenant_id, environment_id, docnum);
CREATE INDEX messages_received_at ON messages (received_at);
CREATE INDEX messages_fingerprint_expiry
    ON messages (fingerprint_expires_at) WHERE fingerprint IS NOT NULL;

CREATE TABLE idempotency_keys (
    tenant_id      TEXT        NOT NULL,
    environment_id TEXT        NOT NULL,
    kind           TEXT        NOT NULL,  -- 'idempotency_key' | 'provider_event_id'
    key            TEXT        NOT NULL,
    request_sha256 TEXT        NOT NULL,
    status_code    INTEGER     NOT NULL,
    response_body  TEXT        NOT NULL,
    message_id     UUID,
    created_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, environment_id, kind, key)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

CREATE TABLE audit_events (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at     TIMESTAMPTZ NOT NULL,
    action          TEXT        NOT NULL,
    tenant_id       TEXT,
    environment_id  TEXT,
    message_type    TEXT,
    fingerprint     TEXT,
    idempotency_key TEXT,
    detected_by     TEXT,
    message_id      UUID,
    details         JSONB       NOT NULL
);
CREATE INDEX audit_events_action ON audit_events (action, id);
CREATE INDEX audit_events_fingerprint ON audit_events (fingerprint, id);
CREATE INDEX audit_events_scope ON audit_events (tenant_id, environment_id, id);
CREATE INDEX audit_events_occurred_at ON audit_events (occurred_at);

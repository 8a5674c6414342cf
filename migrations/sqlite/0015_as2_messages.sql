-- AS2 messages received: one row per (station, partner, Message-ID), the
-- claim a re-sent Message-ID meets. Kept in step with
-- migrations/postgres/0016_as2_messages.sql (see there).
CREATE TABLE as2_messages (
    station            TEXT    NOT NULL,
    partner            TEXT    NOT NULL,
    message_id         TEXT    NOT NULL,
    tenant_id          TEXT    NOT NULL,
    environment_id     TEXT    NOT NULL,
    payload_sha256     TEXT    NOT NULL,
    received_at        TEXT    NOT NULL,
    mdn_mode           TEXT    NOT NULL,
    mdn_status         TEXT    NOT NULL,
    mdn_url            TEXT,
    mdn_headers        TEXT,
    mdn_body           BLOB,
    stored_message_id  BLOB,
    mdn_attempts       INTEGER NOT NULL DEFAULT 0,
    mdn_due_at         TEXT,
    mdn_lease_until    TEXT,
    mdn_error          TEXT,
    PRIMARY KEY (station, partner, message_id)
);
CREATE INDEX as2_messages_received_at ON as2_messages (received_at);
CREATE INDEX as2_messages_mdn_due ON as2_messages (mdn_due_at) WHERE mdn_status = 'pending';

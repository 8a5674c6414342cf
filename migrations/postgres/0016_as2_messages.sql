-- AS2 messages received: one row per (station, partner, Message-ID), the
-- claim a re-sent Message-ID meets. Kept in step with
-- migrations/sqlite/0015_as2_messages.sql.
--
-- A row is written when a message has been opened, before its payload is
-- stored (mdn_status 'processing'), and completed with the MDN as answered
-- (its headers and body, byte for byte) and the id of the message stored.
-- A message that fails leaves no row. An asynchronous MDN waits here for
-- its sender: mdn_status 'pending' until posted ('sent') or given up
-- ('failed'), retried at mdn_due_at.
CREATE TABLE as2_messages (
    station            TEXT        NOT NULL,
    partner            TEXT        NOT NULL,
    message_id         TEXT        NOT NULL,
    tenant_id          TEXT        NOT NULL,
    environment_id     TEXT        NOT NULL,
    payload_sha256     TEXT        NOT NULL,
    received_at        TIMESTAMPTZ NOT NULL,
    mdn_mode           TEXT        NOT NULL,
    mdn_status         TEXT        NOT NULL,
    mdn_url            TEXT,
    mdn_headers        JSONB,
    mdn_body           BYTEA,
    stored_message_id  UUID,
    mdn_attempts       INTEGER     NOT NULL DEFAULT 0,
    mdn_due_at         TIMESTAMPTZ,
    mdn_lease_until    TIMESTAMPTZ,
    mdn_error          TEXT,
    PRIMARY KEY (station, partner, message_id)
);
CREATE INDEX as2_messages_received_at ON as2_messages (received_at);
CREATE INDEX as2_messages_mdn_due ON as2_messages (mdn_due_at) WHERE mdn_status = 'pending';

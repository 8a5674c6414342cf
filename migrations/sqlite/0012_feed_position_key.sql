-- The pull feed's position becomes the row's own key (see 0009_feed.sql for
-- what a position must guarantee). 0009 set it with a trigger that, for
-- every stored message, bumped a counter row and then UPDATEd the message
-- it had just inserted: SQLite rewrites the whole record (a few KB of
-- payload, on overflow pages) and its feed index entry a second time.
--
-- `feed_seq` is now an INTEGER PRIMARY KEY AUTOINCREMENT, the rowid itself,
-- which SQLite assigns inside the inserting statement, so every insert path
-- gets its position without being told and nothing is written twice. The
-- guarantees of the counter hold: AUTOINCREMENT never hands out a number
-- twice, not even after retention has deleted the newest rows (its high
-- mark lives in sqlite_sequence, in the same transaction), VACUUM keeps an
-- INTEGER PRIMARY KEY as it is, and the one writer takes its numbers in
-- commit order, a rolled-back transaction taking them back. A row that
-- ON CONFLICT DO NOTHING skips may leave a number unused, which a cursor
-- does not notice: it only ever moves past numbers that were committed.
--
-- SQLite cannot change a column into the rowid in place, so the table is
-- rebuilt once: one pass copying every message, as 0009's numbering did.
-- PostgreSQL needs nothing of the kind: its feed is ordered by transaction
-- id, a column default (migrations/postgres/0009_feed.sql).

CREATE TABLE messages_rebuilt (
    id                     BLOB    NOT NULL UNIQUE,
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
    received_at            TEXT    NOT NULL,
    payload_message_id     BLOB,
    feed_seq               INTEGER PRIMARY KEY AUTOINCREMENT
);

INSERT INTO messages_rebuilt (id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint,
    key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, provider_event_id,
    packet_index, content_type, payload, received_at, payload_message_id, feed_seq)
SELECT id, tenant_id, environment_id, message_type, mestyp, docnum, sender, fingerprint,
    key_fingerprint, fingerprint_basis, fingerprint_expires_at, key_values, idempotency_key, provider_event_id,
    packet_index, content_type, payload, received_at, payload_message_id, feed_seq
FROM messages ORDER BY feed_seq;

-- Dropping the table drops its indexes and triggers; they are made again below.
DROP TABLE messages;
ALTER TABLE messages_rebuilt RENAME TO messages;

-- The high mark continues from the counter: numbers purged by retention
-- are not handed out again.
DELETE FROM sqlite_sequence WHERE name IN ('messages', 'messages_rebuilt');
INSERT INTO sqlite_sequence (name, seq)
SELECT 'messages', MAX(last, COALESCE((SELECT MAX(feed_seq) FROM messages), 0)) FROM feed_counter;
DROP TABLE feed_counter;

CREATE UNIQUE INDEX messages_fingerprint_active
    ON messages (tenant_id, environment_id, fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX messages_key_fingerprint ON messages (tenant_id, environment_id, key_fingerprint);
CREATE INDEX messages_docnum ON messages (tenant_id, environment_id, docnum);
CREATE INDEX messages_received_at ON messages (received_at);
CREATE INDEX messages_fingerprint_expiry
    ON messages (fingerprint_expires_at) WHERE fingerprint IS NOT NULL;
CREATE INDEX messages_payload_message_id ON messages (payload_message_id) WHERE payload_message_id IS NOT NULL;
CREATE INDEX messages_feed ON messages (tenant_id, environment_id, feed_seq, id);

-- 0008's outbox triggers, as they were.
CREATE TRIGGER messages_enqueue_deliveries AFTER INSERT ON messages
BEGIN
    INSERT INTO deliveries (message_id, destination_id, status, attempts, next_attempt_at, created_at, updated_at)
    SELECT NEW.id, d.id, 'pending', 0, NEW.received_at, NEW.received_at, NEW.received_at
    FROM destinations d
    WHERE d.tenant_id = NEW.tenant_id AND d.environment_id = NEW.environment_id AND d.enabled
      AND (d.message_types IS NULL
           OR EXISTS (SELECT 1 FROM json_each(d.message_types) WHERE value = NEW.message_type));
END;

CREATE TRIGGER messages_drop_deliveries AFTER DELETE ON messages
BEGIN
    DELETE FROM delivery_attempts WHERE message_id = OLD.id;
    DELETE FROM deliveries WHERE message_id = OLD.id;
END;

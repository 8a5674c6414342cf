-- The secret key that seals the pull feed's cursors (docs/delivery.md,
-- "The cursor"): a cursor is the position encrypted and authenticated under
-- it, so a consumer learns nothing of the numbers behind it (transaction
-- ids, which count every tenant's writes). Made once, here, so that every
-- replica and every restart seals and opens cursors alike. 32 bytes: the
-- SHA-256 of two random UUIDs (`gen_random_uuid`, 244 random bits) and the
-- time, as PostgreSQL has no random-bytes function without pgcrypto.
CREATE TABLE feed_cursor_key (
    id  smallint PRIMARY KEY CHECK (id = 1),
    key bytea    NOT NULL CHECK (octet_length(key) = 32)
);
INSERT INTO feed_cursor_key (id, key)
VALUES (1, sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || clock_timestamp()::text, 'UTF8')));

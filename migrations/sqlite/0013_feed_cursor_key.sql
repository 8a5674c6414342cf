-- The secret key that seals the pull feed's cursors. Kept in step with
-- migrations/postgres/0014_feed_cursor_key.sql (docs/delivery.md, "The
-- cursor"): a cursor is the position encrypted and authenticated under it,
-- so a consumer learns nothing of the numbers behind it (row keys, which
-- count every tenant's messages). Made once, here, so every restart seals
-- and opens cursors alike.
CREATE TABLE feed_cursor_key (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB    NOT NULL CHECK (length(key) = 32)
);
INSERT INTO feed_cursor_key (id, key) VALUES (1, randomblob(32));

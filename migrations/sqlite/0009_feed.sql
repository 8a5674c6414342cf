-- The pull feed (GET /api/edi-hub/messages): each message's position is
-- `feed_seq`, taken from a counter in the transaction that stores it.
-- SQLite has one writer, which holds the write lock from its first write
-- to its commit, so positions are handed out in commit order and a
-- rolled-back transaction gives its numbers back: a reader never sees a
-- number before an older one has committed. Kept in step with
-- migrations/postgres/0009_feed.sql.
--
-- Not the rowid itself: without an INTEGER PRIMARY KEY, VACUUM may
-- renumber rowids, and once retention has deleted the newest rows a new
-- rowid can repeat an old one (max + 1), which would put new messages
-- behind a consumer's cursor. The counter only ever grows.
ALTER TABLE messages ADD COLUMN feed_seq INTEGER;

CREATE TABLE feed_counter (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO feed_counter (id, last) VALUES (1, COALESCE((SELECT MAX(rowid) FROM messages), 0));

-- Existing rows keep their insertion order (one pass over the table).
UPDATE messages SET feed_seq = rowid;

CREATE INDEX messages_feed ON messages (tenant_id, environment_id, feed_seq, id);

-- Every insert path gets its position here, in the inserting statement.
CREATE TRIGGER messages_feed_position AFTER INSERT ON messages
BEGIN
    UPDATE feed_counter SET last = last + 1 WHERE id = 1;
    UPDATE messages SET feed_seq = (SELECT last FROM feed_counter WHERE id = 1) WHERE rowid = NEW.rowid;
END;

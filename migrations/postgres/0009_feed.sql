-- The pull feed (GET /api/edi-hub/messages): each message's position is
-- the id of the transaction that stored it, with the message id breaking
-- ties within a transaction. The feed returns only rows whose transaction
-- is older than the reading snapshot's xmin: every such transaction has
-- ended, so no row can later appear behind a consumer's cursor (see
-- docs/delivery.md, "Pull feed"). Kept in step with
-- migrations/sqlite/0009_feed.sql.
--
-- Two steps so that a populated table is not rewritten: a column added
-- with a constant default is only a catalog change (existing rows read
-- '0', i.e. "before every transaction", ordered among themselves by id);
-- the volatile default set afterwards applies to new rows only. Every
-- insert path (single, group, packet chunk) names its columns, so the
-- default sets the position on all of them.
ALTER TABLE messages ADD COLUMN feed_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE messages ALTER COLUMN feed_xid SET DEFAULT pg_current_xact_id();

-- The feed's one index: equality on the environment, then the position.
-- Built in this migration's transaction (CREATE INDEX CONCURRENTLY cannot
-- run in one): writes to messages wait while it is built, about as long as
-- one scan of the table.
CREATE INDEX messages_feed ON messages (tenant_id, environment_id, feed_xid, id);

-- A message type's fingerprint scope: the parties (`sender`, `receiver`)
-- its fingerprints are taken together with. Kept in step with
-- migrations/sqlite/0014_fingerprint_scope.sql. The default is no party,
-- under which every fingerprint is the one computed without a scope.
ALTER TABLE message_types ADD COLUMN fingerprint_scope JSONB NOT NULL DEFAULT '[]';

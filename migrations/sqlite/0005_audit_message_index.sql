-- See migrations/postgres/0005_audit_message_index.sql.
CREATE INDEX audit_events_message_id ON audit_events (message_id, id) WHERE message_id IS NOT NULL;

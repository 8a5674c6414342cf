-- The console's message page lists every duplicate blocked against a message
-- (audit events by message_id, newest first); without this index that was a
-- scan of the whole audit log per page view.
CREATE INDEX audit_events_message_id ON audit_events (message_id, id) WHERE message_id IS NOT NULL;

-- A packet's IDocs share one request body: the first stored IDoc keeps it,
-- the others point to that message instead of storing the body again.
ALTER TABLE messages ADD COLUMN payload_message_id UUID;
CREATE INDEX messages_payload_message_id ON messages (payload_message_id) WHERE payload_message_id IS NOT NULL;

-- See migrations/postgres/0003_packet_payload.sql.
ALTER TABLE messages ADD COLUMN payload_message_id BLOB;
CREATE INDEX messages_payload_message_id ON messages (payload_message_id) WHERE payload_message_id IS NOT NULL;

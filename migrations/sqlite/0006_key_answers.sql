-- See migrations/postgres/0006_key_answers.sql.
ALTER TABLE idempotency_keys ADD COLUMN answer TEXT;

-- See migrations/postgres/0004_payload_lz4.sql: SQLite stores payloads
-- uncompressed, so there is nothing to change. The version exists so both
-- backends keep the same migration numbers.
SELECT 1;

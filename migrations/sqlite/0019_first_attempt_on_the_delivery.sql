-- A first attempt that delivers is recorded on its delivery row, not as a
-- row of `delivery_attempts` (see
-- migrations/postgres/0020_first_attempt_on_the_delivery.sql).
ALTER TABLE deliveries ADD COLUMN first_attempted_at TEXT;
ALTER TABLE deliveries ADD COLUMN first_status_code INTEGER;
ALTER TABLE deliveries ADD COLUMN first_latency_ms INTEGER;
ALTER TABLE deliveries ADD COLUMN first_response_prefix TEXT;

-- A first attempt that delivers is recorded on its delivery row, not as a
-- row of `delivery_attempts`: most deliveries succeed at once, and their
-- attempt row was a third write per delivery (docs/delivery.md, "The
-- attempt log"). Every other attempt (a failure, a retry, a replay) is a
-- row of `delivery_attempts` as before. The columns stay NULL unless the
-- first attempt delivered, and keep their values through later replays.
-- Kept in step with migrations/sqlite/0019_first_attempt_on_the_delivery.sql.
ALTER TABLE deliveries
    ADD COLUMN first_attempted_at TIMESTAMPTZ,
    ADD COLUMN first_status_code INTEGER,
    ADD COLUMN first_latency_ms BIGINT,
    ADD COLUMN first_response_prefix TEXT;

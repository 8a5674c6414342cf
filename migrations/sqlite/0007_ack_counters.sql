-- See migrations/postgres/0007_ack_counters.sql.
CREATE TABLE ack_counters (
    tenant_id TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    partner TEXT NOT NULL,
    next_value INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, environment_id, partner)
);

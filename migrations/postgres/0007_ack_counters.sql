-- Acknowledgement control numbers (ISA13/GS06 of a 997/999/TA1, UNB 0020
-- of a CONTRL): one counter per (tenant, environment, partner), so every
-- acknowledgement the hub sends a partner has a number of its own, across
-- restarts and replicas. `next_value` is the number the next acknowledgement
-- gets; the store takes it and moves it on in one statement.
CREATE TABLE ack_counters (
    tenant_id TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    partner TEXT NOT NULL,
    next_value BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, environment_id, partner)
);

-- Partner webhook integrations (see migrations/postgres/0002_integrations.sql).
CREATE TABLE integrations (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    definition     TEXT NOT NULL,
    source         TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

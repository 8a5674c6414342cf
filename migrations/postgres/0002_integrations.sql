-- Partner webhook integrations. The definition (message type source, event id
-- location, signature scheme and the *name* of the secret's environment
-- variable) is kept as JSON: it is read whole, never queried by field.
CREATE TABLE integrations (
    id             TEXT        PRIMARY KEY,
    tenant_id      TEXT        NOT NULL,
    environment_id TEXT        NOT NULL,
    definition     JSONB       NOT NULL,
    source         TEXT        NOT NULL,  -- 'config' | 'admin'
    updated_at     TIMESTAMPTZ NOT NULL
);

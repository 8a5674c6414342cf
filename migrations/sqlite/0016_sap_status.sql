-- Status changes owed to a sending SAP system: one row per change of an
-- IDoc's state the hub reports back (39 stored, 41 delivered, 40 finally
-- failed), until a status IDoc carries it (`batch_message_id`, the status
-- message stored in the same transaction). Kept in step with
-- migrations/postgres/0017_sap_status.sql.
CREATE TABLE sap_status_changes (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id        TEXT    NOT NULL,
    environment_id   TEXT    NOT NULL,
    -- The hub's message the IDoc is (a re-sent IDoc: the message it repeats).
    message_id       BLOB    NOT NULL,
    -- The sender's IDoc number and logical message.
    docnum           TEXT    NOT NULL,
    mestyp           TEXT    NOT NULL,
    status           TEXT    NOT NULL,  -- '39' | '41' | '40'
    text             TEXT    NOT NULL,
    params           TEXT    NOT NULL DEFAULT '[]',
    created_at       TEXT    NOT NULL,
    batch_message_id BLOB
);
-- One pending status per IDoc and state: a re-send that arrives while the
-- first status is still queued adds nothing. Also the batcher's lookup.
CREATE UNIQUE INDEX sap_status_pending ON sap_status_changes (tenant_id, environment_id, docnum, status)
    WHERE batch_message_id IS NULL;
CREATE INDEX sap_status_of_message ON sap_status_changes (message_id);

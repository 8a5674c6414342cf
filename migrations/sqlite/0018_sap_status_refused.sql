-- A status change may be about an IDoc the hub refused (40 with the
-- refusal's reason): no message holds such an IDoc, so `message_id` is
-- NULL for it. Kept in step with migrations/postgres/0019_sap_status_refused.sql.
--
-- SQLite cannot drop a NOT NULL in place, so the table is rebuilt: the
-- rows keep their ids, the AUTOINCREMENT high mark is carried over (an id
-- is never handed out twice, not even one retention deleted), and the
-- indexes of 0016 and 0017 are made again.
ALTER TABLE sap_status_changes RENAME TO sap_status_changes_old;
DROP INDEX sap_status_pending;
DROP INDEX sap_status_of_message;
DROP INDEX sap_status_of_batch;

CREATE TABLE sap_status_changes (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id        TEXT    NOT NULL,
    environment_id   TEXT    NOT NULL,
    -- The hub's message the IDoc is (a re-sent IDoc: the message it
    -- repeats); NULL for an IDoc the hub refused.
    message_id       BLOB,
    -- The sender's IDoc number and logical message.
    docnum           TEXT    NOT NULL,
    mestyp           TEXT    NOT NULL,
    status           TEXT    NOT NULL,  -- '39' | '41' | '40'
    text             TEXT    NOT NULL,
    params           TEXT    NOT NULL DEFAULT '[]',
    created_at       TEXT    NOT NULL,
    batch_message_id BLOB
);
INSERT INTO sap_status_changes
    (id, tenant_id, environment_id, message_id, docnum, mestyp, status, text, params, created_at, batch_message_id)
SELECT id, tenant_id, environment_id, message_id, docnum, mestyp, status, text, params, created_at, batch_message_id
FROM sap_status_changes_old;
DELETE FROM sqlite_sequence WHERE name = 'sap_status_changes';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'sap_status_changes', seq FROM sqlite_sequence WHERE name = 'sap_status_changes_old';
DROP TABLE sap_status_changes_old;

-- As 0016 and 0017 made them.
CREATE UNIQUE INDEX sap_status_pending ON sap_status_changes (tenant_id, environment_id, docnum, status)
    WHERE batch_message_id IS NULL;
CREATE INDEX sap_status_of_message ON sap_status_changes (message_id);
CREATE INDEX sap_status_of_batch ON sap_status_changes (batch_message_id)
    WHERE batch_message_id IS NOT NULL;

-- The status changes a status message carries, found by that message: the
-- console's page of a status message (`of_message`) and retention, which
-- deletes carried changes only, read by it. Kept in step with
-- migrations/postgres/0018_sap_status_batch_index.sql.
CREATE INDEX sap_status_of_batch ON sap_status_changes (batch_message_id)
    WHERE batch_message_id IS NOT NULL;

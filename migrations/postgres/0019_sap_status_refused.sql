-- A status change may be about an IDoc the hub refused (40 with the
-- refusal's reason): no message holds such an IDoc, so `message_id` is
-- NULL for it. Kept in step with migrations/sqlite/0018_sap_status_refused.sql.
ALTER TABLE sap_status_changes ALTER COLUMN message_id DROP NOT NULL;

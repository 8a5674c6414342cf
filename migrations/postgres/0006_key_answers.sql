-- A request key keeps the answer to its first request as data (the
-- outcomes, JSON text), rendered by the server for every repeat. Keys stored
-- before keep their rendered response in status_code/response_body and
-- replay it as it was; new keys leave those at 0 and ''.
ALTER TABLE idempotency_keys ADD COLUMN answer TEXT;

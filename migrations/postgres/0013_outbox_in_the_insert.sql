-- The outbox rows are written by the message insert statement itself
-- (`crates/edihub-store/src/claims.rs`, `OUTBOX_TAIL`), no longer by the
-- statement trigger of 0008/0012: PostgreSQL fills a trigger's transition
-- table with each inserted row as it was before TOAST compression, so a
-- 10 MB body was copied into a temporary file and read back for the five
-- small columns the trigger joins on (BENCHMARKS.md, "Large bodies").
-- SQLite keeps its row trigger (it copies nothing). The trigger's function
-- goes with it: a trigger function cannot be called on its own.
DROP TRIGGER messages_enqueue_deliveries ON messages;
DROP FUNCTION messages_enqueue_deliveries();

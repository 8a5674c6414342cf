-- The console overview's delivery backlog per destination (see
-- crates/edihub-store/src/delivery_backlog.rs): the oldest pending delivery
-- by creation, and the count of failed ones, each from a partial index, so
-- that the delivered deliveries (nearly all of them) are never read.
CREATE INDEX deliveries_pending_age ON deliveries (destination_id, created_at) WHERE status = 'pending';
CREATE INDEX deliveries_failed ON deliveries (destination_id) WHERE status = 'failed';

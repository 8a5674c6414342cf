-- Delivery order and queue metrics. Kept in step with
-- migrations/sqlite/0010_delivery_line.sql.

-- The line of a destination with `ordering = "fifo"`: its deliveries not
-- yet delivered (pending, or failed: a dead letter holds the line), in
-- commit order (the message's received_at, then its time-ordered id). The
-- worker's claim reads the head of this index, one row.
CREATE INDEX deliveries_line ON deliveries (destination_id, created_at, message_id)
    WHERE status IN ('pending', 'failed');

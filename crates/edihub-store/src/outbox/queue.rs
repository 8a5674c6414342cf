//! A destination's queue as a whole: the head of a `fifo` destination's
//! line, and every destination's depth and oldest pending delivery.
//!
//! A `fifo` destination has one delivery in flight at most, in commit
//! order: the *line* is its deliveries not yet delivered (`pending`, or
//! `failed`: a dead letter holds the line until it is replayed), ordered by
//! the message's `received_at` and then its id (a UUIDv7, time-ordered
//! within a request's messages, so a packet's IDocs keep their order). The
//! claim takes the head of the line only, and only when it is due and not
//! leased: while an attempt runs, while the head waits for its retry, and
//! while it is `failed`, nothing behind it is claimed. On PostgreSQL the
//! head is locked with a plain `FOR UPDATE` (not `SKIP LOCKED`, which would
//! hand a second replica the *next* delivery while the first one claims the
//! head): a concurrent claim waits a moment, sees the lease and takes nothing.
//! The claims and the queues' depth are each backend's statements
//! (`postgres/outbox.rs`, `sqlite/outbox.rs`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::FromRow;

/// One destination's queue.
#[derive(Debug, Clone, PartialEq, Serialize, FromRow)]
pub struct DeliveryQueue {
    /// The destination.
    pub destination_id: String,
    /// Deliveries pending: due now, or waiting for their next attempt.
    pub depth: i64,
    /// When the oldest pending delivery was created (its message received).
    pub oldest: DateTime<Utc>,
}

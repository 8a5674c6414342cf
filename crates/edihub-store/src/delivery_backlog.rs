//! The console overview's delivery backlog: per destination, how many
//! deliveries wait (`pending`), how many gave up (`failed`), and when the
//! oldest waiting one was created and is next due. Each backend writes
//! it (`postgres/delivery_backlog.rs`, `sqlite/delivery_backlog.rs`).
//!
//! Each part reads a partial index on the delivery status: the pending
//! count `deliveries_due`, the failed count and the oldest pending delivery
//! the line index `deliveries_line` (`pending` or `failed`, by creation;
//! migration 0010), so the delivered deliveries, nearly all of them, are
//! never read. The statuses are literals, not parameters: a generic plan
//! can use a partial index only when the query itself implies its
//! predicate.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// One destination's backlog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct DeliveryBacklog {
    /// The destination.
    pub destination_id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// Its environment.
    pub environment_id: String,
    /// Whether it gets new deliveries.
    pub enabled: bool,
    /// Deliveries waiting for an attempt (or a retry).
    pub pending: i64,
    /// Deliveries that gave up after the last retry.
    pub failed: i64,
    /// When the oldest pending delivery was created (its message stored).
    pub oldest_pending_at: Option<DateTime<Utc>>,
    /// When the oldest pending delivery is next due.
    pub oldest_pending_due_at: Option<DateTime<Utc>>,
}

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

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{Decode, Encode, Executor, FromRow, IntoArguments, Type};

use super::ClaimedDelivery;
use crate::Result;

/// Per destination: deliveries pending (due or waiting for a retry) and
/// when the oldest of them was created. Served by `deliveries_due`
/// (partial on `status = 'pending'`), one pass over the pending rows.
const QUEUES: &str = "SELECT destination_id, COUNT(*) AS depth, MIN(created_at) AS oldest \
    FROM deliveries WHERE status = 'pending' GROUP BY destination_id ORDER BY destination_id";

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

/// The queue statements (the fifo claim locks differently per backend:
/// each backend's `outbox.rs`).
pub(crate) trait QueueSql: sqlx::Database {
    /// Every destination with pending deliveries, by id.
    fn delivery_queues(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Vec<DeliveryQueue>>> + Send;
}

impl<DB> QueueSql for DB
where
    DB: sqlx::Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Decode<'e, DB> + Type<DB>,
    for<'r> ClaimedDelivery: FromRow<'r, DB::Row>,
    for<'r> DeliveryQueue: FromRow<'r, DB::Row>,
{
    async fn delivery_queues(conn: &mut DB::Connection) -> Result<Vec<DeliveryQueue>> {
        Ok(sqlx::query_as(QUEUES).fetch_all(&mut *conn).await?)
    }
}

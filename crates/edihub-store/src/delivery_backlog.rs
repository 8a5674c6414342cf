//! The console overview's delivery backlog: per destination, how many
//! deliveries wait (`pending`), how many gave up (`failed`), and when the
//! oldest waiting one was created and is next due. Written once for both
//! backends ([`BacklogSql`]).
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
use sqlx::{Executor, FromRow, IntoArguments};

use crate::Result;

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

/// One row per destination, by id.
const BACKLOG: &str = "SELECT d.id AS destination_id, d.tenant_id, d.environment_id, d.enabled, \
    (SELECT COUNT(*) FROM deliveries x WHERE x.destination_id = d.id AND x.status = 'pending') AS pending, \
    (SELECT COUNT(*) FROM deliveries x WHERE x.destination_id = d.id AND x.status = 'failed') AS failed, \
    o.created_at AS oldest_pending_at, o.next_attempt_at AS oldest_pending_due_at \
    FROM destinations d LEFT JOIN deliveries o ON o.destination_id = d.id AND o.status = 'pending' \
    AND o.message_id = (SELECT y.message_id FROM deliveries y WHERE y.destination_id = d.id \
    AND y.status = 'pending' ORDER BY y.created_at, y.message_id LIMIT 1) \
    ORDER BY d.id";

/// The backlog's statement.
pub(crate) trait BacklogSql: sqlx::Database {
    /// Every destination's backlog (see [`crate::Store::delivery_backlog`]).
    fn delivery_backlog(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Vec<DeliveryBacklog>>> + Send;
}

impl<DB> BacklogSql for DB
where
    DB: sqlx::Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'r> DeliveryBacklog: FromRow<'r, DB::Row>,
{
    async fn delivery_backlog(conn: &mut DB::Connection) -> Result<Vec<DeliveryBacklog>> {
        Ok(sqlx::query_as(BACKLOG).fetch_all(&mut *conn).await?)
    }
}

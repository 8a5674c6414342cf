//! SQLite's delivery backlog per destination (see
//! [`crate::delivery_backlog`]).

use sqlx::SqliteConnection;

use crate::{DeliveryBacklog, Result};

/// Every destination's backlog, by id. The statuses are literals, not
/// parameters, so each part reads its partial index.
pub(crate) async fn delivery_backlog(conn: &mut SqliteConnection) -> Result<Vec<DeliveryBacklog>> {
    let backlog = "SELECT d.id AS destination_id, d.tenant_id, d.environment_id, d.enabled, \
        (SELECT COUNT(*) FROM deliveries x WHERE x.destination_id = d.id AND x.status = 'pending') AS pending, \
        (SELECT COUNT(*) FROM deliveries x WHERE x.destination_id = d.id AND x.status = 'failed') AS failed, \
        o.created_at AS oldest_pending_at, o.next_attempt_at AS oldest_pending_due_at \
        FROM destinations d LEFT JOIN deliveries o ON o.destination_id = d.id AND o.status = 'pending' \
        AND o.message_id = (SELECT y.message_id FROM deliveries y WHERE y.destination_id = d.id \
        AND y.status = 'pending' ORDER BY y.created_at, y.message_id LIMIT 1) \
        ORDER BY d.id";
    Ok(sqlx::query_as(backlog).fetch_all(&mut *conn).await?)
}

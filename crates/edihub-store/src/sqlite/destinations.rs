//! SQLite's push destinations (see [`crate::destinations`]). Seeding and
//! admin changes run in the caller's transaction, so a change, the
//! withdrawal of a moved destination's deliveries and their audit events
//! commit together.

use sqlx::SqliteConnection;

use crate::destinations::{destination_change, move_of, stale_destinations};
use crate::{DestinationRow, Result, SOURCE_CONFIG};

/// All destinations, by id.
pub(crate) async fn list_destinations(conn: &mut SqliteConnection) -> Result<Vec<DestinationRow>> {
    let list = "SELECT id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at \
        FROM destinations ORDER BY id";
    Ok(sqlx::query_as(list).fetch_all(&mut *conn).await?)
}

/// Makes the config-sourced destinations equal to `rows`, without undoing
/// an admin's edit; a destination the file moves withdraws its deliveries.
pub(crate) async fn seed_destinations(conn: &mut SqliteConnection, rows: &[DestinationRow]) -> Result<()> {
    let existing = list_destinations(conn).await?;
    for old in stale_destinations(&existing, rows) {
        sqlx::query("DELETE FROM destinations WHERE id = $1 AND source = 'config'")
            .bind(&old.id)
            .execute(&mut *conn)
            .await?;
    }
    let seed = "INSERT INTO destinations \
        (id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $6, 'config', $7) \
        ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
        environment_id = excluded.environment_id, message_types = excluded.message_types, \
        enabled = excluded.enabled, definition = excluded.definition, updated_at = excluded.updated_at \
        WHERE destinations.source = 'config'";
    for row in rows {
        sqlx::query(seed)
            .bind(&row.id)
            .bind(&row.tenant_id)
            .bind(&row.environment_id)
            .bind(&row.message_types)
            .bind(row.enabled)
            .bind(&row.definition)
            .bind(row.updated_at)
            .execute(&mut *conn)
            .await?;
        // The file moves only what it still owns (an admin's row is kept).
        if let Some(old) = existing.iter().find(|o| o.id == row.id && o.source == SOURCE_CONFIG) {
            withdraw_if_moved(conn, old, row).await?;
        }
    }
    Ok(())
}

/// An admin's change of a destination, audited; returns the old row. The
/// row stops following the configuration.
pub(crate) async fn put_destination(
    conn: &mut SqliteConnection,
    row: &DestinationRow,
) -> Result<Option<DestinationRow>> {
    let get = "SELECT id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at \
        FROM destinations WHERE id = $1";
    let old: Option<DestinationRow> = sqlx::query_as(get).bind(&row.id).fetch_optional(&mut *conn).await?;
    let put = "INSERT INTO destinations \
        (id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $6, 'admin', $7) \
        ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
        environment_id = excluded.environment_id, message_types = excluded.message_types, \
        enabled = excluded.enabled, definition = excluded.definition, source = 'admin', \
        updated_at = excluded.updated_at";
    sqlx::query(put)
        .bind(&row.id)
        .bind(&row.tenant_id)
        .bind(&row.environment_id)
        .bind(&row.message_types)
        .bind(row.enabled)
        .bind(&row.definition)
        .bind(row.updated_at)
        .execute(&mut *conn)
        .await?;
    if let Some(old) = &old {
        withdraw_if_moved(conn, old, row).await?;
    }
    super::audit::insert_audits(conn, &[(row.updated_at, destination_change(row, old.as_ref()))]).await?;
    Ok(old)
}

/// Withdraws the deliveries `old` still had pending for messages of its
/// scope when `new` names another tenant or environment: failed, with the
/// reason, audited under the old scope.
async fn withdraw_if_moved(
    conn: &mut SqliteConnection,
    old: &DestinationRow,
    new: &DestinationRow,
) -> Result<()> {
    let Some(moved) = move_of(old, new) else { return Ok(()) };
    let withdraw = "UPDATE deliveries SET status = 'failed', last_error = $2, updated_at = $3 \
        WHERE destination_id = $1 AND status = 'pending' AND message_id IN \
        (SELECT id FROM messages WHERE tenant_id <> $4 OR environment_id <> $5)";
    let withdrawn = sqlx::query(withdraw)
        .bind(&new.id)
        .bind(moved.reason())
        .bind(new.updated_at)
        .bind(&new.tenant_id)
        .bind(&new.environment_id)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    super::audit::insert_audits(conn, &[(new.updated_at, moved.withdrawn(withdrawn))]).await
}

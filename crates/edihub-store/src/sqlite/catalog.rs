//! SQLite's catalog: message types and integrations (see
//! [`crate::catalog`]). Seeding and admin changes run in the caller's
//! transaction, so a change and its audit event commit together.

use sqlx::SqliteConnection;

use crate::catalog::{integration_change, message_type_change, stale_integrations, stale_message_types};
use crate::{GLOBAL_TENANT, IntegrationRow, MessageTypeRow, Result, SOURCE_ADMIN, SOURCE_CONFIG};

/// All message types, global and per tenant.
pub(crate) async fn list_message_types(conn: &mut SqliteConnection) -> Result<Vec<MessageTypeRow>> {
    let list = "SELECT tenant_id, id, duplicate_key_fields, exclude_fields, duplicate_window_seconds, \
        fingerprint_scope, source, updated_at FROM message_types ORDER BY tenant_id, id";
    Ok(sqlx::query_as(list).fetch_all(&mut *conn).await?)
}

/// One message type row of `tenant` (or the global one, `""`).
async fn message_type(conn: &mut SqliteConnection, tenant: &str, id: &str) -> Result<Option<MessageTypeRow>> {
    let get = "SELECT tenant_id, id, duplicate_key_fields, exclude_fields, duplicate_window_seconds, \
        fingerprint_scope, source, updated_at FROM message_types WHERE tenant_id = $1 AND id = $2";
    Ok(sqlx::query_as(get).bind(tenant).bind(id).fetch_optional(&mut *conn).await?)
}

/// Writes a message type from `source`: the configuration (`config`)
/// never overwrites an admin's edit; an admin's change (`admin`) makes the
/// row stop following the configuration.
async fn upsert_message_type(conn: &mut SqliteConnection, row: &MessageTypeRow, source: &str) -> Result<()> {
    let upsert = "INSERT INTO message_types \
        (tenant_id, id, duplicate_key_fields, exclude_fields, duplicate_window_seconds, source, updated_at, \
        fingerprint_scope) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
        ON CONFLICT (tenant_id, id) DO UPDATE SET \
        duplicate_key_fields = excluded.duplicate_key_fields, exclude_fields = excluded.exclude_fields, \
        duplicate_window_seconds = excluded.duplicate_window_seconds, \
        fingerprint_scope = excluded.fingerprint_scope, source = excluded.source, \
        updated_at = excluded.updated_at \
        WHERE message_types.source = 'config' OR excluded.source = 'admin'";
    sqlx::query(upsert)
        .bind(&row.tenant_id)
        .bind(&row.id)
        .bind(&row.duplicate_key_fields)
        .bind(&row.exclude_fields)
        .bind(row.duplicate_window_seconds)
        .bind(source)
        .bind(row.updated_at)
        .bind(&row.fingerprint_scope)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Makes the config-sourced message types equal to `rows`.
pub(crate) async fn seed_message_types(conn: &mut SqliteConnection, rows: &[MessageTypeRow]) -> Result<()> {
    let existing = list_message_types(conn).await?;
    for old in stale_message_types(&existing, rows) {
        sqlx::query("DELETE FROM message_types WHERE tenant_id = $1 AND id = $2 AND source = 'config'")
            .bind(&old.tenant_id)
            .bind(&old.id)
            .execute(&mut *conn)
            .await?;
    }
    for row in rows {
        upsert_message_type(conn, row, SOURCE_CONFIG).await?;
    }
    Ok(())
}

/// An admin's change of a message type, audited; returns the old row.
pub(crate) async fn put_message_type(
    conn: &mut SqliteConnection,
    row: &MessageTypeRow,
) -> Result<Option<MessageTypeRow>> {
    let old = message_type(conn, &row.tenant_id, &row.id).await?;
    upsert_message_type(conn, row, SOURCE_ADMIN).await?;
    // A new tenant override replaces the global rule: recorded as what was
    // in effect before.
    let inherited = match (&old, row.tenant_id.is_empty()) {
        (None, false) => message_type(conn, GLOBAL_TENANT, &row.id).await?,
        _ => None,
    };
    let event = message_type_change(row, old.as_ref(), inherited.as_ref());
    super::audit::insert_audits(conn, &[(row.updated_at, event)]).await?;
    Ok(old)
}

/// All integrations, by id.
pub(crate) async fn list_integrations(conn: &mut SqliteConnection) -> Result<Vec<IntegrationRow>> {
    let list = "SELECT id, tenant_id, environment_id, definition, source, updated_at \
        FROM integrations ORDER BY id";
    Ok(sqlx::query_as(list).fetch_all(&mut *conn).await?)
}

/// Writes an integration from `source`, like [`upsert_message_type`].
async fn upsert_integration(conn: &mut SqliteConnection, row: &IntegrationRow, source: &str) -> Result<()> {
    let upsert = "INSERT INTO integrations (id, tenant_id, environment_id, definition, source, updated_at) \
        VALUES ($1, $2, $3, $4, $5, $6) \
        ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
        environment_id = excluded.environment_id, definition = excluded.definition, \
        source = excluded.source, updated_at = excluded.updated_at \
        WHERE integrations.source = 'config' OR excluded.source = 'admin'";
    sqlx::query(upsert)
        .bind(&row.id)
        .bind(&row.tenant_id)
        .bind(&row.environment_id)
        .bind(&row.definition)
        .bind(source)
        .bind(row.updated_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Makes the config-sourced integrations equal to `rows`.
pub(crate) async fn seed_integrations(conn: &mut SqliteConnection, rows: &[IntegrationRow]) -> Result<()> {
    let existing = list_integrations(conn).await?;
    for old in stale_integrations(&existing, rows) {
        sqlx::query("DELETE FROM integrations WHERE id = $1 AND source = 'config'")
            .bind(&old.id)
            .execute(&mut *conn)
            .await?;
    }
    for row in rows {
        upsert_integration(conn, row, SOURCE_CONFIG).await?;
    }
    Ok(())
}

/// An admin's change of an integration, audited; returns the old row.
pub(crate) async fn put_integration(
    conn: &mut SqliteConnection,
    row: &IntegrationRow,
) -> Result<Option<IntegrationRow>> {
    let get = "SELECT id, tenant_id, environment_id, definition, source, updated_at \
        FROM integrations WHERE id = $1";
    let old: Option<IntegrationRow> = sqlx::query_as(get).bind(&row.id).fetch_optional(&mut *conn).await?;
    upsert_integration(conn, row, SOURCE_ADMIN).await?;
    let event = integration_change(row, old.as_ref());
    super::audit::insert_audits(conn, &[(row.updated_at, event)]).await?;
    Ok(old)
}

//! Push destinations: where new messages are delivered, kept in the
//! database so the message insert (PostgreSQL, `ClaimSql::OUTBOX_TAIL`) and
//! the outbox trigger (SQLite) can join on them.
//!
//! Like integrations, rows seeded from the configuration carry `source =
//! "config"` and follow the file on every start; once an admin changes one
//! (`source = "admin"`) the file no longer overwrites it. Tenant,
//! environment, the message type filter and `enabled` are columns because
//! the trigger that writes the outbox reads them; the rest of the
//! definition (url, format, signature, timeout) is JSON, read whole.
//!
//! A destination moved to another tenant or environment (by an admin, or
//! by the file) must not carry its former owner's queued messages to its
//! new one: its deliveries still pending for messages of another scope are
//! withdrawn in the same transaction, i.e. `failed` with a `last_error`
//! saying where it moved, and the move is audited `delivery.withdrawn`
//! (with the count) under the former owner. An admin who moves it back can
//! replay them; the delivery worker never sends a message to a destination
//! of another scope in any case (a replay of a withdrawn delivery fails
//! again, saying why).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::types::Json;
use sqlx::{Decode, Encode, Executor, FromRow, IntoArguments, Type};

use crate::audit::{DELIVERY_WITHDRAWN, DESTINATION_UPDATED};
use crate::ingest::statements::IngestSql;
use crate::{NewAuditEvent, Result, SOURCE_CONFIG};

/// A push destination as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct DestinationRow {
    /// Destination id, unique across tenants.
    pub id: String,
    /// Tenant whose messages it receives.
    pub tenant_id: String,
    /// Environment whose messages it receives.
    pub environment_id: String,
    /// Only these message types (`None`: every type).
    pub message_types: Option<Json<Vec<String>>>,
    /// A disabled destination gets no new deliveries (existing ones stay queued).
    pub enabled: bool,
    /// The rest of its definition (url, format, signature, timeout), as JSON.
    pub definition: Json<serde_json::Value>,
    /// `config` or `admin`.
    pub source: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

const LIST: &str = "SELECT id, tenant_id, environment_id, message_types, enabled, definition, \
    source, updated_at FROM destinations ORDER BY id";
const GET: &str = "SELECT id, tenant_id, environment_id, message_types, enabled, definition, \
    source, updated_at FROM destinations WHERE id = $1";
/// Follows the configuration without undoing an admin's edit.
const SEED: &str = "INSERT INTO destinations \
    (id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at) \
    VALUES ($1, $2, $3, $4, $5, $6, 'config', $7) \
    ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
    environment_id = excluded.environment_id, message_types = excluded.message_types, \
    enabled = excluded.enabled, definition = excluded.definition, updated_at = excluded.updated_at \
    WHERE destinations.source = 'config'";
/// An admin's change: the row stops following the configuration.
const PUT: &str = "INSERT INTO destinations \
    (id, tenant_id, environment_id, message_types, enabled, definition, source, updated_at) \
    VALUES ($1, $2, $3, $4, $5, $6, 'admin', $7) \
    ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
    environment_id = excluded.environment_id, message_types = excluded.message_types, \
    enabled = excluded.enabled, definition = excluded.definition, source = 'admin', \
    updated_at = excluded.updated_at";
const DELETE_CONFIG: &str = "DELETE FROM destinations WHERE id = $1 AND source = 'config'";
/// A moved destination's deliveries still pending for messages of another
/// scope: failed, with the reason.
const WITHDRAW: &str = "UPDATE deliveries SET status = 'failed', last_error = $2, updated_at = $3 \
    WHERE destination_id = $1 AND status = 'pending' AND message_id IN \
    (SELECT id FROM messages WHERE tenant_id <> $4 OR environment_id <> $5)";

/// The destinations' statements; seeding and admin changes run in the
/// caller's transaction, so a change and its audit event commit together.
pub(crate) trait DestinationSql: IngestSql {
    /// All destinations, by id.
    fn list_destinations(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Vec<DestinationRow>>> + Send;
    /// Makes the config-sourced destinations equal to `rows`.
    fn seed_destinations(
        conn: &mut Self::Connection,
        rows: &[DestinationRow],
    ) -> impl Future<Output = Result<()>> + Send;
    /// An admin's change of a destination, audited; returns the old row.
    fn put_destination(
        conn: &mut Self::Connection,
        row: &DestinationRow,
    ) -> impl Future<Output = Result<Option<DestinationRow>>> + Send;
}

impl<DB> DestinationSql for DB
where
    DB: IngestSql,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> bool: Encode<'e, DB> + Decode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> Option<Json<Vec<String>>>: Encode<'e, DB>,
    for<'e> Json<Vec<String>>: Type<DB>,
    for<'e> Json<serde_json::Value>: Encode<'e, DB> + Type<DB>,
    for<'r> DestinationRow: FromRow<'r, DB::Row>,
    DB::QueryResult: crate::retention::RowsAffected,
{
    async fn list_destinations(conn: &mut DB::Connection) -> Result<Vec<DestinationRow>> {
        Ok(sqlx::query_as(LIST).fetch_all(&mut *conn).await?)
    }

    async fn seed_destinations(conn: &mut DB::Connection, rows: &[DestinationRow]) -> Result<()> {
        let existing = Self::list_destinations(conn).await?;
        for old in existing.iter().filter(|o| o.source == SOURCE_CONFIG) {
            if !rows.iter().any(|r| r.id == old.id) {
                sqlx::query(DELETE_CONFIG).bind(&old.id).execute(&mut *conn).await?;
            }
        }
        for row in rows {
            bind_row(sqlx::query(SEED), row).execute(&mut *conn).await?;
            // The file moves only what it still owns (an admin's row is kept).
            if let Some(old) = existing.iter().find(|o| o.id == row.id && o.source == SOURCE_CONFIG) {
                withdraw_if_moved::<DB>(conn, old, row).await?;
            }
        }
        Ok(())
    }

    async fn put_destination(
        conn: &mut DB::Connection,
        row: &DestinationRow,
    ) -> Result<Option<DestinationRow>> {
        let old: Option<DestinationRow> =
            sqlx::query_as(GET).bind(&row.id).fetch_optional(&mut *conn).await?;
        bind_row(sqlx::query(PUT), row).execute(&mut *conn).await?;
        if let Some(old) = &old {
            withdraw_if_moved::<DB>(conn, old, row).await?;
        }
        let event = NewAuditEvent {
            action: DESTINATION_UPDATED.into(),
            tenant_id: Some(row.tenant_id.clone()),
            environment_id: Some(row.environment_id.clone()),
            details: serde_json::json!({ "destination": row.id, "old": old, "new": row }),
            ..Default::default()
        };
        DB::insert_audits(conn, &[(row.updated_at, event)]).await?;
        Ok(old)
    }
}

/// Withdraws the deliveries `old` still had pending for its scope when
/// `new` names another tenant or environment, audited under the old scope
/// (see the module docs).
async fn withdraw_if_moved<DB>(
    conn: &mut DB::Connection,
    old: &DestinationRow,
    new: &DestinationRow,
) -> Result<()>
where
    DB: IngestSql,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    DB::QueryResult: crate::retention::RowsAffected,
{
    use crate::retention::RowsAffected;
    if (&old.tenant_id, &old.environment_id) == (&new.tenant_id, &new.environment_id) {
        return Ok(());
    }
    let from = format!("{}/{}", old.tenant_id, old.environment_id);
    let to = format!("{}/{}", new.tenant_id, new.environment_id);
    let reason = format!("not delivered: the destination moved from {from} to {to}");
    let withdrawn = sqlx::query(WITHDRAW)
        .bind(&new.id)
        .bind(reason)
        .bind(new.updated_at)
        .bind(&new.tenant_id)
        .bind(&new.environment_id)
        .execute(&mut *conn)
        .await?
        .rows();
    let event = NewAuditEvent {
        action: DELIVERY_WITHDRAWN.into(),
        tenant_id: Some(old.tenant_id.clone()),
        environment_id: Some(old.environment_id.clone()),
        details: serde_json::json!({ "destination": new.id, "from": from, "to": to, "withdrawn": withdrawn }),
        ..Default::default()
    };
    DB::insert_audits(conn, &[(new.updated_at, event)]).await
}

/// Binds a row's columns in the order `SEED` and `PUT` take them.
fn bind_row<'q, DB>(
    q: sqlx::query::Query<'q, DB, DB::Arguments>,
    row: &'q DestinationRow,
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    DB: sqlx::Database,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> bool: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> Option<Json<Vec<String>>>: Encode<'e, DB>,
    for<'e> Json<Vec<String>>: Type<DB>,
    for<'e> Json<serde_json::Value>: Encode<'e, DB> + Type<DB>,
{
    q.bind(&row.id)
        .bind(&row.tenant_id)
        .bind(&row.environment_id)
        .bind(&row.message_types)
        .bind(row.enabled)
        .bind(&row.definition)
        .bind(row.updated_at)
}

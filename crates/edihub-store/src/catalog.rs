//! Message types: the per-type dedup rules, kept in the database.
//!
//! Rows with an empty `tenant_id` are the global defaults; a row with a tenant
//! overrides the global one of the same id for that tenant only. Rows seeded
//! from the configuration file carry `source = "config"` and follow the file on
//! every start; once an admin edits a type (`source = "admin"`) the file no
//! longer overwrites it, so a restart never silently undoes an admin's change.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::types::Json;
use sqlx::{Encode, Executor, FromRow, IntoArguments, Type};

use crate::audit::{INTEGRATION_UPDATED, MESSAGE_TYPE_UPDATED};
use crate::ingest::statements::IngestSql;
use crate::{NewAuditEvent, Result};

/// The tenant id used for global message types.
pub const GLOBAL_TENANT: &str = "";

/// Where a message type row came from.
pub const SOURCE_CONFIG: &str = "config";
/// A message type row changed by an admin.
pub const SOURCE_ADMIN: &str = "admin";

/// One message type's dedup rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct MessageTypeRow {
    /// Tenant the row applies to, or `""` for the global default.
    pub tenant_id: String,
    /// Message type id, e.g. `ORDERS05` or `shop.order`.
    pub id: String,
    /// Paths whose values make the fingerprint, in order.
    pub duplicate_key_fields: sqlx::types::Json<Vec<String>>,
    /// Paths removed before a whole-content fingerprint.
    pub exclude_fields: sqlx::types::Json<Vec<String>>,
    /// How long a fingerprint blocks repeats, in seconds.
    pub duplicate_window_seconds: i64,
    /// `config` or `admin`.
    pub source: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A partner webhook integration as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct IntegrationRow {
    /// Integration id, the `{integrationId}` of `POST /api/webhook/{integrationId}`.
    pub id: String,
    /// Tenant its messages belong to.
    pub tenant_id: String,
    /// Environment its messages belong to.
    pub environment_id: String,
    /// The rest of its definition (message type, event id, signature), as JSON.
    pub definition: sqlx::types::Json<serde_json::Value>,
    /// `config` or `admin`.
    pub source: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

const LIST_TYPES: &str = "SELECT tenant_id, id, duplicate_key_fields, exclude_fields, \
    duplicate_window_seconds, source, updated_at FROM message_types ORDER BY tenant_id, id";
const GET_TYPE: &str = "SELECT tenant_id, id, duplicate_key_fields, exclude_fields, \
    duplicate_window_seconds, source, updated_at FROM message_types WHERE tenant_id = $1 AND id = $2";
/// A change from the configuration (`$6 = 'config'`) or by an admin
/// (`'admin'`). The configuration never overwrites an admin's edit; an
/// admin's change makes the row stop following the configuration.
const UPSERT_TYPE: &str = "INSERT INTO message_types \
    (tenant_id, id, duplicate_key_fields, exclude_fields, duplicate_window_seconds, source, updated_at) \
    VALUES ($1, $2, $3, $4, $5, $6, $7) \
    ON CONFLICT (tenant_id, id) DO UPDATE SET \
    duplicate_key_fields = excluded.duplicate_key_fields, exclude_fields = excluded.exclude_fields, \
    duplicate_window_seconds = excluded.duplicate_window_seconds, source = excluded.source, \
    updated_at = excluded.updated_at \
    WHERE message_types.source = 'config' OR excluded.source = 'admin'";
const DELETE_CONFIG_TYPE: &str =
    "DELETE FROM message_types WHERE tenant_id = $1 AND id = $2 AND source = 'config'";
const LIST_INTEGRATIONS: &str = "SELECT id, tenant_id, environment_id, definition, \
    source, updated_at FROM integrations ORDER BY id";
const GET_INTEGRATION: &str = "SELECT id, tenant_id, environment_id, definition, \
    source, updated_at FROM integrations WHERE id = $1";
/// Like [`UPSERT_TYPE`], for integrations.
const UPSERT_INTEGRATION: &str = "INSERT INTO integrations \
    (id, tenant_id, environment_id, definition, source, updated_at) \
    VALUES ($1, $2, $3, $4, $5, $6) \
    ON CONFLICT (id) DO UPDATE SET tenant_id = excluded.tenant_id, \
    environment_id = excluded.environment_id, definition = excluded.definition, \
    source = excluded.source, updated_at = excluded.updated_at \
    WHERE integrations.source = 'config' OR excluded.source = 'admin'";
const DELETE_CONFIG_INTEGRATION: &str = "DELETE FROM integrations WHERE id = $1 AND source = 'config'";

/// The catalog's statements. Seeding and admin changes run in the caller's
/// transaction, so a change and its audit event commit together.
pub(crate) trait CatalogSql: IngestSql {
    /// All message types.
    fn list_message_types(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Vec<MessageTypeRow>>> + Send;
    /// All integrations.
    fn list_integrations(
        conn: &mut Self::Connection,
    ) -> impl Future<Output = Result<Vec<IntegrationRow>>> + Send;
    /// Makes the config-sourced message types equal to `rows`.
    fn seed_message_types(
        conn: &mut Self::Connection,
        rows: &[MessageTypeRow],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Makes the config-sourced integrations equal to `rows`.
    fn seed_integrations(
        conn: &mut Self::Connection,
        rows: &[IntegrationRow],
    ) -> impl Future<Output = Result<()>> + Send;
    /// Writes a message type from `source` (see [`UPSERT_TYPE`]).
    fn upsert_message_type(
        conn: &mut Self::Connection,
        row: &MessageTypeRow,
        source: &str,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Writes an integration from `source` (see [`UPSERT_INTEGRATION`]).
    fn upsert_integration(
        conn: &mut Self::Connection,
        row: &IntegrationRow,
        source: &str,
    ) -> impl Future<Output = Result<()>> + Send;
    /// An admin's change of a message type, audited; returns the old row.
    fn put_message_type(
        conn: &mut Self::Connection,
        row: &MessageTypeRow,
    ) -> impl Future<Output = Result<Option<MessageTypeRow>>> + Send;
    /// An admin's change of an integration, audited; returns the old row.
    fn put_integration(
        conn: &mut Self::Connection,
        row: &IntegrationRow,
    ) -> impl Future<Output = Result<Option<IntegrationRow>>> + Send;
}

impl<DB> CatalogSql for DB
where
    DB: IngestSql,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> &'e str: Encode<'e, DB> + Type<DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
    for<'e> i64: Encode<'e, DB> + Type<DB>,
    for<'e> DateTime<Utc>: Encode<'e, DB> + Type<DB>,
    for<'e> Json<Vec<String>>: Encode<'e, DB> + Type<DB>,
    for<'e> Json<serde_json::Value>: Encode<'e, DB> + Type<DB>,
    for<'r> MessageTypeRow: FromRow<'r, DB::Row>,
    for<'r> IntegrationRow: FromRow<'r, DB::Row>,
{
    async fn list_message_types(conn: &mut DB::Connection) -> Result<Vec<MessageTypeRow>> {
        Ok(sqlx::query_as(LIST_TYPES).fetch_all(&mut *conn).await?)
    }

    async fn list_integrations(conn: &mut DB::Connection) -> Result<Vec<IntegrationRow>> {
        Ok(sqlx::query_as(LIST_INTEGRATIONS).fetch_all(&mut *conn).await?)
    }

    async fn seed_message_types(conn: &mut DB::Connection, rows: &[MessageTypeRow]) -> Result<()> {
        let existing = Self::list_message_types(conn).await?;
        for old in existing.iter().filter(|o| o.source == SOURCE_CONFIG) {
            if !rows.iter().any(|r| r.tenant_id == old.tenant_id && r.id == old.id) {
                sqlx::query(DELETE_CONFIG_TYPE)
                    .bind(&old.tenant_id)
                    .bind(&old.id)
                    .execute(&mut *conn)
                    .await?;
            }
        }
        for row in rows {
            Self::upsert_message_type(conn, row, SOURCE_CONFIG).await?;
        }
        Ok(())
    }

    async fn seed_integrations(conn: &mut DB::Connection, rows: &[IntegrationRow]) -> Result<()> {
        let existing = Self::list_integrations(conn).await?;
        for old in existing.iter().filter(|o| o.source == SOURCE_CONFIG) {
            if !rows.iter().any(|r| r.id == old.id) {
                sqlx::query(DELETE_CONFIG_INTEGRATION).bind(&old.id).execute(&mut *conn).await?;
            }
        }
        for row in rows {
            Self::upsert_integration(conn, row, SOURCE_CONFIG).await?;
        }
        Ok(())
    }

    async fn upsert_message_type(
        conn: &mut DB::Connection,
        row: &MessageTypeRow,
        source: &str,
    ) -> Result<()> {
        sqlx::query(UPSERT_TYPE)
            .bind(&row.tenant_id)
            .bind(&row.id)
            .bind(&row.duplicate_key_fields)
            .bind(&row.exclude_fields)
            .bind(row.duplicate_window_seconds)
            .bind(source)
            .bind(row.updated_at)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    async fn upsert_integration(conn: &mut DB::Connection, row: &IntegrationRow, source: &str) -> Result<()> {
        sqlx::query(UPSERT_INTEGRATION)
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

    async fn put_message_type(
        conn: &mut DB::Connection,
        row: &MessageTypeRow,
    ) -> Result<Option<MessageTypeRow>> {
        let get = |tenant: &str| sqlx::query_as(GET_TYPE).bind(tenant.to_string()).bind(row.id.clone());
        let old: Option<MessageTypeRow> = get(&row.tenant_id).fetch_optional(&mut *conn).await?;
        Self::upsert_message_type(conn, row, SOURCE_ADMIN).await?;
        // A new tenant override replaces the global rule: record that as
        // what was in effect before.
        let inherited: Option<MessageTypeRow> = match (&old, row.tenant_id.is_empty()) {
            (None, false) => get(GLOBAL_TENANT).fetch_optional(&mut *conn).await?,
            _ => None,
        };
        let event = NewAuditEvent {
            action: MESSAGE_TYPE_UPDATED.into(),
            tenant_id: (!row.tenant_id.is_empty()).then(|| row.tenant_id.clone()),
            message_type: Some(row.id.clone()),
            details: serde_json::json!({ "old": old, "inherited": inherited, "new": row }),
            ..Default::default()
        };
        DB::insert_audits(conn, &[(row.updated_at, event)]).await?;
        Ok(old)
    }

    async fn put_integration(
        conn: &mut DB::Connection,
        row: &IntegrationRow,
    ) -> Result<Option<IntegrationRow>> {
        let old: Option<IntegrationRow> =
            sqlx::query_as(GET_INTEGRATION).bind(&row.id).fetch_optional(&mut *conn).await?;
        Self::upsert_integration(conn, row, SOURCE_ADMIN).await?;
        let event = NewAuditEvent {
            action: INTEGRATION_UPDATED.into(),
            tenant_id: Some(row.tenant_id.clone()),
            environment_id: Some(row.environment_id.clone()),
            details: serde_json::json!({ "integration": row.id, "old": old, "new": row }),
            ..Default::default()
        };
        DB::insert_audits(conn, &[(row.updated_at, event)]).await?;
        Ok(old)
    }
}

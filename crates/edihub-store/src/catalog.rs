//! Message types: the per-type dedup rules, kept in the database.
//!
//! Rows with an empty `tenant_id` are the global defaults; a row with a tenant
//! overrides the global one of the same id for that tenant only. Rows seeded
//! from the configuration file carry `source = "config"` and follow the file on
//! every start; once an admin edits a type (`source = "admin"`) the file no
//! longer overwrites it, so a restart never silently undoes an admin's change.
//!
//! The statements are each backend's (`postgres/catalog.rs`,
//! `sqlite/catalog.rs`); what seeding deletes and what an admin's change
//! audits are decided here, once.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::NewAuditEvent;
use crate::audit::{INTEGRATION_UPDATED, MESSAGE_TYPE_UPDATED};

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
    /// The parties (`sender`, `receiver`) the type's fingerprints are taken
    /// together with; empty for none.
    #[serde(default)]
    pub fingerprint_scope: sqlx::types::Json<Vec<String>>,
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

/// The config-sourced message types in `existing` that `rows` (the
/// configuration) no longer names: seeding deletes them.
pub(crate) fn stale_message_types<'a>(
    existing: &'a [MessageTypeRow],
    rows: &[MessageTypeRow],
) -> impl Iterator<Item = &'a MessageTypeRow> {
    existing
        .iter()
        .filter(|o| o.source == SOURCE_CONFIG)
        .filter(|o| !rows.iter().any(|r| r.tenant_id == o.tenant_id && r.id == o.id))
}

/// The config-sourced integrations in `existing` that `rows` no longer
/// names.
pub(crate) fn stale_integrations<'a>(
    existing: &'a [IntegrationRow],
    rows: &[IntegrationRow],
) -> impl Iterator<Item = &'a IntegrationRow> {
    existing.iter().filter(|o| o.source == SOURCE_CONFIG).filter(|o| !rows.iter().any(|r| r.id == o.id))
}

/// The audit event of an admin's change of a message type: the old row,
/// the global rule a new tenant override replaces (`inherited`), the new
/// row.
pub(crate) fn message_type_change(
    row: &MessageTypeRow,
    old: Option<&MessageTypeRow>,
    inherited: Option<&MessageTypeRow>,
) -> NewAuditEvent {
    NewAuditEvent {
        action: MESSAGE_TYPE_UPDATED.into(),
        tenant_id: (!row.tenant_id.is_empty()).then(|| row.tenant_id.clone()),
        message_type: Some(row.id.clone()),
        details: serde_json::json!({ "old": old, "inherited": inherited, "new": row }),
        ..Default::default()
    }
}

/// The audit event of an admin's change of an integration.
pub(crate) fn integration_change(row: &IntegrationRow, old: Option<&IntegrationRow>) -> NewAuditEvent {
    NewAuditEvent {
        action: INTEGRATION_UPDATED.into(),
        tenant_id: Some(row.tenant_id.clone()),
        environment_id: Some(row.environment_id.clone()),
        details: serde_json::json!({ "integration": row.id, "old": old, "new": row }),
        ..Default::default()
    }
}

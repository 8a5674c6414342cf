//! Message types: the per-type dedup rules, kept in the database.
//!
//! Rows with an empty `tenant_id` are the global defaults; a row with a tenant
//! overrides the global one of the same id for that tenant only. Rows seeded
//! from the configuration file carry `source = "config"` and follow the file on
//! every start; once an admin edits a type (`source = "admin"`) the file no
//! longer overwrites it, so a restart never silently undoes an admin's change.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

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

//! Push destinations: where new messages are delivered, kept in the
//! database so the message insert (PostgreSQL, `postgres/ingest/insert.rs`) and
//! the outbox trigger (SQLite) can join on them. The statements are each
//! backend's (`postgres/destinations.rs`, `sqlite/destinations.rs`); what
//! seeding deletes, what a move is and what it audits are decided here.
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

use crate::audit::{DELIVERY_WITHDRAWN, DESTINATION_UPDATED};
use crate::{NewAuditEvent, SOURCE_CONFIG};

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

/// The config-sourced destinations in `existing` that `rows` (the
/// configuration) no longer names: seeding deletes them.
pub(crate) fn stale_destinations<'a>(
    existing: &'a [DestinationRow],
    rows: &[DestinationRow],
) -> impl Iterator<Item = &'a DestinationRow> {
    existing.iter().filter(|o| o.source == SOURCE_CONFIG).filter(|o| !rows.iter().any(|r| r.id == o.id))
}

/// The audit event of an admin's change of a destination.
pub(crate) fn destination_change(row: &DestinationRow, old: Option<&DestinationRow>) -> NewAuditEvent {
    NewAuditEvent {
        action: DESTINATION_UPDATED.into(),
        tenant_id: Some(row.tenant_id.clone()),
        environment_id: Some(row.environment_id.clone()),
        details: serde_json::json!({ "destination": row.id, "old": old, "new": row }),
        ..Default::default()
    }
}

/// A destination's move to another tenant or environment.
pub(crate) struct Move<'a> {
    old: &'a DestinationRow,
    new: &'a DestinationRow,
}

/// The move from `old` to `new`, if `new` names another scope.
pub(crate) fn move_of<'a>(old: &'a DestinationRow, new: &'a DestinationRow) -> Option<Move<'a>> {
    let moved = (&old.tenant_id, &old.environment_id) != (&new.tenant_id, &new.environment_id);
    moved.then_some(Move { old, new })
}

impl Move<'_> {
    fn from(&self) -> String {
        format!("{}/{}", self.old.tenant_id, self.old.environment_id)
    }

    fn to(&self) -> String {
        format!("{}/{}", self.new.tenant_id, self.new.environment_id)
    }

    /// The `last_error` of a withdrawn delivery.
    pub(crate) fn reason(&self) -> String {
        format!("not delivered: the destination moved from {} to {}", self.from(), self.to())
    }

    /// The `delivery.withdrawn` event, under the old scope, with the count.
    pub(crate) fn withdrawn(&self, withdrawn: u64) -> NewAuditEvent {
        NewAuditEvent {
            action: DELIVERY_WITHDRAWN.into(),
            tenant_id: Some(self.old.tenant_id.clone()),
            environment_id: Some(self.old.environment_id.clone()),
            details: serde_json::json!({
                "destination": self.new.id, "from": self.from(), "to": self.to(), "withdrawn": withdrawn
            }),
            ..Default::default()
        }
    }
}

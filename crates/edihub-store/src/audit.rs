//! Audit events and their query.
//!
//! Events get a database-assigned increasing id; "newest first" is id
//! descending, and the keyset cursor is simply the last id a page returned, so
//! a page never repeats or skips a row when new events arrive in between.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The action of a blocked duplicate.
pub const DUPLICATE_BLOCKED: &str = "message.duplicate_blocked";
/// The action of a repeated EDIFACT or X12 interchange (the whole
/// interchange is the duplicate, not each message).
pub const INTERCHANGE_DUPLICATE_BLOCKED: &str = "interchange.duplicate_blocked";
/// The action of an admin's change of a message type.
pub const MESSAGE_TYPE_UPDATED: &str = "message_type.updated";
/// The action of an admin's change of an integration.
pub const INTEGRATION_UPDATED: &str = "integration.updated";
/// The action of an admin's change of a push destination.
pub const DESTINATION_UPDATED: &str = "destination.updated";
/// The action of a delivery given up on (retries exhausted, or `410 Gone`).
pub const DELIVERY_FAILED: &str = "delivery.failed";
/// The action of an admin's request to deliver a message again.
pub const DELIVERY_REPLAYED: &str = "delivery.replayed";
/// The action of a destination moved to another tenant or environment,
/// whose deliveries still pending for its former owner were withdrawn.
pub const DELIVERY_WITHDRAWN: &str = "delivery.withdrawn";
/// The action written when a key returns with another payload.
pub const KEY_MISMATCH: &str = "idempotency_key.mismatch";
/// The action written when an EDIFACT or X12 interchange control number
/// (same sender and receiver, within its window) returns with other
/// content: the interchange is refused, never answered with the first's.
pub const INTERCHANGE_MISMATCH: &str = "interchange.mismatch";

/// Largest detail value an audit event keeps whole, in bytes of JSON. Key
/// values and document numbers come from senders: without a bound, one large
/// field copied into every duplicate's event would make audit pages as large
/// as the payloads themselves.
pub const MAX_DETAIL_BYTES: usize = 2048;
/// Characters of a cut value's JSON kept in its marker.
const CUT_PREFIX_CHARS: usize = 200;

/// The marker that replaces a detail value over [`MAX_DETAIL_BYTES`]: its
/// size in bytes and its beginning.
fn cut(value: &serde_json::Value) -> Option<serde_json::Value> {
    let text = value.to_string();
    if text.len() <= MAX_DETAIL_BYTES {
        return None;
    }
    Some(serde_json::json!({
        "truncated": true,
        "bytes": text.len(),
        "prefix": text.chars().take(CUT_PREFIX_CHARS).collect::<String>(),
    }))
}

/// One audit event as stored.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct AuditEvent {
    /// Increasing id (also the pagination cursor).
    pub id: i64,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
    /// What happened, e.g. `message.duplicate_blocked`.
    pub action: String,
    /// Tenant concerned.
    pub tenant_id: Option<String>,
    /// Environment concerned.
    pub environment_id: Option<String>,
    /// Message type concerned.
    pub message_type: Option<String>,
    /// Fingerprint involved, if any.
    pub fingerprint: Option<String>,
    /// Idempotency-Key or provider event id involved, if any.
    pub idempotency_key: Option<String>,
    /// `idempotency_key`, `fingerprint` or `provider_event_id`.
    pub detected_by: Option<String>,
    /// The original message the event refers to.
    pub message_id: Option<Uuid>,
    /// Anything else worth keeping, as JSON.
    pub details: sqlx::types::Json<serde_json::Value>,
}

/// A new audit event.
#[derive(Debug, Clone, Default)]
pub struct NewAuditEvent {
    /// What happened.
    pub action: String,
    /// Tenant concerned.
    pub tenant_id: Option<String>,
    /// Environment concerned.
    pub environment_id: Option<String>,
    /// Message type concerned.
    pub message_type: Option<String>,
    /// Fingerprint involved.
    pub fingerprint: Option<String>,
    /// Key involved.
    pub idempotency_key: Option<String>,
    /// How a duplicate was detected.
    pub detected_by: Option<String>,
    /// The original message.
    pub message_id: Option<Uuid>,
    /// Extra JSON details.
    pub details: serde_json::Value,
}

impl NewAuditEvent {
    /// `details` as written: every member (or the whole value, when it is
    /// not an object) over [`MAX_DETAIL_BYTES`] replaced by a marker, so an
    /// event stays small whatever a sender put into its message.
    pub(crate) fn stored_details(&self) -> std::borrow::Cow<'_, serde_json::Value> {
        use std::borrow::Cow;
        let serde_json::Value::Object(members) = &self.details else {
            return cut(&self.details).map_or(Cow::Borrowed(&self.details), Cow::Owned);
        };
        let cuts: Vec<(&String, serde_json::Value)> =
            members.iter().filter_map(|(k, v)| cut(v).map(|c| (k, c))).collect();
        if cuts.is_empty() {
            return Cow::Borrowed(&self.details);
        }
        let mut bounded = members.clone();
        for (k, marker) in cuts {
            bounded.insert(k.clone(), marker);
        }
        Cow::Owned(serde_json::Value::Object(bounded))
    }

    /// The `message.duplicate_blocked` event of a message whose fingerprint
    /// `fp` is held by `holder`: written by the settle transaction and by the
    /// group insert alike, so both paths audit a duplicate identically.
    pub(crate) fn fingerprint_duplicate(
        scope: &crate::Scope,
        m: &crate::NewMessage,
        fp: &str,
        holder: Uuid,
    ) -> Self {
        NewAuditEvent {
            action: DUPLICATE_BLOCKED.to_string(),
            tenant_id: Some(scope.tenant_id.clone()),
            environment_id: Some(scope.environment_id.clone()),
            message_type: Some(m.message_type.clone()),
            fingerprint: Some(fp.to_string()),
            idempotency_key: m.idempotency_key.clone(),
            detected_by: Some(crate::DetectedBy::Fingerprint.as_str().to_string()),
            message_id: Some(holder),
            details: serde_json::json!({
                "docnum": m.docnum,
                "mestyp": m.mestyp,
                "key_values": m.key_values,
                "packet_index": m.packet_index,
            }),
        }
    }
}

impl NewAuditEvent {
    /// The event of a request whose key was claimed before: a blocked
    /// duplicate when its response is replayed, else a key (or
    /// interchange) mismatch.
    /// `original` is the message the first request stored, if any.
    pub(crate) fn key_repeat(
        scope: &crate::Scope,
        key: &crate::KeyClaim,
        original: (Option<Uuid>, Option<String>, Option<String>),
        same_payload: bool,
        replay: bool,
    ) -> Self {
        let (message_id, message_type, fingerprint) = original;
        NewAuditEvent {
            action: match (replay, key.kind) {
                (true, crate::DetectedBy::Interchange) => INTERCHANGE_DUPLICATE_BLOCKED,
                (true, _) => DUPLICATE_BLOCKED,
                (false, crate::DetectedBy::Interchange) => INTERCHANGE_MISMATCH,
                (false, _) => KEY_MISMATCH,
            }
            .to_string(),
            tenant_id: Some(scope.tenant_id.clone()),
            environment_id: Some(scope.environment_id.clone()),
            message_type,
            fingerprint,
            idempotency_key: Some(key.key.clone()),
            detected_by: Some(key.kind.as_str().to_string()),
            message_id,
            details: serde_json::json!({ "same_payload": same_payload, "request_sha256": key.request_sha256 }),
        }
    }
}

/// Filters for [`crate::Store::list_audit`]; every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuditFilter {
    /// Only this action.
    pub action: Option<String>,
    /// Only this tenant.
    pub tenant: Option<String>,
    /// Only this environment.
    pub environment: Option<String>,
    /// Only this message type.
    pub message_type: Option<String>,
    /// Only events about this fingerprint.
    pub fingerprint: Option<String>,
    /// Only events that refer to this original message (e.g. every
    /// duplicate blocked against it).
    pub message_id: Option<Uuid>,
    /// Events at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Events before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only events older than this id (the previous page's `next_cursor`).
    pub cursor: Option<i64>,
    /// Page size (the caller caps it).
    pub limit: i64,
}

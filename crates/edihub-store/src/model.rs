//! The rows edihub stores and reads back: messages to store, stored
//! messages and their summaries, and the filters of message lookups.
//! What a request asks and what happened to it are in [`crate::outcome`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The (tenant, environment) every message, key and fingerprint belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// Tenant id from the configuration, e.g. `acme`.
    pub tenant_id: String,
    /// Environment id within the tenant, e.g. `prod`.
    pub environment_id: String,
}

impl Scope {
    /// Builds a scope from its two ids.
    pub fn new(tenant: impl Into<String>, environment: impl Into<String>) -> Self {
        Self { tenant_id: tenant.into(), environment_id: environment.into() }
    }
}

/// One business message to store (one IDoc of a packet, or one JSON document).
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// Id assigned by the caller (UUID v7, so ids sort by time).
    pub id: Uuid,
    /// Resolved message type, e.g. `ORDERS05`.
    pub message_type: String,
    /// SAP logical message (`MESTYP`), e.g. `ORDCHG`.
    pub mestyp: Option<String>,
    /// IDoc number (`EDI_DC40.DOCNUM`) or the plain JSON `docnum`.
    pub docnum: Option<String>,
    /// Sending partner (`SNDPRN`), kept for lookups.
    pub sender: Option<String>,
    /// The fingerprint, or `None` when the message cannot be deduplicated.
    pub fingerprint: Option<String>,
    /// What the fingerprint was computed over (`key_fields`, `docnum`, `content`, `none`).
    pub fingerprint_basis: String,
    /// How long the fingerprint blocks repeats, in seconds.
    pub window_seconds: i64,
    /// The key values found (for audit and the "why was it blocked" answer).
    pub key_values: serde_json::Value,
    /// The request's Idempotency-Key, if any (for lookups).
    pub idempotency_key: Option<String>,
    /// The webhook provider's event id, if any.
    pub provider_event_id: Option<String>,
    /// Position of the IDoc in its packet (0 for single documents).
    pub packet_index: i32,
    /// Content-Type the payload arrived with.
    pub content_type: Option<String>,
    /// The raw request body as received (shared by a packet's messages, never copied).
    pub payload: bytes::Bytes,
}

impl NewMessage {
    /// The summary of this message once stored at `received_at`.
    pub(crate) fn summary(&self, received_at: DateTime<Utc>) -> MessageSummary {
        MessageSummary {
            id: self.id,
            message_type: self.message_type.clone(),
            mestyp: self.mestyp.clone(),
            docnum: self.docnum.clone(),
            fingerprint: self.fingerprint.clone(),
            received_at,
        }
    }
}

/// The public description of a stored message, as responses show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct MessageSummary {
    /// Message id.
    pub id: Uuid,
    /// Resolved message type.
    pub message_type: String,
    /// SAP logical message.
    pub mestyp: Option<String>,
    /// Document number.
    pub docnum: Option<String>,
    /// Fingerprint as computed (kept after the window released it).
    pub fingerprint: Option<String>,
    /// When the message was stored.
    pub received_at: DateTime<Utc>,
}

/// A full stored message: its metadata (reachable directly through
/// `Deref`), the key values found and the payload.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct MessageRow {
    /// Everything but the key values and the payload.
    #[sqlx(flatten)]
    #[serde(flatten)]
    pub meta: MessageMeta,
    /// Key values found, as JSON.
    pub key_values: sqlx::types::Json<serde_json::Value>,
    /// Raw body as received.
    pub payload: Vec<u8>,
}

impl std::ops::Deref for MessageRow {
    type Target = MessageMeta;
    fn deref(&self) -> &MessageMeta {
        &self.meta
    }
}

/// Filters for [`crate::Store::find_messages`]; every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MessageQuery {
    /// Only this tenant.
    pub tenant: Option<String>,
    /// Only this environment.
    pub environment: Option<String>,
    /// Only these tenants; empty: any. With [`MessageQuery::environments`]
    /// this lets the `(tenant_id, environment_id, …)` indexes answer a
    /// docnum or fingerprint lookup that names no tenant or environment
    /// (the server lists the configured ones).
    #[serde(skip)]
    pub tenants: Vec<String>,
    /// Only these environments; empty: any.
    #[serde(skip)]
    pub environments: Vec<String>,
    /// Messages with this fingerprint (as computed, also after release).
    pub fingerprint: Option<String>,
    /// Messages stored by a request with this Idempotency-Key.
    pub idempotency_key: Option<String>,
    /// Messages with this document number; a numeric one matches with or
    /// without leading zeros ([`docnum_forms`]).
    pub docnum: Option<String>,
    /// Only this message type.
    pub message_type: Option<String>,
    /// Only messages from this sending partner (`SNDPRN`).
    pub sender: Option<String>,
    /// Messages with a key field whose value is exactly this text (a string
    /// value, as found at one of the type's `duplicate_key_fields`).
    pub key_value: Option<String>,
    /// Messages received at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Messages received before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only messages older than this one (`received_at`, `id`): the last row
    /// of the previous page, for keyset pagination.
    pub before: Option<(DateTime<Utc>, Uuid)>,
    /// Most rows returned.
    pub limit: i64,
    /// Most messages one page examines when it checks a filter row by row
    /// (tenant, environment, message type, sender, key value or
    /// Idempotency-Key, without a docnum or fingerprint); `None`:
    /// [`crate::SEARCH_SCAN`]. See [`MessagePage::next`].
    #[serde(skip)]
    pub scan: Option<i64>,
}

/// One page of [`crate::Store::find_messages`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MessagePage {
    /// The matching messages, newest first, at most the query's `limit`.
    pub messages: Vec<MessageMeta>,
    /// Where the next page starts (as [`MessageQuery::before`]), `None`
    /// when no older message is left to look at: the last message of a
    /// full page, or the oldest message a page examined when its scan
    /// ended before the page filled ([`MessageQuery::scan`]). A page can
    /// thus be short, even empty, and still have a next one.
    pub next: Option<(DateTime<Utc>, Uuid)>,
}

/// The `LIKE` pattern that finds `value` as a string inside the JSON text of
/// `key_values`: the value JSON-encoded (quotes included), with `LIKE`'s
/// wildcards and its escape character escaped (`ESCAPE '\'`).
pub(crate) fn key_value_pattern(value: &str) -> String {
    let quoted = serde_json::Value::String(value.to_string()).to_string();
    let mut pattern = String::with_capacity(quoted.len() + 2);
    pattern.push('%');
    for c in quoted.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The stored forms a looked-up document number may have. SAP pads DOCNUM
/// with zeros to 16 digits and the fingerprint drops them, so a person may
/// have either: a numeric `4711` also finds `0000000000004711` and the
/// reverse. Anything else is looked up as given.
pub fn docnum_forms(docnum: &str) -> Vec<String> {
    let mut forms = vec![docnum.to_string()];
    if docnum.is_empty() || !docnum.bytes().all(|b| b.is_ascii_digit()) {
        return forms;
    }
    let bare = match docnum.trim_start_matches('0') {
        "" => "0",
        rest => rest,
    };
    for form in [bare.to_string(), format!("{bare:0>16}")] {
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// A stored message without its payload.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct MessageMeta {
    /// Message id.
    pub id: Uuid,
    /// Tenant id (`tenant` in JSON, as in every admin response and query).
    #[serde(rename = "tenant")]
    pub tenant_id: String,
    /// Environment id (`environment` in JSON).
    #[serde(rename = "environment")]
    pub environment_id: String,
    /// Resolved message type.
    pub message_type: String,
    /// SAP logical message.
    pub mestyp: Option<String>,
    /// Document number.
    pub docnum: Option<String>,
    /// Sending partner.
    pub sender: Option<String>,
    /// Fingerprint as computed.
    pub fingerprint: Option<String>,
    /// What the fingerprint covers.
    pub fingerprint_basis: String,
    /// When the fingerprint stops blocking repeats.
    pub fingerprint_expires_at: Option<DateTime<Utc>>,
    /// Whether the fingerprint still blocks repeats (not yet released).
    pub fingerprint_active: bool,
    /// Idempotency-Key of the request that stored it.
    pub idempotency_key: Option<String>,
    /// Webhook provider event id.
    pub provider_event_id: Option<String>,
    /// Position in its packet.
    pub packet_index: i32,
    /// Content-Type as received.
    pub content_type: Option<String>,
    /// When it was stored.
    pub received_at: DateTime<Utc>,
}

/// The retention work, one kind of row at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetentionStep {
    /// Clear fingerprints whose window has passed, so they no longer block.
    ReleaseFingerprints,
    /// Delete messages received before the cutoff (never one still blocking).
    PurgeMessages,
    /// Delete Idempotency-Keys and provider event ids created before the cutoff.
    PurgeKeys,
    /// Delete audit events older than the cutoff.
    PurgeAudit,
    /// Delete AS2 messages received before the cutoff (their Message-IDs
    /// then no longer meet re-sends).
    PurgeAs2Messages,
    /// Delete SAP status changes recorded before the cutoff that a status
    /// message has carried (pending ones are still owed and stay).
    PurgeSapStatus,
}

/// The message holding a fingerprint, with the end of its window.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct Holder {
    #[sqlx(flatten)]
    pub(crate) summary: MessageSummary,
    pub(crate) fingerprint_expires_at: Option<DateTime<Utc>>,
}

impl Holder {
    /// Whether the holder's window still blocks repeats at `now` (a window
    /// ends at its expiry instant, exclusive).
    pub(crate) fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.fingerprint_expires_at.is_none_or(|t| t > now)
    }
}

#[cfg(test)]
mod tests {
    use super::docnum_forms;

    #[test]
    fn a_numeric_docnum_is_looked_up_with_and_without_leading_zeros() {
        assert_eq!(docnum_forms("4711"), ["4711", "0000000000004711"]);
        assert_eq!(docnum_forms("0000000000004711"), ["0000000000004711", "4711"]);
        assert_eq!(docnum_forms("004711"), ["004711", "4711", "0000000000004711"]);
        assert_eq!(docnum_forms("0"), ["0", "0000000000000000"]);
        assert_eq!(docnum_forms("INV-0042"), ["INV-0042"]);
    }
}

//! AS2 messages received, in the table `as2_messages`: the claim of each
//! (station, partner, Message-ID), the MDN it was answered with, the
//! message it stored, and the asynchronous MDN waiting to be posted.
//!
//! A partner that gets no MDN sends the same Message-ID again, and must get
//! the first MDN back with nothing processed twice. So the server claims a
//! message's Message-ID ([`crate::Store::claim_as2_message`]) before it
//! stores the payload: the table's primary key decides which of two
//! concurrent re-sends goes on, in one statement. The claim commits with
//! the audit event of a repeat (`as2.duplicate_blocked`, or
//! `as2.message_id_reused` when the payload differs), so a repeat is never
//! answered without its event. The winner completes its row with the MDN
//! as answered ([`crate::Store::settle_as2_message`]) or, when it fails,
//! deletes it ([`crate::Store::release_as2_message`]): a failed message
//! leaves nothing. The statements are each backend's (`postgres/as2.rs`,
//! `sqlite/as2.rs`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::{NewAuditEvent, Scope};

/// The action of a re-sent Message-ID answered with the stored MDN.
pub const AS2_DUPLICATE_BLOCKED: &str = "as2.duplicate_blocked";
/// The action of a Message-ID that came again with another payload.
pub const AS2_MESSAGE_ID_REUSED: &str = "as2.message_id_reused";

/// `mdn_status` of a message being processed: claimed, no MDN yet.
pub const MDN_PROCESSING: &str = "processing";
/// `mdn_status` of an MDN answered in the HTTP response or posted.
pub const MDN_SENT: &str = "sent";
/// `mdn_status` of an asynchronous MDN waiting to be posted.
pub const MDN_PENDING: &str = "pending";
/// `mdn_status` of an asynchronous MDN given up on.
pub const MDN_FAILED: &str = "failed";

/// An MDN's HTTP header fields, in order, as answered.
pub type MdnHeaders = Vec<(String, String)>;

/// Which AS2 message: the station that received it, the partner that sent
/// it and its Message-ID (without angle brackets).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct As2Key {
    /// The station's AS2 id (`AS2-To`).
    pub station: String,
    /// The partner's AS2 id (`AS2-From`).
    pub partner: String,
    /// The `Message-ID`.
    pub message_id: String,
}

/// A received AS2 message to claim.
#[derive(Debug, Clone)]
pub struct NewAs2Message {
    /// Which message.
    pub key: As2Key,
    /// The environment the station receives into.
    pub scope: Scope,
    /// SHA-256 hex of the payload, to recognise another payload under the
    /// same Message-ID.
    pub payload_sha256: String,
    /// `sync`, `async` or `none`: the MDN the partner asked for.
    pub mdn_mode: String,
    /// When it arrived.
    pub received_at: DateTime<Utc>,
}

/// An AS2 message as stored.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct As2MessageRow {
    /// The station's AS2 id.
    pub station: String,
    /// The partner's AS2 id.
    pub partner: String,
    /// The `Message-ID`.
    pub message_id: String,
    /// Tenant.
    pub tenant_id: String,
    /// Environment.
    pub environment_id: String,
    /// SHA-256 hex of the payload.
    pub payload_sha256: String,
    /// When it arrived.
    pub received_at: DateTime<Utc>,
    /// `sync`, `async` or `none`.
    pub mdn_mode: String,
    /// `processing`, `sent`, `pending` or `failed`.
    pub mdn_status: String,
    /// Where an asynchronous MDN goes.
    pub mdn_url: Option<String>,
    /// The MDN's HTTP headers as answered, in order.
    #[serde(skip)]
    pub mdn_headers: Option<sqlx::types::Json<MdnHeaders>>,
    /// The MDN's body as answered.
    #[serde(skip)]
    pub mdn_body: Option<Vec<u8>>,
    /// The message stored (or the original a fingerprint duplicate repeats).
    pub stored_message_id: Option<Uuid>,
    /// Attempts to post an asynchronous MDN.
    pub mdn_attempts: i32,
    /// When the asynchronous MDN is next posted.
    pub mdn_due_at: Option<DateTime<Utc>>,
    /// The last failure to post it.
    pub mdn_error: Option<String>,
}

impl As2MessageRow {
    /// Which message this is.
    pub fn key(&self) -> As2Key {
        As2Key {
            station: self.station.clone(),
            partner: self.partner.clone(),
            message_id: self.message_id.clone(),
        }
    }

    /// The MDN as answered, once there is one.
    pub fn mdn(&self) -> Option<(MdnHeaders, Vec<u8>)> {
        Some((self.mdn_headers.as_ref()?.0.clone(), self.mdn_body.clone()?))
    }
}

/// What claiming a Message-ID found.
#[derive(Debug, Clone, PartialEq)]
pub enum As2Claim {
    /// Nobody had it: the caller processes the message, then settles or
    /// releases the claim.
    New,
    /// The same payload under this Message-ID came before (audited as
    /// `as2.duplicate_blocked`): its row, whose MDN may still be on its way
    /// (`mdn_status` `processing`).
    Duplicate(As2MessageRow),
    /// Another payload came under this Message-ID before (audited as
    /// `as2.message_id_reused`).
    Reused(As2MessageRow),
}

/// The MDN a claimed message was answered with, and what it stored.
#[derive(Debug, Clone)]
pub struct As2Settlement {
    /// The MDN's HTTP headers, in order.
    pub mdn_headers: MdnHeaders,
    /// The MDN's body.
    pub mdn_body: Vec<u8>,
    /// The message stored (or the original it repeats).
    pub stored_message_id: Option<Uuid>,
    /// The URL of an asynchronous MDN (status `pending`, due at once);
    /// `None` when it was answered in the HTTP response (status `sent`).
    pub async_url: Option<String>,
    /// When it was settled.
    pub now: DateTime<Utc>,
}

/// What became of one attempt to post an asynchronous MDN.
#[derive(Debug, Clone)]
pub struct As2MdnAttempt {
    /// Which message's MDN.
    pub key: As2Key,
    /// `sent`, `pending` (to be retried at `due_at`) or `failed`.
    pub status: &'static str,
    /// When it is posted again (status `pending`).
    pub due_at: Option<DateTime<Utc>>,
    /// Why the attempt failed.
    pub error: Option<String>,
}

/// Filters of [`crate::Store::list_as2_messages`].
#[derive(Debug, Clone, Default)]
pub struct As2Filter {
    /// Only this partner's messages.
    pub partner: Option<String>,
    /// Only messages received before this time (the previous page's last).
    pub before: Option<DateTime<Utc>>,
    /// Page size (the caller caps it).
    pub limit: i64,
}

impl NewAs2Message {
    /// The audit event of a repeat of `row` by this message: a blocked
    /// duplicate when the payload is the same, else a reused Message-ID.
    pub(crate) fn repeat_event(&self, row: &As2MessageRow) -> NewAuditEvent {
        let same = row.payload_sha256 == self.payload_sha256;
        NewAuditEvent {
            action: if same { AS2_DUPLICATE_BLOCKED } else { AS2_MESSAGE_ID_REUSED }.to_string(),
            tenant_id: Some(self.scope.tenant_id.clone()),
            environment_id: Some(self.scope.environment_id.clone()),
            idempotency_key: Some(self.key.message_id.clone()),
            detected_by: Some("as2_message_id".to_string()),
            message_id: row.stored_message_id,
            details: serde_json::json!({
                "station": self.key.station,
                "partner": self.key.partner,
                "same_payload": same,
                "payload_sha256": self.payload_sha256,
            }),
            ..NewAuditEvent::default()
        }
    }

    /// What the claim found, given the row already holding the Message-ID.
    pub(crate) fn claim_of(&self, row: As2MessageRow) -> As2Claim {
        if row.payload_sha256 == self.payload_sha256 {
            As2Claim::Duplicate(row)
        } else {
            As2Claim::Reused(row)
        }
    }
}

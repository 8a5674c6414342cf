//! Status owed to a sending SAP system: what became of its IDocs, recorded
//! change by change until a status IDoc carries it back.
//!
//! One table, `sap_status_changes`, holds a row per change of an IDoc's
//! state: stored (39), delivered to every destination (41), finally failed
//! (40, with the reason), or refused by the hub (40, with the refusal's
//! reason, and no message: the IDoc was not stored). The server records a
//! refusal when it answers one ([`SapRefusal`]), a stored IDoc, and a re-sent
//! one (its message's current status again), right after the ingest
//! commits; the delivery's verdicts record 41 and 40 in the transaction
//! that records the verdict, for the messages that have a 39, looked for
//! only when the server marks the attempt as one of an environment that
//! reports status (so other environments' verdicts cost nothing).
//!
//! A fast destination may deliver a message before its 39 is recorded, so
//! recording a 39 (or a re-send's status) also records the 41 or 40 the
//! message's deliveries have already earned ([`earned`]). Both sides run
//! under one lock per message (PostgreSQL: a transaction advisory lock,
//! taken after the verdict's update and before the 39's insert; SQLite:
//! every write transaction holds the database's write lock), so whichever
//! runs second sees what the first committed: either the verdict finds the
//! 39, or the 39's recording finds the verdict. The same lock orders two
//! verdicts of one message, so the one that completes its deliveries sees
//! the other's. A status
//! change is *pending* until the status message that carries it is stored:
//! the batcher reads the pending changes, and stores its status message
//! and marks them batched in one transaction, so a change is carried once,
//! by a message the outbox delivers.
//!
//! Retention deletes the changes a status message carried once they are
//! older than the messages' cutoff; pending ones are still owed and stay.
//!
//! A partial unique index over the pending rows keeps one pending status
//! per IDoc (DOCNUM) and state: a re-send that arrives while the first
//! status is still queued adds nothing, also when both race.
//!
//! The statements are each backend's (`postgres/sap_status.rs`,
//! `sqlite/sap_status.rs`); the texts, the same on both, are here.

use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::{FinishedAttempt, Recorded, Verdict, storable_text};

/// An IDoc stored by the hub: SAP's status 39, "IDoc is in the target system".
pub const SAP_IN_TARGET: &str = "39";
/// An IDoc delivered to every destination: 41, "application document created".
pub const SAP_CREATED: &str = "41";
/// An IDoc whose delivery finally failed: 40, "application document not created".
pub const SAP_NOT_CREATED: &str = "40";

/// A status change the server records for an IDoc from an environment's
/// SAP system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSapStatus {
    /// The hub's message: the one stored, or for a re-send the one it repeats.
    pub message_id: Uuid,
    /// The sender's IDoc number, as the IDoc carried it.
    pub docnum: String,
    /// The IDoc's logical message (MESTYP).
    pub mestyp: String,
    /// Which state to report.
    pub state: SapStatusState,
}

/// An IDoc from an environment's SAP system that the hub refused with a
/// client error after reading its control record: it owes its sender a 40
/// with the refusal's reason, and no message holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SapRefusal {
    /// The sender's IDoc number, as the IDoc carried it.
    pub docnum: String,
    /// The IDoc's logical message (MESTYP).
    pub mestyp: String,
    /// The HTTP status the request was answered with (4xx).
    pub code: u16,
    /// Why, as the answer said it to the sender.
    pub reason: String,
}

/// The state a [`NewSapStatus`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SapStatusState {
    /// The IDoc was stored as a new message: 39.
    Stored,
    /// The IDoc repeats a stored message: that message's latest status (39
    /// when it has none yet), so the sender's re-sent IDoc moves on as the
    /// first one did, and no second document is made.
    Current,
}

/// One recorded status change.
#[derive(Debug, Clone, PartialEq, Serialize, sqlx::FromRow)]
pub struct SapStatusRow {
    /// Its number, in the order changes were recorded.
    pub id: i64,
    /// The tenant.
    pub tenant_id: String,
    /// The environment.
    pub environment_id: String,
    /// The hub's message the IDoc is (or repeats); `None` for an IDoc the
    /// hub refused.
    pub message_id: Option<Uuid>,
    /// The sender's IDoc number.
    pub docnum: String,
    /// The IDoc's logical message.
    pub mestyp: String,
    /// SAP's status on the sender's IDoc: `39`, `41` or `40`.
    pub status: String,
    /// Why, for people reading the status in SAP.
    pub text: String,
    /// The text's parameters (at most four).
    pub params: sqlx::types::Json<Vec<String>>,
    /// When the state changed.
    pub created_at: DateTime<Utc>,
    /// The status message that carries it; `None` while pending.
    pub batch_message_id: Option<Uuid>,
}

/// A delivery of an IDoc's message, as [`earned`] reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct DeliveryState {
    /// Its destination.
    pub destination_id: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// The last answer's status code.
    pub last_status_code: Option<i32>,
    /// The last attempt's error, as stored.
    pub last_error: Option<String>,
}

/// The status a message's deliveries have earned, with its text, as the
/// verdicts record it: 40 when one failed for good (the first to fail),
/// else 41 when there is at least one and all are delivered, else none.
pub(crate) fn earned(deliveries: &[DeliveryState]) -> Option<(&'static str, (String, Vec<String>))> {
    if let Some(f) = deliveries.iter().find(|d| d.status == crate::outbox::FAILED) {
        let text = failed_text(&f.destination_id, f.last_status_code, f.last_error.as_deref());
        return Some((SAP_NOT_CREATED, text));
    }
    let delivered = |d: &DeliveryState| d.status == crate::outbox::DELIVERED;
    (!deliveries.is_empty() && deliveries.iter().all(delivered)).then(|| (SAP_CREATED, delivered_text()))
}

/// One status change as both backends insert it: a 39, an earned 41 or
/// 40, or a refused IDoc's 40 (about no message).
pub(crate) struct Change<'a> {
    /// The hub's message; `None` for a refused IDoc, which none holds.
    pub message_id: Option<Uuid>,
    /// The sender's IDoc number.
    pub docnum: &'a str,
    /// The IDoc's logical message.
    pub mestyp: &'a str,
    /// SAP's status.
    pub status: &'a str,
}

/// A 41 or 40 a verdict of a batch owes, if its message has a 39.
pub(crate) struct OwedStatus {
    /// The delivery's message.
    pub message_id: Uuid,
    /// [`SAP_CREATED`] or [`SAP_NOT_CREATED`].
    pub status: &'static str,
    /// Its text.
    pub text: String,
    /// The text's parameters.
    pub params: Vec<String>,
    /// Whether it is owed only once all the message's deliveries are
    /// delivered (a 41).
    pub all_delivered: bool,
}

/// What the applied verdicts of `done` may owe, in batch order: a
/// delivery delivered a 41, one failed for good a 40 with its reason; only
/// for attempts marked [`FinishedAttempt::sap_status`].
pub(crate) fn owed_statuses(done: &[FinishedAttempt], recorded: &[Recorded]) -> Vec<OwedStatus> {
    done.iter()
        .zip(recorded)
        .filter(|(d, r)| d.sap_status && **r == Recorded::Applied)
        .filter_map(|(d, _)| {
            let ((text, params), status, all_delivered) = match d.verdict {
                Verdict::Delivered => (delivered_text(), SAP_CREATED, true),
                Verdict::Failed => {
                    let error = d.attempt.error.as_deref().map(storable_text);
                    let text = failed_text(&d.destination_id, d.attempt.status_code, error.as_deref());
                    (text, SAP_NOT_CREATED, false)
                }
                Verdict::RetryAt(_) => return None,
            };
            Some(OwedStatus { message_id: d.message_id, status, text, params, all_delivered })
        })
        .collect()
}

/// The text of a 39: where the hub keeps the IDoc.
pub(crate) fn stored_text(message_id: Uuid) -> (String, Vec<String>) {
    ("IDoc stored by edihub as message &1".into(), vec![message_id.to_string()])
}

/// The text of a 41.
pub(crate) fn delivered_text() -> (String, Vec<String>) {
    ("IDoc delivered by edihub to every destination".into(), Vec::new())
}

/// The text of a refusal's 40: the reason the sender was answered with,
/// whole (the status IDoc's writer cuts it to SAP's field lengths), and
/// the HTTP status as its parameter.
pub(crate) fn refused_text(refusal: &SapRefusal) -> (String, Vec<String>) {
    (format!("IDoc refused by edihub: {}", refusal.reason), vec![refusal.code.to_string()])
}

/// The text of a 40: the destination and its last answer (the full text is
/// kept; the status IDoc's writer cuts it to SAP's field lengths).
pub(crate) fn failed_text(
    destination: &str,
    status_code: Option<i32>,
    error: Option<&str>,
) -> (String, Vec<String>) {
    let code = status_code.map(|c| c.to_string()).unwrap_or_default();
    let reason = error.unwrap_or("no answer");
    (format!("Delivery to {destination} failed: {reason}"), vec![destination.to_string(), code])
}

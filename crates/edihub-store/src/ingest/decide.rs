//! The decisions of the ingest, written once: the settle transaction (a
//! batch, a request or a packet's chunk) and the group insert decide here,
//! from what their statements found, so a request gets the same outcome
//! and the same audit event whichever path it took.
//!
//! - a live holder of the fingerprint other than the message itself makes a
//!   duplicate; an expired or vanished holder is left to the insert, which
//!   releases and retries;
//! - a key claimed before is replayed when the payload is the same (or the
//!   environment replays on reuse), else refused as a mismatch; either way
//!   the repeat is audited.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::keys::KeyState;
use super::statements::ScopedHolder;
use crate::{
    Answer, IngestOutcome, KeyClaim, KeyReusePolicy, MessageOutcome, MessageSummary, NewAuditEvent,
    NewMessage, Replay, Result, Scope, StoreError,
};

/// The live holder among `holders` of `m`'s fingerprint in `scope`, other
/// than `m` itself, with the `message.duplicate_blocked` event to write;
/// `None` when the insert must decide (no fingerprint, an expired window, no
/// holder, or the message's own row).
pub(crate) fn duplicate_of(
    scope: &Scope,
    m: &NewMessage,
    now: DateTime<Utc>,
    holders: &[ScopedHolder],
) -> Option<(MessageSummary, NewAuditEvent)> {
    let fp = m.fingerprint.as_deref()?;
    let h = holders.iter().find(|h| {
        h.tenant_id == scope.tenant_id
            && h.environment_id == scope.environment_id
            && h.holder.summary.fingerprint.as_deref() == Some(fp)
    })?;
    if !h.holder.is_live(now) || h.holder.summary.id == m.id {
        return None;
    }
    let event = NewAuditEvent::fingerprint_duplicate(scope, m, fp, h.holder.summary.id);
    Some((h.holder.summary.clone(), event))
}

/// The answer to a request whose key was claimed before, with its audit
/// event; `None` when the key is not among `states` or has no answer yet
/// (its claim has not committed).
pub(crate) fn repeat(
    scope: &Scope,
    key: &KeyClaim,
    states: &[KeyState],
) -> Result<Option<(IngestOutcome, NewAuditEvent)>> {
    let Some(s) = states.iter().find(|s| {
        s.tenant_id == scope.tenant_id
            && s.environment_id == scope.environment_id
            && s.kind == key.kind.as_str()
            && s.key == key.key
    }) else {
        return Ok(None);
    };
    let Some(first) = first_answer(s)? else { return Ok(None) };
    let same = s.request_sha256 == key.request_sha256;
    let replay = same || key.on_reuse == KeyReusePolicy::Replay;
    let (message_type, fingerprint) = original_of(&first, s);
    let original = (s.message_id, message_type, fingerprint);
    let event = NewAuditEvent::key_repeat(scope, key, original, same, replay);
    let outcome = if replay { IngestOutcome::Replayed(first) } else { IngestOutcome::KeyMismatch };
    Ok(Some((outcome, event)))
}

/// The type and fingerprint of the message a key answered for (the first
/// outcome's message, which the key points to): from its answer, or for a
/// rendered key from the message row.
fn original_of(first: &Replay, s: &KeyState) -> (Option<String>, Option<String>) {
    match first {
        Replay::Answer(a) => match a.outcomes.first() {
            Some(MessageOutcome::Accepted(m) | MessageOutcome::Duplicate { existing: m, .. }) => {
                (Some(m.message_type.clone()), m.fingerprint.clone())
            }
            None => (None, None),
        },
        Replay::Rendered { .. } => (s.message_type.clone(), s.fingerprint.clone()),
    }
}

/// The first answer a key keeps: its outcomes as data, or the response an
/// older edihub rendered; `None` while the claim has none.
fn first_answer(s: &KeyState) -> Result<Option<Replay>> {
    if let Some(answer) = &s.answer {
        return Ok(Some(Replay::Answer(serde_json::from_str(answer)?)));
    }
    match u16::try_from(s.status_code) {
        Ok(0) => Ok(None),
        Ok(status) => Ok(Some(Replay::Rendered { status, body: s.response_body.clone() })),
        Err(_) => Err(StoreError::Invariant(format!("stored status {}", s.status_code))),
    }
}

/// What a key keeps of its first answer: the answer as JSON text and the
/// message it points to (the first message, new or the original a
/// duplicate repeats).
pub(crate) fn kept(answer: &Answer) -> Result<(String, Option<Uuid>)> {
    Ok((serde_json::to_string(answer)?, answer.outcomes.first().map(crate::MessageOutcome::id)))
}

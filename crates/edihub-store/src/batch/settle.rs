//! Deciding each request of a batch from what the batch's statements found.
//!
//! The statements live in `batch_sql`; the decisions are here, written once
//! and in the same terms as the ingest transaction, so a request gets the
//! same answer and the same audit event whichever path it took: a live
//! holder other than the message itself makes a duplicate; an expired or
//! vanished holder is left to the transaction, which releases and retries; a
//! key claimed before is replayed when the payload is the same (or the
//! environment replays on reuse), else refused as a mismatch.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{GroupInsert, Queued, ScopedHolder, Verdict};
use crate::{
    IngestOutcome, KeyReusePolicy, MessageSummary, NewAuditEvent, NewMessage, Scope, StoredResponse,
};

/// A key's stored state, with the message it answered for.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct KeyState {
    pub(crate) tenant_id: String,
    pub(crate) environment_id: String,
    pub(crate) kind: String,
    pub(crate) key: String,
    pub(crate) request_sha256: String,
    pub(crate) status_code: i32,
    pub(crate) response_body: String,
    pub(crate) message_id: Option<Uuid>,
    pub(crate) message_type: Option<String>,
    pub(crate) fingerprint: Option<String>,
}

/// Settles one batch of requests with keys, in the backend's transaction.
pub(super) async fn with_keys<G: GroupInsert>(db: &G, items: &[&Queued]) -> Vec<Verdict> {
    db.settle_keyed(items).await.unwrap_or_else(|e| {
        // Nothing was committed; each request runs its own transaction.
        tracing::debug!(error = %e, rows = items.len(), "keyed group insert failed");
        vec![Verdict::Undecided; items.len()]
    })
}

/// Settles one batch of requests without a key: the insert, then their
/// plain duplicates.
pub(super) async fn without_keys<G: GroupInsert>(db: &G, items: &[&Queued]) -> Vec<Verdict> {
    if items.is_empty() {
        return Vec::new();
    }
    let inserted = match db.insert_rows(items).await {
        Ok(ids) => ids,
        Err(e) => {
            // Nothing was inserted; each caller runs its own transaction.
            tracing::debug!(error = %e, rows = items.len(), "group insert failed");
            return vec![Verdict::Undecided; items.len()];
        }
    };
    let mut verdicts: Vec<Verdict> = items
        .iter()
        .map(|q| if inserted.contains(&q.message.id) { Verdict::Inserted } else { Verdict::Undecided })
        .collect();
    let claims = unsettled_claims(items, &inserted);
    if claims.is_empty() {
        return verdicts;
    }
    let holders = match db.holders(&claims).await {
        Ok(holders) => holders,
        Err(e) => {
            tracing::debug!(error = %e, "group holder lookup failed");
            return verdicts;
        }
    };
    let mut events = Vec::new();
    for (q, verdict) in items.iter().zip(verdicts.iter_mut()) {
        if *verdict == Verdict::Undecided
            && let Some((existing, event)) = live_duplicate(q, &holders)
        {
            events.push((q.now, event));
            *verdict = Verdict::Duplicate(existing);
        }
    }
    if !events.is_empty()
        && let Err(e) = db.insert_audits(&events).await
    {
        // No event was written: let each duplicate write its own.
        tracing::debug!(error = %e, "group audit insert failed");
        for v in &mut verdicts {
            if matches!(v, Verdict::Duplicate(_)) {
                *v = Verdict::Undecided;
            }
        }
    }
    verdicts
}

/// The (scope, fingerprint) claims of the items whose row was not inserted.
pub(crate) fn unsettled_claims<'a>(items: &[&'a Queued], inserted: &[Uuid]) -> Vec<(&'a Scope, &'a str)> {
    items
        .iter()
        .filter(|q| !inserted.contains(&q.message.id))
        .filter_map(|q| Some((&q.scope, q.message.fingerprint.as_deref()?)))
        .collect()
}

/// The live holder of `q`'s fingerprint other than `q` itself, with the
/// `message.duplicate_blocked` event to write; `None` when the transaction
/// must decide (see [`duplicate_of`]).
pub(crate) fn live_duplicate(
    q: &Queued,
    holders: &[ScopedHolder],
) -> Option<(MessageSummary, NewAuditEvent)> {
    duplicate_of(&q.scope, &q.message, q.now, holders)
}

/// The live holder among `holders` of `m`'s fingerprint in `scope`, other
/// than `m` itself, with the `message.duplicate_blocked` event to write;
/// `None` when the insert must decide (no fingerprint, an expired window, no
/// holder, or the message's own row). The group insert and the ingest
/// transaction's packet lookup both decide here.
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
/// event; `None` when the key has no stored response to give.
pub(crate) fn repeat(q: &Queued, states: &[KeyState]) -> Option<(Verdict, (DateTime<Utc>, NewAuditEvent))> {
    let key = q.key.as_ref()?;
    let s = states.iter().find(|s| {
        s.tenant_id == q.scope.tenant_id
            && s.environment_id == q.scope.environment_id
            && s.kind == key.kind.as_str()
            && s.key == key.key
    })?;
    let status = u16::try_from(s.status_code).ok().filter(|status| *status != 0)?;
    let same = s.request_sha256 == key.request_sha256;
    let replay = same || key.on_reuse == KeyReusePolicy::Replay;
    let original = (s.message_id, s.message_type.clone(), s.fingerprint.clone());
    let event = NewAuditEvent::key_repeat(&q.scope, key, original, same, replay);
    let outcome = if replay {
        IngestOutcome::Replayed { response: StoredResponse { status, body: s.response_body.clone() } }
    } else {
        IngestOutcome::KeyMismatch
    };
    Some((Verdict::Outcome(outcome), (q.now, event)))
}

//! The settle transaction: the one way a batch of requests is decided and
//! stored in a transaction. A request on its own (a packet, a large body,
//! one the group insert left undecided) is a batch of one; a keyed batch of
//! the group insert is a batch of many; a large packet's chunks are each a
//! batch of one part of their request (see [`super::packet`]).
//!
//! Everything runs on the transaction's connection, so it commits or rolls
//! back together; a statement covers the whole batch wherever it can:
//! 1. **keys**: release the expired claims of the batch's keys and claim
//!    them all in one statement. A request that has one message claims its
//!    key with the answer of that message accepted already in it, so the
//!    common request (new) writes its key once. On PostgreSQL a concurrent
//!    claim of the same key waits on the primary key until the first
//!    transaction commits and then sees its answer, so simultaneous repeats
//!    all get the first answer.
//! 2. **messages** of the requests that claimed their key or have none
//!    (see [`super::messages`]): stored, or found duplicates of a live
//!    holder and audited.
//! 3. **answers**: each request's answer; a key whose answer differs from
//!    the one it was claimed with (a duplicate, a packet) gets it now.
//! 4. **repeats**: a request whose key an earlier request (or an earlier
//!    row of the batch) claimed replays that key's answer or is refused as
//!    a mismatch, audited.
//!
//! Only after the commit does a caller answer 2xx.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::decide::{kept, repeat};
use super::keys::{Claim, KeySql};
use super::messages::store_messages;
use super::packet::Progress;
use super::statements::IngestSql;
use crate::{
    Answer, IngestOutcome, IngestRequest, KeyClaim, MessageOutcome, NewMessage, Result, Scope, StoreError,
};

/// One request (or one chunk of a large packet) as the settle transaction
/// takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending<'a> {
    /// Where its messages belong.
    pub scope: &'a Scope,
    /// The request time (timestamps and windows).
    pub now: DateTime<Utc>,
    /// The request's key, if any.
    pub key: Option<&'a KeyClaim>,
    /// The interchange envelope kept with the answer.
    pub envelope: Option<&'a serde_json::Value>,
    /// The messages to store, in packet order.
    pub messages: &'a [NewMessage],
    /// What earlier chunks of the same packet left ([`Progress::START`]
    /// for a whole request).
    pub progress: Progress,
    /// Outcomes of the packet's earlier chunks, which the answer starts with.
    pub earlier: &'a [MessageOutcome],
    /// Whether this completes the request: it claims the key and returns
    /// the answer. A packet's earlier chunks only store their messages.
    pub last: bool,
}

impl<'a> Pending<'a> {
    /// A whole request.
    pub(crate) fn whole(req: &'a IngestRequest<'a>) -> Pending<'a> {
        Pending {
            scope: req.scope,
            now: req.now,
            key: req.key.as_ref(),
            envelope: req.envelope.as_ref(),
            messages: &req.messages,
            progress: Progress::START,
            earlier: &[],
            last: true,
        }
    }

    /// The key this settle claims: the request's, on its last part.
    fn claimed_key(&self) -> Option<&'a KeyClaim> {
        self.key.filter(|_| self.last)
    }

    /// The answer the key is claimed with: that of its one message
    /// accepted; `None` for a packet (or without a key to claim), which
    /// finishes its key once its messages are decided.
    pub(crate) fn expected(&self) -> Result<Option<Expected>> {
        let [m] = self.messages else { return Ok(None) };
        if self.claimed_key().is_none() || !self.earlier.is_empty() {
            return Ok(None);
        }
        let outcomes = vec![MessageOutcome::Accepted(m.summary(self.now))];
        let answer = Answer { outcomes, envelope: self.envelope.cloned(), leased: Vec::new() };
        let kept = kept(&answer)?;
        Ok(Some(Expected { answer, kept }))
    }

    /// The claim of this request's key with its `expected` answer; `None`
    /// without a key to claim.
    pub(crate) fn claim<'c>(&self, expected: Option<&'c Expected>) -> Option<Claim<'c>>
    where
        'a: 'c,
    {
        let expected = expected.map(|e| (e.kept.0.as_str(), e.kept.1));
        Some(Claim { scope: self.scope, key: self.claimed_key()?, now: self.now, expected })
    }
}

/// The answer a key is claimed with, and what the key keeps of it (the
/// answer's text and message id, see `decide::kept`).
#[derive(Debug)]
pub(crate) struct Expected {
    /// The answer of the request's one message accepted.
    pub answer: Answer,
    /// Its text and message id, as the key keeps them.
    pub kept: (String, Option<Uuid>),
}

/// What the settle transaction decided for one [`Pending`].
#[derive(Debug)]
pub(crate) enum Settled {
    /// A packet's earlier chunk: its outcomes and the progress after it.
    Part {
        /// The chunk's outcomes, in order.
        outcomes: Vec<MessageOutcome>,
        /// What this chunk leaves for the next.
        progress: Progress,
    },
    /// The request's outcome (its last part, or a repeat of its key).
    Whole(IngestOutcome),
}

/// Settles `batch` on `conn`, a write transaction the caller commits; an
/// error means the caller rolls back (nothing of the batch is stored).
pub(crate) async fn settle_in<C: IngestSql + KeySql + Send>(
    conn: &mut C,
    batch: &[Pending<'_>],
) -> Result<Vec<Settled>> {
    let expected = batch.iter().map(Pending::expected).collect::<Result<Vec<_>>>()?;
    let claimed = claim_keys(conn, batch, &expected).await?;
    let winners: Vec<usize> = (0..batch.len()).filter(|i| claimed[*i]).collect();
    let stored = store_messages(conn, batch, &winners).await?;
    let mut settled: Vec<Option<Settled>> = (0..batch.len()).map(|_| None).collect();
    let mut finished = Vec::new();
    for (&i, (outcomes, progress)) in winners.iter().zip(stored) {
        let p = &batch[i];
        if !p.last {
            settled[i] = Some(Settled::Part { outcomes, progress });
            continue;
        }
        let outcomes = p.earlier.iter().cloned().chain(outcomes).collect();
        let answer = Answer { outcomes, envelope: p.envelope.cloned(), leased: Vec::new() };
        if let Some(key) = p.claimed_key()
            && expected[i].as_ref().is_none_or(|e| e.answer != answer)
        {
            let (text, message_id) = kept(&answer)?;
            finished.push((p.scope, key, text, message_id));
        }
        settled[i] = Some(Settled::Whole(IngestOutcome::Processed(answer)));
    }
    if !finished.is_empty() {
        conn.finish_keys(&finished).await?;
    }
    settle_repeats(conn, batch, &claimed, &mut settled).await?;
    settled
        .into_iter()
        .map(|s| s.ok_or_else(|| StoreError::Invariant("a request left unsettled".into())))
        .collect()
}

/// Claims the keys of `batch` (expired claims released first); true for
/// each request that claimed its key or has none to claim.
async fn claim_keys<C: KeySql>(
    conn: &mut C,
    batch: &[Pending<'_>],
    expected: &[Option<Expected>],
) -> Result<Vec<bool>> {
    let mut claimed = vec![true; batch.len()];
    let (keyed, claims): (Vec<usize>, Vec<Claim<'_>>) = batch
        .iter()
        .zip(expected)
        .enumerate()
        .filter_map(|(i, (p, e))| Some((i, p.claim(e.as_ref())?)))
        .unzip();
    if claims.is_empty() {
        return Ok(claimed);
    }
    conn.release_expired_keys(&claims).await?;
    let won = conn.claim_keys(&claims).await?;
    keyed.into_iter().zip(won).for_each(|(i, won)| claimed[i] = won);
    Ok(claimed)
}

/// Answers the requests whose key was claimed before from the key's kept
/// answer (read after this batch's own answers are written, so a repeat
/// within the batch sees its first request's final answer), each audited.
async fn settle_repeats<C: IngestSql + KeySql>(
    conn: &mut C,
    batch: &[Pending<'_>],
    claimed: &[bool],
    settled: &mut [Option<Settled>],
) -> Result<()> {
    let repeats: Vec<(usize, &Scope, &KeyClaim)> = (0..batch.len())
        .filter(|i| !claimed[*i])
        .filter_map(|i| Some((i, batch[i].scope, batch[i].claimed_key()?)))
        .collect();
    if repeats.is_empty() {
        return Ok(());
    }
    let keys: Vec<(&Scope, &KeyClaim)> = repeats.iter().map(|(_, s, k)| (*s, *k)).collect();
    let states = conn.key_states(&keys).await?;
    let mut events = Vec::with_capacity(repeats.len());
    for (i, scope, key) in repeats {
        let Some((outcome, event)) = repeat(scope, key, &states)? else {
            return Err(StoreError::Invariant("key claimed without an answer".into()));
        };
        events.push((batch[i].now, event));
        settled[i] = Some(Settled::Whole(outcome));
    }
    conn.insert_audits(&events).await
}

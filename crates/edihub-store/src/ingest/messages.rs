//! Storing the messages of a settle transaction's requests (see
//! [`super::settle`]): each message is stored, or found a duplicate of the
//! live message that holds its fingerprint and audited.
//!
//! - A packet's duplicates of committed messages are settled set-wise
//!   first ([`known_duplicates`], see [`super::packet`]), and its other
//!   fingerprints are locked in one global order
//!   (`IngestSql::lock_fingerprints`), so two packets never deadlock.
//! - The rest is inserted in **rounds**: each round inserts the next
//!   message of every request in one statement (`ON CONFLICT DO NOTHING`
//!   on the fingerprint's claim, whose unique key is the only arbiter). A
//!   batch of one-message requests is one round; a packet's messages go
//!   one per round, in packet order, which is the feed's and delivery's
//!   order, and the first one stored holds the request body that the
//!   others point to.
//! - A row that was not inserted met a holder: a live one makes it a
//!   duplicate; its own row (a group insert committed it but lost the
//!   answer with the connection) makes it accepted; a holder whose window
//!   has passed is released and the message tries again in the next round,
//!   becoming the original.

use super::decide::duplicate_of;
use super::packet::{LOOKUP_CHUNK, Progress};
use super::settle::Pending;
use super::statements::{IngestSql, Row, ScopedHolder};
use crate::{DetectedBy, MessageOutcome, NewMessage, Result, Scope, StoreError};

/// Rounds one message may take before its claim counts as changing hands
/// for ever (each round released an expired holder, or found none).
const MAX_TRIES: u8 = 4;

/// One request's messages on their way: the outcomes so far, the next
/// message without one (`cursor`) and how often it has tried.
struct Progressing<'a> {
    pending: &'a Pending<'a>,
    outcomes: Vec<Option<MessageOutcome>>,
    progress: Progress,
    cursor: usize,
    tries: u8,
}

impl Progressing<'_> {
    /// The index of the next message without an outcome, if any.
    fn next(&mut self) -> Option<usize> {
        while self.outcomes.get(self.cursor)?.is_some() {
            self.cursor += 1;
        }
        Some(self.cursor)
    }

    /// Records the outcome of message `i`; the first message stored holds
    /// the body.
    fn decide(&mut self, i: usize, outcome: MessageOutcome) {
        if let (None, MessageOutcome::Accepted(s)) = (self.progress.holder, &outcome) {
            self.progress.holder = Some(s.id);
        }
        self.outcomes[i] = Some(outcome);
        self.tries = 0;
    }
}

/// Stores the messages of the requests at `winners` in `batch`; returns,
/// for each, its outcomes in order and its progress after them.
pub(crate) async fn store_messages<C: IngestSql + Send>(
    conn: &mut C,
    batch: &[Pending<'_>],
    winners: &[usize],
) -> Result<Vec<(Vec<MessageOutcome>, Progress)>> {
    let mut requests = Vec::with_capacity(winners.len());
    for &i in winners {
        let pending = &batch[i];
        let mut progress = pending.progress;
        let outcomes = known_duplicates(conn, pending, &mut progress.look_up).await?;
        let request = Progressing { pending, outcomes, progress, cursor: 0, tries: 0 };
        lock_the_rest(conn, &request).await?;
        requests.push(request);
    }
    while insert_round(conn, &mut requests).await? {}
    requests
        .into_iter()
        .map(|r| {
            let outcomes = r.outcomes.into_iter().collect::<Option<Vec<_>>>();
            let outcomes =
                outcomes.ok_or_else(|| StoreError::Invariant("a message left unsettled".into()))?;
            Ok((outcomes, r.progress))
        })
        .collect()
}

/// Locks the fingerprints a packet still has to insert, in one global
/// order, before its rounds claim them in packet order.
async fn lock_the_rest<C: IngestSql>(conn: &mut C, r: &Progressing<'_>) -> Result<()> {
    let to_insert: Vec<&str> = r
        .pending
        .messages
        .iter()
        .zip(&r.outcomes)
        .filter(|(_, known)| known.is_none())
        .filter_map(|(m, _)| m.fingerprint.as_deref())
        .collect();
    if to_insert.len() > 1 {
        conn.lock_fingerprints(r.pending.scope, &to_insert).await?;
    }
    Ok(())
}

/// One round: the next message of every request in one insert, then the
/// holders of those not inserted. False when no message was left.
async fn insert_round<C: IngestSql + Send>(conn: &mut C, requests: &mut [Progressing<'_>]) -> Result<bool> {
    let round: Vec<(usize, usize)> =
        requests.iter_mut().enumerate().filter_map(|(r, p)| Some((r, p.next()?))).collect();
    if round.is_empty() {
        return Ok(false);
    }
    let rows: Vec<Row<'_>> = round
        .iter()
        .map(|&(r, i)| {
            let p = &requests[r];
            let message = &p.pending.messages[i];
            Row {
                scope: p.pending.scope,
                now: p.pending.now,
                message,
                payload_holder: p.progress.holder,
                lease: None,
            }
        })
        .collect();
    let inserted = conn.insert_messages(&rows).await?;
    let mut missed = Vec::new();
    for &(r, i) in &round {
        let p = &mut requests[r];
        let m = &p.pending.messages[i];
        if inserted.ids.contains(&m.id) {
            let summary = m.summary(p.pending.now);
            p.decide(i, MessageOutcome::Accepted(summary));
        } else {
            missed.push((r, i));
        }
    }
    if missed.is_empty() {
        return Ok(true);
    }
    let claims = missed
        .iter()
        .map(|&(r, i)| {
            let p = &requests[r].pending;
            let fp = p.messages[i].fingerprint.as_deref();
            fp.map(|fp| (p.scope, fp))
                .ok_or_else(|| StoreError::Invariant("insert without fingerprint skipped".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    let holders = inserted.holders_of(conn, &claims).await?;
    settle_missed(conn, requests, &missed, &holders).await?;
    Ok(true)
}

/// Decides the messages of a round that were not inserted, from the
/// holders of their fingerprints.
async fn settle_missed<C: IngestSql + Send>(
    conn: &mut C,
    requests: &mut [Progressing<'_>],
    missed: &[(usize, usize)],
    holders: &[ScopedHolder],
) -> Result<()> {
    let mut events = Vec::new();
    for &(r, i) in missed {
        let p = &mut requests[r];
        let (scope, now, m) = (p.pending.scope, p.pending.now, &p.pending.messages[i]);
        if let Some((existing, event)) = duplicate_of(scope, m, now, holders) {
            events.push((now, event));
            p.decide(i, MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint });
            continue;
        }
        match holder_of(scope, m, holders) {
            Some(h) if h.holder.summary.id == m.id => {
                p.decide(i, MessageOutcome::Accepted(h.holder.summary.clone()));
                continue;
            }
            Some(_) => {
                let fp = m.fingerprint.as_deref().unwrap_or_default();
                conn.release_expired(scope, fp, now).await?;
            }
            // The holder lost its claim between the insert and the probe.
            None => {}
        }
        p.tries += 1;
        if p.tries >= MAX_TRIES {
            return Err(StoreError::Invariant("fingerprint claim kept changing hands".into()));
        }
    }
    if !events.is_empty() {
        conn.insert_audits(&events).await?;
    }
    Ok(())
}

/// The holder of `m`'s fingerprint in `scope` among `holders`.
fn holder_of<'h>(scope: &Scope, m: &NewMessage, holders: &'h [ScopedHolder]) -> Option<&'h ScopedHolder> {
    let fp = m.fingerprint.as_deref()?;
    holders.iter().find(|h| {
        h.tenant_id == scope.tenant_id
            && h.environment_id == scope.environment_id
            && h.holder.summary.fingerprint.as_deref() == Some(fp)
    })
}

/// The messages of a packet whose fingerprint a live, committed message
/// holds, as duplicates, with their audit events written: one holder lookup
/// and one audit insert per [`LOOKUP_CHUNK`] messages instead of three
/// statements per IDoc, so a re-sent packet costs less than the first send.
/// `None` where the insert must decide. A single message skips this: its
/// insert finds a holder as cheaply. A lookup that finds no duplicate clears
/// `look_up`: the rest of a new packet (or of a retry past what was
/// committed) is new too, and its inserts settle any stray repeat.
async fn known_duplicates<C: IngestSql>(
    conn: &mut C,
    p: &Pending<'_>,
    look_up: &mut bool,
) -> Result<Vec<Option<MessageOutcome>>> {
    let mut known = vec![None; p.messages.len()];
    if p.messages.len() < 2 {
        return Ok(known);
    }
    for (lookup, slots) in p.messages.chunks(LOOKUP_CHUNK).zip(known.chunks_mut(LOOKUP_CHUNK)) {
        if !*look_up {
            break;
        }
        let fingerprints: Vec<&str> = lookup.iter().filter_map(|m| m.fingerprint.as_deref()).collect();
        if fingerprints.is_empty() {
            continue;
        }
        let holders = conn.packet_holders(p.scope, &fingerprints).await?;
        let mut events = Vec::new();
        for (m, slot) in lookup.iter().zip(slots.iter_mut()) {
            if let Some((existing, event)) = duplicate_of(p.scope, m, p.now, &holders) {
                events.push((p.now, event));
                *slot = Some(MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint });
            }
        }
        if events.is_empty() {
            *look_up = false;
        } else {
            conn.insert_audits(&events).await?;
        }
    }
    Ok(known)
}

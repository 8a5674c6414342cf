//! The ingest transaction: one request's key claim, messages, audit events
//! and kept answer, committed together (see [`super`] for when it runs).
//!
//! Each function takes the transaction's connection, so everything it does
//! commits or rolls back together. Order of work:
//! 1. claim the request key (Idempotency-Key, provider event id or
//!    interchange). On PostgreSQL a concurrent claim of the same key waits
//!    on the primary key until the first transaction commits, then sees its
//!    answer, so simultaneous repeats all get the first answer.
//! 2. for each message: insert with `ON CONFLICT … DO NOTHING` on its
//!    fingerprint's claim (where a claim lives is each backend's: see
//!    `postgres/ingest/insert.rs`, `sqlite/ingest/insert.rs`). The claim's
//!    unique key is the only arbiter: the loser reads the holder and
//!    records a `message.duplicate_blocked` event; if the holder's window
//!    has passed, the loser releases it and inserts again, becoming the
//!    original.
//! 3. keep the answer with the key, commit. Only then does the caller
//!    answer 2xx.

use uuid::Uuid;

use super::decide::{duplicate_of, kept, repeat};
use super::keys::{Claim, KeySql};
use super::packet::{Chunk, ChunkDone, LOOKUP_CHUNK, Progress};
use super::statements::{IngestSql, Row};
use crate::backend::Backend;
use crate::{
    DetectedBy, IngestOutcome, IngestRequest, KeyClaim, MessageOutcome, NewMessage, Result, StoreError,
};

/// The whole request in one transaction.
pub(crate) async fn ingest_in<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
) -> Result<IngestOutcome> {
    if let Some(key) = &req.key
        && !claim_key::<DB>(conn, req, key).await?
    {
        return repeat_of_key::<DB>(conn, req, key).await;
    }
    // The request body is stored once: by the first message stored, which
    // the packet's other stored messages point to.
    let (outcomes, _) = store_messages::<DB>(conn, req, &req.messages, Progress::START).await?;
    finish::<DB>(conn, req, outcomes).await
}

/// One chunk of a large packet in its own transaction (see
/// [`super::packet`]): the messages of `chunk`, and for the last chunk the
/// key's claim and the answer for `earlier` plus these.
pub(crate) async fn packet_chunk_in<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    chunk: Chunk<'_>,
) -> Result<ChunkDone> {
    if chunk.last
        && let Some(key) = &req.key
        && !claim_key::<DB>(conn, req, key).await?
    {
        return Ok(ChunkDone::Final(repeat_of_key::<DB>(conn, req, key).await?));
    }
    let (outcomes, progress) = store_messages::<DB>(conn, req, chunk.messages, chunk.progress).await?;
    if !chunk.last {
        return Ok(ChunkDone::Stored { outcomes, progress });
    }
    let all = chunk.earlier.iter().cloned().chain(outcomes).collect();
    Ok(ChunkDone::Final(finish::<DB>(conn, req, all).await?))
}

/// Claims the request's key; false when an earlier request holds it.
async fn claim_key<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    key: &KeyClaim,
) -> Result<bool> {
    let claim = Claim { scope: req.scope, key, now: req.now, expected: None };
    conn.release_expired_keys(&[claim]).await?;
    let claimed = conn.claim_keys(&[claim]).await?;
    Ok(claimed.first().copied().unwrap_or(false))
}

/// Keeps the answer with the key (if any) and returns it.
async fn finish<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    outcomes: Vec<MessageOutcome>,
) -> Result<IngestOutcome> {
    let answer = req.answer(outcomes);
    if let Some(key) = &req.key {
        let (text, message_id) = kept(&answer)?;
        conn.finish_keys(&[(req.scope, key, text, message_id)]).await?;
    }
    Ok(IngestOutcome::Processed(answer))
}

/// A key that was claimed before: replay its first answer, or refuse it.
async fn repeat_of_key<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    key: &KeyClaim,
) -> Result<IngestOutcome> {
    let states = conn.key_states(&[(req.scope, key)]).await?;
    let Some((outcome, event)) = repeat(req.scope, key, &states)? else {
        return Err(StoreError::Invariant("key claimed without an answer".into()));
    };
    conn.insert_audits(&[(req.now, event)]).await?;
    Ok(outcome)
}

/// Stores `messages` (all of a request, or a chunk of a packet):
/// duplicates of committed messages are settled set-wise first, the rest
/// one insert each, in packet order, after their fingerprints are locked in
/// one global order (see `IngestSql::lock_fingerprints`). Returns the outcomes
/// in order and the packet's progress after them (see [`Progress`]).
async fn store_messages<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    messages: &[NewMessage],
    mut progress: Progress,
) -> Result<(Vec<MessageOutcome>, Progress)> {
    let known = known_duplicates::<DB>(conn, req, messages, &mut progress.look_up).await?;
    let to_insert: Vec<&str> = messages
        .iter()
        .zip(&known)
        .filter(|(_, known)| known.is_none())
        .filter_map(|(m, _)| m.fingerprint.as_deref())
        .collect();
    if to_insert.len() > 1 {
        conn.lock_fingerprints(req.scope, &to_insert).await?;
    }
    let mut outcomes = Vec::with_capacity(messages.len());
    for (m, known) in messages.iter().zip(known) {
        let outcome = match known {
            Some(duplicate) => duplicate,
            None => store_message::<DB>(conn, req, m, progress.holder).await?,
        };
        if let (None, MessageOutcome::Accepted(s)) = (progress.holder, &outcome) {
            progress.holder = Some(s.id);
        }
        outcomes.push(outcome);
    }
    Ok((outcomes, progress))
}

/// The messages of a packet whose fingerprint a live, committed message
/// holds, as duplicates, with their audit events written: one holder lookup
/// and one audit insert per [`LOOKUP_CHUNK`] messages instead of three
/// statements per IDoc, so a re-sent packet costs less than the first send.
/// `None` where the insert must decide. A single message skips this: its
/// insert finds a holder as cheaply. A lookup that finds no duplicate clears
/// `look_up`: the rest of a new packet (or of a retry past what was
/// committed) is new too, and its inserts settle any stray repeat.
async fn known_duplicates<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    messages: &[NewMessage],
    look_up: &mut bool,
) -> Result<Vec<Option<MessageOutcome>>> {
    let mut known = vec![None; messages.len()];
    if messages.len() < 2 {
        return Ok(known);
    }
    for (lookup, slots) in messages.chunks(LOOKUP_CHUNK).zip(known.chunks_mut(LOOKUP_CHUNK)) {
        if !*look_up {
            break;
        }
        let fingerprints: Vec<&str> = lookup.iter().filter_map(|m| m.fingerprint.as_deref()).collect();
        if fingerprints.is_empty() {
            continue;
        }
        let holders = conn.packet_holders(req.scope, &fingerprints).await?;
        let mut events = Vec::new();
        for (m, slot) in lookup.iter().zip(slots.iter_mut()) {
            if let Some((existing, event)) = duplicate_of(req.scope, m, req.now, &holders) {
                events.push((req.now, event));
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

/// Stores one message or finds the message whose fingerprint it repeats.
async fn store_message<DB: Backend>(
    conn: &mut DB::Connection,
    req: &IngestRequest<'_>,
    m: &NewMessage,
    payload_holder: Option<Uuid>,
) -> Result<MessageOutcome> {
    let row = Row { scope: req.scope, now: req.now, message: m, payload_holder };
    // The common case is one statement: the insert. On a conflict its
    // answer names the holder (or a probe reads it, when it committed while
    // the insert ran); if its window has passed we release it and go round
    // again. A holder can also lose its claim between our insert and our
    // read (a third request released it): again.
    for _ in 0..4 {
        let inserted = conn.insert_messages(&[row]).await?;
        if !inserted.ids.is_empty() {
            return Ok(MessageOutcome::Accepted(m.summary(req.now)));
        }
        let Some(fp) = &m.fingerprint else {
            return Err(StoreError::Invariant("insert without fingerprint skipped".into()));
        };
        let holders = inserted.holders_of(conn, &[(req.scope, fp)]).await?;
        if let Some((existing, event)) = duplicate_of(req.scope, m, req.now, &holders) {
            conn.insert_audits(&[(req.now, event)]).await?;
            return Ok(MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint });
        }
        match holders.first() {
            // Our own row: a group insert committed it but its answer was
            // lost with the connection.
            Some(h) if h.holder.summary.id == m.id => {
                return Ok(MessageOutcome::Accepted(h.holder.summary.clone()));
            }
            // The holder's window has passed: release its claim and insert
            // again (the next round becomes the new original).
            Some(_) => conn.release_expired(req.scope, fp, req.now).await?,
            None => {}
        }
    }
    Err(StoreError::Invariant("fingerprint claim kept changing hands".into()))
}

//! The ingest: one request's messages stored exactly once. Its paths and
//! decisions are written once for both backends; the statements they run
//! are each backend's, written whole in `postgres/ingest/` and
//! `sqlite/ingest/` behind the connection traits of [`statements`] and
//! [`keys`].
//!
//! Every request is settled by one of two means, and both decide in
//! [`decide`] (what the message insert answers is read in
//! [`insert_answer`]):
//! - the **group insert** ([`group`]): a request with one small message is
//!   queued with the concurrent requests of its batch. Without a key the
//!   batch is one autocommit insert; with keys it is one statement where
//!   the backend has one (PostgreSQL) and the settle transaction for the
//!   rest;
//! - the **settle transaction** ([`settle`]) for a batch of requests: a
//!   keyed batch, or a request on its own (a packet, a large body, or what
//!   the group insert left undecided) as a batch of one. A large packet
//!   whose key (if any) is new runs it once per chunk ([`packet`]).
//!
//! Every path returns only after its commit, so a 2xx means stored.

mod decide;
pub(crate) mod group;
pub(crate) mod insert_answer;
pub(crate) mod keys;
mod messages;
pub(crate) mod packet;
pub(crate) mod rendered_keys;
pub(crate) mod settle;
pub(crate) mod statements;

use group::{Batchers, Queued, Verdict};
use packet::{Progress, TX_CHUNK};
use settle::{Pending, Settled};
use sqlx::Connection;

use crate::backend::Backend;
use crate::ingest::keys::KeySql;
use crate::sql_store::SqlStore;
use crate::{Answer, DetectedBy, IngestOutcome, IngestRequest, MessageOutcome, Result, StoreError};

// Crate-internal methods: the bound names a crate-private trait on purpose
// (what differs between backends is nobody else's business).
#[expect(private_bounds)]
impl<DB: Backend> SqlStore<DB> {
    /// Runs one request (see the module docs for its path).
    pub(crate) async fn run_ingest(&self, mut req: IngestRequest<'_>) -> Result<IngestOutcome> {
        if has_large_payload(&req.messages) {
            return self.ingest_detached(req).await;
        }
        if !Batchers::eligible(&req) {
            return self.ingest_tx(req).await;
        }
        let Some(message) = req.messages.pop() else { return self.ingest_tx(req).await };
        let queued = Queued {
            scope: req.scope.clone(),
            now: req.now,
            key: req.key.clone(),
            envelope: req.envelope.clone(),
            message,
            lease: req.lease.take(),
        };
        let (queued, verdict) = self.batchers.insert(queued).await?;
        let mut leased = Vec::new();
        let outcome = match verdict {
            Verdict::Inserted(l) => {
                leased = l;
                MessageOutcome::Accepted(queued.message.summary(req.now))
            }
            Verdict::Duplicate(existing) => {
                MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint }
            }
            Verdict::Outcome(outcome) => return Ok(outcome),
            Verdict::Undecided => {
                req.messages.push(queued.message);
                return self.ingest_tx(req).await;
            }
        };
        Ok(IngestOutcome::Processed(Answer { leased, ..req.answer(vec![outcome]) }))
    }

    /// A request with a large payload, settled in a task of its own that
    /// always completes. PostgreSQL receives a large payload by `COPY`
    /// (`postgres/ingest/upload.rs`), and a copy cut off midway, as a
    /// request's future is whenever its client goes away, would return its
    /// connection to the pool in the middle of the copy. As with the group
    /// insert's batches, the request is then stored whether or not its
    /// client is still there for the answer; a retry is answered as a
    /// repeat.
    async fn ingest_detached(&self, req: IngestRequest<'_>) -> Result<IngestOutcome> {
        let (store, scope) = (self.clone(), req.scope.clone());
        let IngestRequest { key, messages, now, envelope, .. } = req;
        let settle = async move {
            store.ingest_tx(IngestRequest { scope: &scope, key, messages, now, envelope, lease: None }).await
        };
        match tokio::spawn(settle).await {
            Ok(outcome) => outcome,
            // A panic is a bug: it ends this request as it would have inline.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(StoreError::Invariant(format!("settling a large request: {e}"))),
        }
    }

    /// A request on its own: the settle transaction with a batch of one,
    /// or, for a large packet whose key (if any) is new, one per chunk.
    async fn ingest_tx(&self, req: IngestRequest<'_>) -> Result<IngestOutcome> {
        if req.messages.len() > TX_CHUNK && !self.key_taken(&req).await? {
            return self.ingest_packet(&req).await;
        }
        match self.settle_tx(Pending::whole(&req)).await? {
            Settled::Whole(outcome) => Ok(outcome),
            Settled::Part { .. } => Err(StoreError::Invariant("a whole request settled in part".into())),
        }
    }

    /// Whether an earlier request claimed this request's key (then the
    /// ordinary transaction replays or refuses it at once).
    async fn key_taken(&self, req: &IngestRequest<'_>) -> Result<bool> {
        let Some(key) = &req.key else { return Ok(false) };
        let mut session = self.db.session().await?;
        let states = session.key_states(&[(req.scope, key)]).await?;
        session.done(!states.is_empty()).await
    }

    /// A large packet, one settle transaction per chunk (see [`packet`]).
    async fn ingest_packet(&self, req: &IngestRequest<'_>) -> Result<IngestOutcome> {
        let mut earlier = Vec::with_capacity(req.messages.len());
        let mut progress = Progress::START;
        let count = req.messages.len().div_ceil(TX_CHUNK);
        for (i, messages) in req.messages.chunks(TX_CHUNK).enumerate() {
            let chunk = Pending {
                messages,
                progress,
                earlier: &earlier,
                last: i + 1 == count,
                ..Pending::whole(req)
            };
            match self.settle_tx(chunk).await? {
                Settled::Part { outcomes, progress: after } => {
                    earlier.extend(outcomes);
                    progress = after;
                }
                Settled::Whole(outcome) => return Ok(outcome),
            }
        }
        Err(StoreError::Invariant("a packet ended without its last chunk".into()))
    }

    /// The settle transaction for one request (or chunk), retried on
    /// deadlocks and busy errors. On a single-writer backend it waits its
    /// turn with the group insert's batches.
    async fn settle_tx(&self, pending: Pending<'_>) -> Result<Settled> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let turn = self.batchers.write_turn().await;
            let mut tx = self.begin().await?;
            let settled = settle::settle_in(&mut *tx, std::slice::from_ref(&pending)).await;
            release_buffers::<DB>(&mut tx, pending.messages);
            match settled.map(|mut s| s.pop()) {
                Ok(Some(settled)) => {
                    tx.commit().await?;
                    return Ok(settled);
                }
                Ok(None) => return Err(StoreError::Invariant("a batch of one settled nothing".into())),
                Err(e) => {
                    drop(tx);
                    drop(turn);
                    if !self.recover(&e, attempt).await? {
                        return Err(e);
                    }
                }
            }
        }
    }
}

// Crate-internal methods, as above.
#[expect(private_bounds)]
impl<DB: Backend> SqlStore<DB> {
    /// Whether a failed write transaction should run again: when it met a
    /// missing partition, once that is created (PostgreSQL; a row never
    /// fails for want of one), else as [`pause_before_retry`] says.
    async fn recover(&self, e: &StoreError, attempt: u64) -> Result<bool> {
        if attempt < 8 && DB::create_missing_partition(&self.db, e, self.layout).await? {
            return Ok(true);
        }
        Ok(pause_before_retry(e, attempt).await)
    }
}

/// A payload of this size or more is large: its request settles in a task
/// of its own ([`SqlStore::ingest_detached`]), PostgreSQL receives it by
/// `COPY`, and its connection's buffers give back their room afterwards
/// (see [`release_buffers`]).
pub(crate) const LARGE_PAYLOAD: usize = 1024 * 1024;

/// Whether any of `messages` has a [`LARGE_PAYLOAD`].
fn has_large_payload(messages: &[crate::NewMessage]) -> bool {
    messages.iter().any(|m| m.payload.len() >= LARGE_PAYLOAD)
}

/// Gives back the room a large payload took in the connection's buffers.
/// sqlx keeps a PostgreSQL connection's write buffer at the largest size it
/// has grown to, here a chunk of the upload that sends a large payload
/// (`postgres/ingest/upload.rs`); without this every pooled connection
/// that once stored a large body would keep that room for its lifetime.
/// (SQLite's connections keep no such buffer.) Small requests leave the
/// buffers as they are (they stay at their initial size).
fn release_buffers<DB: Backend>(conn: &mut DB::Connection, messages: &[crate::NewMessage]) {
    if has_large_payload(messages) {
        conn.shrink_buffers();
    }
}

/// Whether a failed write transaction should run again: deadlocks and busy
/// errors are cured by running again, up to eight attempts. (Packets that
/// carry the same fingerprints in opposite order lock them first and so do
/// not deadlock each other; a packet can still meet a group insert that
/// claims two of its fingerprints in the other order.) Transactions
/// that deadlocked together would collide again if all retried at once, so
/// this first waits a random few milliseconds, longer each time.
async fn pause_before_retry(e: &StoreError, attempt: u64) -> bool {
    if !e.is_transient() || attempt >= 8 {
        return false;
    }
    tracing::warn!(error = %e, attempt, "retrying ingest transaction");
    let jitter = (uuid::Uuid::new_v4().as_u128() % 20) as u64 + 1;
    tokio::time::sleep(std::time::Duration::from_millis(jitter * attempt)).await;
    true
}

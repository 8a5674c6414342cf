//! The ingest: one request's messages stored exactly once. Its paths and
//! decisions are written once for both backends; the statements they run
//! are each backend's, written whole in `postgres/ingest/` and
//! `sqlite/ingest/` behind the connection traits of [`statements`] and
//! [`keys`].
//!
//! A request takes one of three paths, and they all decide in [`decide`]
//! (what the message insert answers is read in [`insert_answer`]):
//! - **group insert** ([`group`]): a request with one small message, with or
//!   without a key, is settled together with the concurrent requests of its
//!   batch: without keys in one autocommit statement, with keys in one
//!   transaction per batch;
//! - **transaction** ([`transaction`]): whatever the group insert cannot
//!   decide (an expired window, a failed statement) and packets;
//! - **chunks** ([`packet`]): a large packet whose key (if any) is new, one
//!   transaction per chunk.
//!
//! Every path returns only after its commit, so a 2xx means stored.

mod decide;
pub(crate) mod group;
pub(crate) mod insert_answer;
pub(crate) mod keys;
pub(crate) mod packet;
pub(crate) mod rendered_keys;
pub(crate) mod statements;
mod transaction;

use group::{Batchers, Queued, Verdict};
use packet::{Chunk, ChunkDone, Progress, TX_CHUNK};
use sqlx::Connection;

use crate::backend::Backend;
use crate::ingest::keys::KeySql;
use crate::sql_store::SqlStore;
use crate::{DetectedBy, IngestOutcome, IngestRequest, MessageOutcome, Result, StoreError};

// Crate-internal methods: the bound names a crate-private trait on purpose
// (what differs between backends is nobody else's business).
#[expect(private_bounds)]
impl<DB: Backend> SqlStore<DB> {
    /// Runs one request (see the module docs for its path).
    pub(crate) async fn run_ingest(&self, mut req: IngestRequest<'_>) -> Result<IngestOutcome> {
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
        };
        let (queued, verdict) = self.batchers.insert(queued).await?;
        let outcome = match verdict {
            Verdict::Inserted => MessageOutcome::Accepted(queued.message.summary(req.now)),
            Verdict::Duplicate(existing) => {
                MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint }
            }
            Verdict::Outcome(outcome) => return Ok(outcome),
            Verdict::Undecided => {
                req.messages.push(queued.message);
                return self.ingest_tx(req).await;
            }
        };
        Ok(IngestOutcome::Processed(req.answer(vec![outcome])))
    }

    /// The ingest transaction, retried on deadlocks and busy errors; a large
    /// packet whose key (if any) is new is stored in chunks.
    async fn ingest_tx(&self, req: IngestRequest<'_>) -> Result<IngestOutcome> {
        if req.messages.len() > TX_CHUNK && !self.key_taken(&req).await? {
            return self.ingest_packet(&req).await;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = self.begin().await?;
            let stored = transaction::ingest_in::<DB>(&mut tx, &req).await;
            release_buffers::<DB>(&mut tx, &req);
            match stored {
                Ok(outcome) => {
                    tx.commit().await?;
                    return Ok(outcome);
                }
                Err(e) => {
                    drop(tx);
                    if !self.recover(&e, attempt).await? {
                        return Err(e);
                    }
                }
            }
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

    /// A large packet, one transaction per chunk (see [`packet`]).
    async fn ingest_packet(&self, req: &IngestRequest<'_>) -> Result<IngestOutcome> {
        let mut earlier = Vec::with_capacity(req.messages.len());
        let mut progress = Progress::START;
        let count = req.messages.len().div_ceil(TX_CHUNK);
        for (i, messages) in req.messages.chunks(TX_CHUNK).enumerate() {
            let chunk = Chunk { messages, progress, earlier: &earlier, last: i + 1 == count };
            match self.packet_chunk_tx(req, chunk).await? {
                ChunkDone::Stored { outcomes, progress: after } => {
                    earlier.extend(outcomes);
                    progress = after;
                }
                ChunkDone::Final(outcome) => return Ok(outcome),
            }
        }
        Err(StoreError::Invariant("a packet ended without its last chunk".into()))
    }

    /// One chunk's transaction, retried like the ingest transaction; on a
    /// single-writer backend it waits its turn with the group insert.
    async fn packet_chunk_tx(&self, req: &IngestRequest<'_>, chunk: Chunk<'_>) -> Result<ChunkDone> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let turn = self.batchers.write_turn().await;
            let mut tx = self.begin().await?;
            let stored = transaction::packet_chunk_in::<DB>(&mut tx, req, chunk).await;
            release_buffers::<DB>(&mut tx, req);
            match stored {
                Ok(done) => {
                    tx.commit().await?;
                    return Ok(done);
                }
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

/// A payload of this size or more is stored through a connection whose
/// buffers give back their room afterwards (see [`release_buffers`]).
const LARGE_PAYLOAD: usize = 1024 * 1024;

/// Gives back the room a large payload took in the connection's buffers.
/// sqlx writes a statement with its arguments into the connection's write
/// buffer and keeps that buffer's size, so without this every pooled
/// connection that once stored a 10 MB IDoc would hold 10 MB for its
/// lifetime. Small requests leave the buffers as they are (they stay at
/// their initial size).
fn release_buffers<DB: Backend>(conn: &mut DB::Connection, req: &IngestRequest<'_>) {
    if req.messages.iter().any(|m| m.payload.len() >= LARGE_PAYLOAD) {
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

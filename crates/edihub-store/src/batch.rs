//! Group insert: the new messages of many concurrent requests in one statement.
//!
//! Most requests carry one new message and no key. For those the whole
//! ingest transaction is a single `INSERT … ON CONFLICT DO NOTHING`: the
//! partial unique index decides the race, and nothing else is written. Run
//! one by one, each such insert costs a round trip and a commit (a WAL flush
//! on PostgreSQL, a WAL append on SQLite), and at a few thousand messages a
//! second those commits, not the inserts, are the bottleneck.
//!
//! So eligible messages are queued here, and a dispatcher sends whatever is
//! queued as one multi-row `INSERT … ON CONFLICT DO NOTHING RETURNING id`
//! in autocommit: one round trip and one commit for the batch. There is no
//! timer: a batch is whatever arrived while the previous batches were in
//! flight, so an idle hub inserts each message at once and a busy one
//! batches more. The statement is atomic, and every caller waits for it to
//! commit before answering, so the contract is unchanged: a 2xx means stored.
//!
//! Only inserts that *succeeded* are decided here. A message whose row was
//! not returned met a fingerprint holder (in the table, or earlier in the
//! same batch: `DO NOTHING` also skips a repeat within one statement), and
//! its caller runs the full ingest transaction, which reads the holder,
//! releases an expired window and writes the audit event. If the statement
//! fails, nothing was inserted and every caller falls back the same way, so
//! one bad row cannot fail its neighbours' requests.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::{Semaphore, mpsc, oneshot};
use uuid::Uuid;

use crate::{NewMessage, Result, Scope, StoreError};

/// Largest payload that is batched; bigger bodies take the transaction path,
/// so one statement never carries several large bodies.
pub(crate) const MAX_PAYLOAD: usize = 64 * 1024;
/// Most rows in one statement (19 parameters each, far under both backends'
/// limits).
const MAX_ROWS: usize = 64;
/// Payload bytes after which a batch is closed.
const MAX_BYTES: usize = 1024 * 1024;

/// One message waiting for the group insert.
#[derive(Debug)]
pub(crate) struct Queued {
    /// Where it belongs.
    pub scope: Scope,
    /// The request time (timestamps and the window's end).
    pub now: DateTime<Utc>,
    /// The message.
    pub message: NewMessage,
}

/// A backend's multi-row insert (implemented for each pool by
/// `ingest::impl_sql_store!`).
#[async_trait::async_trait]
pub(crate) trait GroupInsert: Send + Sync + 'static {
    /// Inserts `items` in one autocommit statement (`ON CONFLICT DO
    /// NOTHING`); returns the ids of the rows it inserted.
    async fn insert_rows(&self, items: &[Queued]) -> Result<Vec<Uuid>>;
}

struct Job {
    item: Queued,
    reply: oneshot::Sender<(Queued, bool)>,
}

/// The queue in front of the group insert; cheap to clone.
#[derive(Clone)]
pub(crate) struct Batcher {
    tx: mpsc::UnboundedSender<Job>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

impl Batcher {
    /// Starts the dispatcher on the current runtime. `concurrency` batches
    /// may be in flight at once (1 for SQLite, which has one writer). The
    /// dispatcher ends when the last clone of the batcher is dropped.
    pub(crate) fn spawn(concurrency: usize, flush: impl GroupInsert) -> Batcher {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(dispatch(rx, concurrency.max(1), Arc::new(flush)));
        Batcher { tx }
    }

    /// Whether a request may use the group insert: one message, no key to
    /// claim, a small payload.
    pub(crate) fn eligible(req: &crate::IngestRequest<'_>) -> bool {
        req.key.is_none() && req.messages.len() == 1 && req.messages[0].payload.len() <= MAX_PAYLOAD
    }

    /// Queues `item`; returns it with `true` when its row was inserted and
    /// committed, `false` when the caller must run the full transaction.
    pub(crate) async fn insert(&self, item: Queued) -> Result<(Queued, bool)> {
        let (reply, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError(job)) = self.tx.send(Job { item, reply }) {
            // The dispatcher's runtime is gone (a store used from another
            // runtime): the transaction path still works.
            return Ok((job.item, false));
        }
        // The dispatcher answers every job it takes; a dropped reply means
        // its runtime is shutting down mid-batch, and the row's fate is
        // unknown. An error (not a guess) makes the sender retry, and the
        // retry is deduplicated if the row was stored.
        answer.await.map_err(|_| StoreError::Invariant("group insert ended without an answer".into()))
    }
}

/// Takes the first waiting job, waits for a free slot, then closes the batch
/// with everything that queued meanwhile.
async fn dispatch<G: GroupInsert>(mut rx: mpsc::UnboundedReceiver<Job>, concurrency: usize, flush: Arc<G>) {
    let slots = Arc::new(Semaphore::new(concurrency));
    while let Some(first) = rx.recv().await {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { return };
        let mut bytes = first.item.message.payload.len();
        let mut jobs = vec![first];
        while jobs.len() < MAX_ROWS && bytes < MAX_BYTES {
            match rx.try_recv() {
                Ok(job) => {
                    bytes += job.item.message.payload.len();
                    jobs.push(job);
                }
                Err(_) => break,
            }
        }
        let flush = Arc::clone(&flush);
        tokio::spawn(async move {
            let _slot = slot;
            let (items, replies): (Vec<Queued>, Vec<_>) = jobs.into_iter().map(|j| (j.item, j.reply)).unzip();
            let inserted = match flush.insert_rows(&items).await {
                Ok(ids) => ids,
                Err(e) => {
                    // Nothing was inserted; each caller retries on its own.
                    tracing::debug!(error = %e, rows = items.len(), "group insert failed");
                    Vec::new()
                }
            };
            for (item, reply) in items.into_iter().zip(replies) {
                let done = inserted.contains(&item.message.id);
                let _ = reply.send((item, done));
            }
        });
    }
}

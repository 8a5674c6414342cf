//! Group insert: the new messages of many concurrent requests in one statement.
//!
//! Most requests carry one new message and no key. For those the whole
//! ingest transaction is a single `INSERT … ON CONFLICT DO NOTHING`: the
//! claim's unique key decides the race, and nothing else is written. Run
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
//! A row that was not inserted met a fingerprint holder (in the table, or
//! earlier in the same statement: `DO NOTHING` also skips a repeat within
//! one statement). The batch then settles those duplicates together too:
//! on PostgreSQL the insert's answer already names the holders it saw (on
//! SQLite, and for a holder that committed while the insert ran, one
//! `SELECT` finds them), and their `message.duplicate_blocked` events go to
//! the group audit (`audits`), which appends the events of many batches in
//! one multi-row `INSERT`, so a duplicate costs no more than a new message.
//! Anything less clear-cut (the holder's window has passed, the holder
//! vanished, or a statement failed) is left [`Verdict::Undecided`] and its
//! caller runs the settle transaction as a batch of one, which releases
//! expired windows and retries; a failed statement changed nothing, so one
//! bad row cannot fail its neighbours' requests.
//!
//! Requests with a key (an Idempotency-Key, a provider's event id or an
//! interchange) are batched too, in their own queue, but the key's claim,
//! the message and the kept answer must commit together. Each key is
//! written with the answer of a new message already in it, so the common
//! batch (every request new) is a claim and an insert. On PostgreSQL that
//! is first tried as one autocommit statement, a data-modifying CTE that
//! claims the keys and inserts the claimed requests' messages without
//! `ON CONFLICT`: a message that meets a fingerprint holder fails the whole
//! statement, which keeps nothing. What it leaves (and every keyed batch on
//! SQLite, or with a windowed key) is settled by the settle transaction
//! ([`crate::ingest::settle`]) as one batch. A key the statement did not
//! claim belongs to an earlier request (or an earlier row of this batch);
//! after the commit its kept answer is read, for all of them in one
//! statement, and replayed or refused as a mismatch, its audit event
//! through the group audit too (see `keyed`).

use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::backend::Backend;
use crate::session::Sessions;
use crate::{Result, StoreError};

mod audits;
mod keyed;
mod plain;
mod queued;

use audits::AuditWriter;
pub(crate) use queued::{MAX_ROWS, Queued, Verdict};

/// Largest payload that is batched; bigger bodies take the settle transaction,
/// so one statement never carries several large bodies.
pub(crate) const MAX_PAYLOAD: usize = 64 * 1024;
/// Payload bytes after which a batch is closed.
const MAX_BYTES: usize = 1024 * 1024;
/// Prepared statements a group-insert connection keeps: each of the five
/// multi-row statements in every batch size. Evicting them would cost a
/// prepare round trip per batch.
pub(crate) const STATEMENT_CACHE: usize = 5 * MAX_ROWS;

struct Job {
    item: Queued,
    reply: oneshot::Sender<(Queued, Verdict)>,
}

/// The two queues of the group insert, for requests without and with a key:
/// separate batches, so a keyed batch's longer transaction never holds up
/// plain inserts. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Batchers {
    plain: mpsc::UnboundedSender<Job>,
    keyed: mpsc::UnboundedSender<Job>,
    /// With one shared slot (SQLite's single writer): the slot, which other
    /// long writers take turns on too (see [`Batchers::write_turn`]).
    single_writer: Option<Arc<Semaphore>>,
}

impl std::fmt::Debug for Batchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batchers").finish_non_exhaustive()
    }
}

impl Batchers {
    /// Starts both dispatchers on the current runtime: `plain` batches
    /// without keys and `keyed` batches with keys may be in flight at once;
    /// `keyed: None` makes the two share the plain slots (SQLite, whose
    /// single writer makes a second batch wait anyway). The dispatchers end
    /// when the last clone is dropped.
    pub(crate) fn spawn<DB: Backend>(pool: Sessions<DB>, plain: usize, keyed: Option<usize>) -> Batchers {
        let plain_slots = Arc::new(Semaphore::new(plain.max(1)));
        let keyed_slots = match keyed {
            Some(n) => Arc::new(Semaphore::new(n.max(1))),
            None => Arc::clone(&plain_slots),
        };
        let single_writer = keyed.is_none().then(|| Arc::clone(&plain_slots));
        let (plain, plain_rx) = mpsc::unbounded_channel();
        let (keyed, keyed_rx) = mpsc::unbounded_channel();
        let audits = AuditWriter::spawn(pool.clone());
        tokio::spawn(dispatch(plain_rx, plain_slots, pool.clone(), audits.clone(), false));
        tokio::spawn(dispatch(keyed_rx, keyed_slots, pool, audits, true));
        Batchers { plain, keyed, single_writer }
    }

    /// A turn at the single writer, for a long run of write transactions
    /// (a packet's chunks) on a backend with one writer: held for one
    /// transaction, queued fairly with the group insert's batches, so small
    /// senders get the lock between two chunks instead of polling for it
    /// (SQLite's busy handler sleeps up to 100 ms a try and can miss every
    /// gap). `None` (no wait) where writers run in parallel.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let slots = self.single_writer.as_ref()?;
        Arc::clone(slots).acquire_owned().await.ok()
    }

    /// Whether a request may use the group insert: one message with a small
    /// payload (packets and large bodies take the settle transaction).
    pub(crate) fn eligible(req: &crate::IngestRequest<'_>) -> bool {
        req.messages.len() == 1 && req.messages[0].payload.len() <= MAX_PAYLOAD
    }

    /// Queues `item`; returns it with what the group insert decided.
    pub(crate) async fn insert(&self, item: Queued) -> Result<(Queued, Verdict)> {
        let queue = if item.key.is_some() { &self.keyed } else { &self.plain };
        let (reply, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError(job)) = queue.send(Job { item, reply }) {
            // The dispatcher's runtime is gone (a store used from another
            // runtime): the settle transaction still works.
            return Ok((job.item, Verdict::Undecided));
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
async fn dispatch<DB: Backend>(
    mut rx: mpsc::UnboundedReceiver<Job>,
    slots: Arc<Semaphore>,
    pool: Sessions<DB>,
    audits: AuditWriter,
    keyed: bool,
) {
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
        let (pool, audits) = (pool.clone(), audits.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let (items, replies): (Vec<Queued>, Vec<_>) = jobs.into_iter().map(|j| (j.item, j.reply)).unzip();
            let refs: Vec<&Queued> = items.iter().collect();
            let verdicts = if keyed {
                keyed::with_keys(&pool, &audits, &refs).await
            } else {
                plain::without_keys(&pool, &audits, &refs).await
            };
            for ((item, verdict), reply) in items.into_iter().zip(verdicts).zip(replies) {
                let _ = reply.send((item, verdict));
            }
        });
    }
}

//! Group audit: the audit events of many group-insert batches (their
//! fingerprint duplicates and key repeats) appended in one statement.
//!
//! A duplicate or a repeated key is answered only once its audit event is
//! committed, so an admin sees every request the hub blocked. Each batch
//! used to write its events in a statement and a commit of its own after
//! its insert: under a load of repeats (make bench's S2, half of whose
//! requests are repeats) those were a third of all statements, most of
//! them one or two rows. The batches now hand their events to one writer,
//! which appends whatever is waiting as one multi-row insert, one
//! statement at a time: an event waits at most for the statement in
//! flight, and the busier the hub the more events share a commit. There is
//! no timer, as in the group insert itself.
//!
//! Nothing about the outcome changes. A batch still waits for its events'
//! commit before it answers; a statement that fails fails every batch in
//! it, whose duplicates and repeats then run their own ingest transaction
//! (which decides again and writes its event itself), as when a batch's own
//! audit insert failed. The writer takes no batch slot: on SQLite, whose
//! batches hold the one writer slot while they wait here, it takes the
//! database's write lock like any other writer.

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use crate::backend::Backend;
use crate::session::Sessions;
use crate::{NewAuditEvent, Result, StoreError};

/// Audit events, each with its time.
pub(super) type Events = Vec<(DateTime<Utc>, NewAuditEvent)>;

/// Rows per statement: the largest audit insert a batch writes on its own
/// (one event per row of a 64-row batch), so no statement size is prepared
/// that the group insert's statement cache does not already hold.
const MAX_ROWS: usize = super::MAX_ROWS;

/// One batch's events and where to say whether they were committed.
struct Append {
    events: Events,
    committed: oneshot::Sender<bool>,
}

/// The queue of the group audit writer. Cheap to clone; the writer ends
/// when the last clone is dropped.
#[derive(Clone)]
pub(crate) struct AuditWriter {
    queue: mpsc::UnboundedSender<Append>,
}

impl AuditWriter {
    /// Starts the writer on the current runtime, on connections of `pool`.
    pub(super) fn spawn<DB: Backend>(pool: Sessions<DB>) -> AuditWriter {
        let (queue, rx) = mpsc::unbounded_channel();
        tokio::spawn(write(rx, pool));
        AuditWriter { queue }
    }

    /// Appends `events`; returns once they are committed. An error means
    /// none of them was.
    pub(super) async fn append(&self, events: Events) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let (committed, answer) = oneshot::channel();
        self.queue
            .send(Append { events, committed })
            .map_err(|_| StoreError::Invariant("the group audit writer has ended".into()))?;
        match answer.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::Invariant("the group audit statement failed".into())),
            Err(_) => Err(StoreError::Invariant("the group audit writer ended without an answer".into())),
        }
    }
}

/// Takes the first waiting batch's events and those of the batches queued
/// behind it, up to [`MAX_ROWS`] rows (a batch is never split: a larger one
/// goes alone), and writes them in one statement; then the next.
async fn write<DB: Backend>(mut rx: mpsc::UnboundedReceiver<Append>, pool: Sessions<DB>) {
    while let Some(first) = rx.recv().await {
        let mut opening = Some(first);
        while let Some(head) = opening.take() {
            let mut events = head.events;
            let mut waiting = vec![head.committed];
            while events.len() < MAX_ROWS {
                let Ok(next) = rx.try_recv() else { break };
                if events.len() + next.events.len() > MAX_ROWS {
                    opening = Some(next);
                    break;
                }
                events.extend(next.events);
                waiting.push(next.committed);
            }
            let committed = insert::<DB>(&pool, &events).await;
            for batch in waiting {
                // A batch that stopped waiting (its runtime is ending) needs no answer.
                let _ = batch.send(committed);
            }
        }
    }
}

/// One autocommit insert of `events` (a transaction behind a pooler);
/// whether it committed.
async fn insert<DB: Backend>(pool: &Sessions<DB>, events: &[(DateTime<Utc>, NewAuditEvent)]) -> bool {
    let appended = async {
        let mut session = pool.session().await?;
        DB::insert_audits(&mut session, events).await?;
        session.done(()).await
    };
    match appended.await {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(error = %e, rows = events.len(), "group audit statement failed");
            false
        }
    }
}

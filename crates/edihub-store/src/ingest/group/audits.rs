//! Group audit: the audit events of many group-insert batches (their
//! fingerprint duplicates and key repeats) appended in one statement.
//!
//! A duplicate or a repeated key is answered only once its audit event is
//! committed, so an admin sees every request the hub blocked. A statement
//! and a commit per batch for its events would be, under a load of repeats,
//! a large share of all statements, most of them one or two rows; so the
//! batches hand their events to one writer, which appends whatever is
//! waiting as one multi-row insert, one statement at a time: an event waits at most for the statement in
//! flight, and the busier the hub the more events share a commit. There is
//! no timer, as in the group insert itself.
//!
//! Nothing about the outcome changes. A batch still waits for its events'
//! commit before it answers; a statement that fails fails every batch in
//! it, whose duplicates and repeats then run their own ingest transaction
//! (which decides again and writes its event itself). The writer takes no batch slot: on SQLite, whose
//! batches hold the one writer slot while they wait here, it takes the
//! database's write lock like any other writer.

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};

use crate::backend::Backend;
use crate::ingest::statements::IngestSql;
use crate::session::Sessions;
use crate::{NewAuditEvent, Result, StoreError};

/// Audit events, each with its time.
pub(super) type Events = Vec<(DateTime<Utc>, NewAuditEvent)>;

/// Rows per statement: the largest audit insert a batch wrote on its own
/// (one event per row of a full batch), so the group insert's connections,
/// whose statement caches are sized for every batch size, hold every size
/// of this statement too.
const MAX_ROWS: usize = super::queued::MAX_ROWS;

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
            .map_err(|_| StoreError::GroupAuditNotWritten("the writer has ended"))?;
        match answer.await {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::GroupAuditNotWritten("its statement failed")),
            Err(_) => Err(StoreError::GroupAuditNotWritten("the writer ended without an answer")),
        }
    }
}

/// Writes the waiting events, one statement at a time, until every
/// [`AuditWriter`] is dropped.
async fn write<DB: Backend>(mut rx: mpsc::UnboundedReceiver<Append>, pool: Sessions<DB>) {
    let mut held = None;
    loop {
        let head = match held.take() {
            Some(head) => head,
            None => match rx.recv().await {
                Some(head) => head,
                None => return,
            },
        };
        let (events, waiting, next) = gather(head, &mut rx);
        held = next;
        let committed = insert::<DB>(&pool, &events).await;
        for batch in waiting {
            // A batch that stopped waiting (its runtime is ending) needs no answer.
            let _ = batch.send(committed);
        }
    }
}

/// `head`'s events and those of the batches queued behind it, up to
/// [`MAX_ROWS`] rows, with where to answer each batch. A batch is never
/// split: the first one that does not fit is returned, to open the next
/// statement (a batch of more than [`MAX_ROWS`] goes alone).
fn gather(
    head: Append,
    rx: &mut mpsc::UnboundedReceiver<Append>,
) -> (Events, Vec<oneshot::Sender<bool>>, Option<Append>) {
    let mut events = head.events;
    let mut waiting = vec![head.committed];
    while events.len() < MAX_ROWS {
        let Ok(next) = rx.try_recv() else { break };
        if events.len() + next.events.len() > MAX_ROWS {
            return (events, waiting, Some(next));
        }
        events.extend(next.events);
        waiting.push(next.committed);
    }
    (events, waiting, None)
}

/// One autocommit insert of `events` (a transaction behind a pooler);
/// whether it committed.
async fn insert<DB: Backend>(pool: &Sessions<DB>, events: &[(DateTime<Utc>, NewAuditEvent)]) -> bool {
    let appended = async {
        let mut session = pool.session().await?;
        session.insert_audits(events).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of `n` events, tagged with `tag` as their action.
    fn batch(tag: &str, n: usize) -> (Append, oneshot::Receiver<bool>) {
        let event = NewAuditEvent { action: tag.to_owned(), ..Default::default() };
        let (committed, answer) = oneshot::channel();
        (Append { events: vec![(Utc::now(), event); n], committed }, answer)
    }

    fn actions(events: &Events) -> Vec<&str> {
        events.iter().map(|(_, e)| e.action.as_str()).collect()
    }

    #[test]
    fn gather_takes_whole_batches_up_to_max_rows_and_holds_the_first_that_does_not_fit() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (head, _) = batch("a", 30);
        for (tag, n) in [("b", 30), ("c", 10), ("d", 1)] {
            tx.send(batch(tag, n).0).unwrap();
        }
        let (events, waiting, held) = gather(head, &mut rx);
        assert_eq!(events.len(), 60, "a and b fit; c would pass {MAX_ROWS}");
        assert_eq!(waiting.len(), 2);
        assert_eq!(actions(&events).iter().filter(|a| **a == "b").count(), 30);
        let held = held.expect("c opens the next statement, unsplit");
        assert_eq!((held.events.len(), held.events[0].1.action.as_str()), (10, "c"));

        let (events, waiting, held) = gather(held, &mut rx);
        assert_eq!(actions(&events), [vec!["c"; 10], vec!["d"]].concat());
        assert_eq!(waiting.len(), 2);
        assert!(held.is_none());
    }

    #[test]
    fn gather_sends_a_full_batch_alone() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (head, _) = batch("full", MAX_ROWS);
        tx.send(batch("next", 1).0).unwrap();
        let (events, waiting, held) = gather(head, &mut rx);
        assert_eq!((events.len(), waiting.len()), (MAX_ROWS, 1));
        assert!(held.is_none(), "the next batch stays queued");
        assert_eq!(rx.try_recv().expect("still queued").events.len(), 1);
    }
}

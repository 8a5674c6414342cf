//! What the PostgreSQL and SQLite stores share beyond their statements:
//! recording a batch of delivery attempts when the batch's transaction
//! fails. Each backend's [`crate::Store`] implementation (`postgres/mod.rs`,
//! `sqlite/mod.rs`) calls it with its own transaction.

use super::model::{FinishedAttempt, Recorded};
use crate::Result;

/// Records `done` (see [`crate::Store::finish_deliveries`]) with
/// `finish_in_one`, which records a batch in one transaction: the whole
/// batch, or, if that fails, each attempt in one of its own.
pub(crate) async fn finish_each<'a, F, Fut>(
    done: &'a [FinishedAttempt],
    finish_in_one: F,
) -> Result<Vec<Recorded>>
where
    F: Fn(&'a [FinishedAttempt]) -> Fut,
    Fut: Future<Output = Result<Vec<Recorded>>>,
{
    match finish_in_one(done).await {
        Ok(recorded) => Ok(recorded),
        Err(e) if done.len() > 1 => {
            // One attempt the database refuses must not sink the others:
            // each is written on its own, in batch order.
            tracing::warn!(attempts = done.len(), error = %e,
                "delivery: recording a batch of attempts failed; recording them one by one");
            let mut recorded = Vec::with_capacity(done.len());
            for d in done {
                recorded.push(match finish_in_one(std::slice::from_ref(d)).await {
                    Ok(one) => one.into_iter().next().unwrap_or(Recorded::NotRecorded),
                    Err(e) => {
                        tracing::warn!(message_id = %d.message_id, destination = %d.destination_id,
                            error = %e, "delivery: recording an attempt failed; it is made again once its lease expires");
                        Recorded::NotRecorded
                    }
                });
            }
            Ok(recorded)
        }
        Err(e) => {
            tracing::warn!(error = %e, "delivery: recording an attempt failed; it is made again once its lease expires");
            Ok(vec![Recorded::NotRecorded; done.len()])
        }
    }
}

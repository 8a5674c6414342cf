//! Records finished attempts, those that end together in one transaction.
//!
//! An attempt's verdict is a few statements, and on PostgreSQL its commit is
//! a WAL flush: one transaction per attempt made recording cost more than
//! sending. Attempts hand their verdicts to the recorder and free their slot
//! at once (the delivery stays leased until its verdict is recorded, so no
//! claim can take it meanwhile); the recorder writes whatever has gathered
//! while the previous batch was being written, so batches grow with the load
//! and a lone attempt is written at once. A batch the database refuses is
//! written again one attempt per transaction (by the store), so one bad
//! attempt cannot take the others with it; an attempt still not written
//! loses nothing: its delivery is still leased, the lease expires, and the
//! attempt is made again (at least once, as always).
//!
//! The metrics count an attempt once it is in the attempt log, so
//! `edihub_delivery_attempts_total` never counts what the database does
//! not hold.

use std::sync::Arc;
use std::time::Duration;

use edihub_store::{FinishedAttempt, Verdict};
use tokio::sync::{Notify, mpsc};

use crate::metrics::Metrics;
use crate::state::AppState;

/// Most verdicts in one transaction.
pub const MAX_BATCH: usize = 256;

/// Where attempts send their verdicts.
pub type Verdicts = mpsc::UnboundedSender<FinishedAttempt>;

/// Writes the verdicts arriving on `incoming` until every sender is gone,
/// counting each one written in `metrics` and waking `wake` after each
/// batch (a `fifo` destination's next delivery can be claimed only once
/// its head is recorded).
pub async fn run(state: AppState, mut incoming: mpsc::UnboundedReceiver<FinishedAttempt>, wake: Arc<Notify>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while incoming.recv_many(&mut batch, MAX_BATCH).await > 0 {
        match state.store.finish_deliveries(&batch).await {
            Ok(recorded) => {
                for (done, _) in batch.iter().zip(recorded).filter(|(_, r)| r.logged()) {
                    count(&state.metrics, done);
                }
            }
            // The deliveries stay leased; when the leases expire they are attempted again.
            Err(e) => {
                tracing::warn!(attempts = batch.len(), error = %e, "delivery: recording attempts failed")
            }
        }
        batch.clear();
        wake.notify_one();
    }
}

/// Counts a recorded attempt by its destination and outcome.
fn count(metrics: &Metrics, done: &FinishedAttempt) {
    let outcome = match done.verdict {
        Verdict::Delivered => "delivered",
        Verdict::RetryAt(_) => "retry",
        Verdict::Failed => "failed",
    };
    let took = Duration::from_millis(u64::try_from(done.attempt.latency_ms).unwrap_or(0));
    metrics.delivery_attempt(&done.destination_id, outcome, took);
}

//! Records finished attempts, those that end together in one transaction.
//!
//! An attempt's verdict is a few statements, and on PostgreSQL its commit is
//! a WAL flush: one transaction per attempt made recording cost more than
//! sending. Attempts hand their verdicts to the recorder and free their slot
//! at once (the delivery stays leased until its verdict is recorded, so no
//! claim can take it meanwhile); the recorder writes whatever has gathered
//! while the previous batch was being written, so batches grow with the load
//! and a lone attempt is written at once. A batch that fails to commit loses
//! nothing: its deliveries are still leased, the leases expire, and the
//! attempts are made again (at least once, as always).

use std::sync::Arc;

use edihub_store::{FinishedAttempt, Store};
use tokio::sync::{Notify, mpsc};

/// Most verdicts in one transaction.
pub const MAX_BATCH: usize = 256;

/// Where attempts send their verdicts.
pub type Verdicts = mpsc::UnboundedSender<FinishedAttempt>;

/// Writes the verdicts arriving on `incoming` until every sender is gone,
/// waking `wake` after each batch (a `fifo` destination's next delivery can
/// be claimed only once its head is recorded).
pub async fn run(
    store: Arc<dyn Store>,
    mut incoming: mpsc::UnboundedReceiver<FinishedAttempt>,
    wake: Arc<Notify>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while incoming.recv_many(&mut batch, MAX_BATCH).await > 0 {
        if let Err(e) = store.finish_deliveries(&batch).await {
            // The deliveries stay leased; when the leases expire they are attempted again.
            tracing::warn!(attempts = batch.len(), error = %e, "delivery: recording attempts failed");
        }
        batch.clear();
        wake.notify_one();
    }
}

//! Which claim the worker makes for a destination, and what it keeps
//! between claims.
//!
//! On partitioned PostgreSQL the claim over the whole queue plans and
//! locks every partition of `deliveries` (90 of them after three months),
//! which made it most of PostgreSQL's cost per delivery. Nearly every due
//! delivery belongs to a message stored in the last day: a new message,
//! or the early retries of one. So between two polls the worker claims
//! among the messages of the last [`RECENT`] only
//! (`Store::claim_recent_deliveries`, which reads those days' partitions),
//! and at each poll (`delivery.poll_interval_ms`) it claims over the whole
//! queue: a delivery of an older message (a late retry, a replay) waits at
//! most one poll interval longer than it would have. A full claim that
//! finds such deliveries keeps the destination on full claims until one
//! finds none, so an old backlog drains at full speed too.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use edihub_store::{ClaimedDelivery, Store, StoreError};
use tokio::sync::Semaphore;

use crate::config::DestinationConfig;

/// How far back the claim between two polls looks (the store rounds it
/// down to the start of a UTC day).
pub const RECENT: chrono::Duration = chrono::Duration::days(1);

/// One destination's state in this process.
pub(super) struct Lane {
    /// Its free attempt slots.
    pub slots: Arc<Semaphore>,
    /// Whether its last full claim leased deliveries of messages older than
    /// [`RECENT`]: then every claim covers the whole queue until one finds
    /// none.
    old_backlog: bool,
}

impl Lane {
    /// A destination with `slots` attempts at once.
    pub fn new(slots: usize) -> Lane {
        Lane { slots: Arc::new(Semaphore::new(slots)), old_backlog: false }
    }

    /// Leases up to `free` due deliveries of `destination` for `lease`: the
    /// head of its line if it is `fifo`; else over the whole queue at a
    /// poll (`listing`) or while an old backlog lasts, and among recent
    /// messages otherwise.
    pub async fn lease(
        &mut self,
        store: &dyn Store,
        destination: &DestinationConfig,
        free: usize,
        listing: bool,
        lease: Duration,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let id = &destination.id;
        let now = Utc::now();
        let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
        let limit = i64::try_from(free).unwrap_or(1);
        let since = now - RECENT;
        if destination.ordering == "fifo" {
            // The head of the line or nothing: the store keeps it to one in
            // flight across replicas, whatever this process's slots.
            return Ok(store.claim_line_head(id, now, until).await?.into_iter().collect());
        }
        if !listing && !self.old_backlog {
            return store.claim_recent_deliveries(id, since, now, until, limit).await;
        }
        let claimed = store.claim_deliveries(id, now, until, limit).await?;
        self.old_backlog = claimed.iter().any(|d| d.created_at < since);
        Ok(claimed)
    }
}

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
//!
//! A destination whose deliveries the intake leases at the insert (see
//! `handoff.rs`) has few left for a claim to find, and a claim that finds
//! nothing still reads the queue's index. So between two polls it claims
//! only what its lane counts as waiting: deliveries of it stored without
//! their lease since its last claim (the intake counts them and wakes the
//! loop), and as many again when that claim filled every slot it asked
//! for (more may be due). Such a claim takes only that many slots, so it
//! leaves the others to the intake.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use edihub_store::{ClaimedDelivery, Store, StoreError};
use tokio::sync::Semaphore;

use crate::config::{DeliveryOrdering, DestinationConfig};

/// How far back the claim between two polls looks (the store rounds it
/// down to the start of a UTC day).
pub const RECENT: chrono::Duration = chrono::Duration::days(1);

/// One destination's state in this process.
pub(super) struct Lane {
    /// Its free attempt slots.
    pub slots: Arc<Semaphore>,
    /// How many slots it was given.
    cap: usize,
    /// Whether its last full claim leased deliveries of messages older than
    /// [`RECENT`]: then every claim covers the whole queue until one finds
    /// none.
    old_backlog: bool,
    /// Deliveries a claim between polls may find: stored without their
    /// lease (the intake adds them), or as many as the last claim filled
    /// (more may be due); taken by each claim. Read only for destinations
    /// leased at the insert.
    pub unleased: Arc<AtomicUsize>,
}

impl Lane {
    /// A destination with `slots` attempts at once.
    pub fn new(slots: usize) -> Lane {
        let unleased = Arc::new(AtomicUsize::new(0));
        Lane { slots: Arc::new(Semaphore::new(slots)), cap: slots, old_backlog: false, unleased }
    }

    /// Gives the lane `cap` slots when an admin changed the destination's
    /// limit: new slots from now on, while the attempts running on the old
    /// ones finish (for as long as those take, both count).
    pub fn resize(&mut self, cap: usize) {
        if cap != self.cap {
            self.slots = Arc::new(Semaphore::new(cap));
            self.cap = cap;
        }
    }

    /// How many slots a claim takes now, of `free` (`0`: no claim). At a
    /// poll (`listing`) all of them, and a `fifo` destination's one; else
    /// a destination waits for half its slots, so one claim serves several
    /// attempts, and then one leased at the insert without an old backlog
    /// takes as many as its lane counts waiting, and none when it counts
    /// none.
    pub fn claim_size(&self, free: usize, listing: bool, fifo: bool, leased_at_insert: bool) -> usize {
        if listing || fifo {
            return free;
        }
        if free < self.cap.div_ceil(2) {
            return 0;
        }
        if leased_at_insert && !self.old_backlog {
            return self.unleased.load(Ordering::Acquire).min(free);
        }
        free
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
        if destination.ordering == DeliveryOrdering::Fifo {
            // The head of the line or nothing: the store keeps it to one in
            // flight across replicas, whatever this process's slots.
            return Ok(store.claim_line_head(id, now, until).await?.into_iter().collect());
        }
        // Taken before the claim reads the queue: what is stored after this
        // is counted again, what was stored before, the claim sees.
        self.unleased.store(0, Ordering::Release);
        let claimed = if !listing && !self.old_backlog {
            store.claim_recent_deliveries(id, since, now, until, limit).await?
        } else {
            let claimed = store.claim_deliveries(id, now, until, limit).await?;
            self.old_backlog = claimed.iter().any(|d| d.created_at < since);
            claimed
        };
        if claimed.len() >= free {
            self.unleased.fetch_add(free, Ordering::AcqRel);
        }
        Ok(claimed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use edihub_store::conformance::{id_at, ingest_at, message, outcome_id, processed};
    use edihub_store::testing::{Backend, TestDb};
    use edihub_store::{Json, NewMessage, SOURCE_CONFIG, Scope};
    use uuid::Uuid;

    /// Stores a message received `days` ago in `scope`; returns its id.
    async fn stored(store: &Arc<dyn Store>, scope: &Scope, days: i64, fingerprint: &str) -> Uuid {
        let at = Utc::now() - chrono::Duration::days(days);
        let m = NewMessage { id: id_at(at), ..message(Some(fingerprint)) };
        outcome_id(&processed(ingest_at(store, scope, None, vec![m], at).await)[0])
    }

    /// A lane waits for half its slots, and a leasing one then claims what
    /// it counts as waiting; a poll takes every free slot.
    #[test]
    fn a_claim_takes_the_slots_it_can_fill() {
        let lane = Lane::new(64);
        assert_eq!(lane.claim_size(64, false, false, true), 0, "nothing waiting: no claim");
        lane.unleased.store(3, Ordering::Release);
        assert_eq!(lane.claim_size(40, false, false, true), 3, "as many as it counts waiting");
        assert_eq!(lane.claim_size(31, false, false, true), 0, "once half its slots are free");
        lane.unleased.store(100, Ordering::Release);
        assert_eq!(lane.claim_size(40, false, false, true), 40, "at most the free ones");
        assert_eq!(lane.claim_size(10, true, false, true), 10, "a poll takes every free slot");
        assert_eq!(lane.claim_size(1, false, true, false), 1, "a fifo line's head");
        assert_eq!(lane.claim_size(31, false, false, false), 0, "another lane waits for half its slots");
        assert_eq!(lane.claim_size(40, false, false, false), 40);
    }

    /// Between polls a lane claims among recent messages; a poll's claim
    /// takes old ones too, and then the lane keeps claiming over the whole
    /// queue until a claim finds no old delivery.
    #[tokio::test]
    async fn old_deliveries_wait_for_a_poll_then_drain_with_full_claims() {
        let db = TestDb::new(Backend::Sqlite).await;
        let store = db.store().await;
        let scope = edihub_store::conformance::fresh_scope();
        let def: DestinationConfig = serde_json::from_value(serde_json::json!({
            "id": "lane", "tenant": scope.tenant_id, "environment": scope.environment_id,
            "url": "http://127.0.0.1:9/",
        }))
        .expect("destination");
        let row = edihub_store::DestinationRow {
            id: def.id.clone(),
            tenant_id: def.tenant.clone(),
            environment_id: def.environment.clone(),
            message_types: None,
            enabled: true,
            definition: Json(serde_json::to_value(&def).expect("definition")),
            source: SOURCE_CONFIG.into(),
            updated_at: Utc::now(),
        };
        store.seed_destinations(&[row]).await.expect("seed");
        let old = stored(&store, &scope, 3, "old-1").await;
        let new = stored(&store, &scope, 0, "new-1").await;
        let lease = Duration::from_secs(60);
        let ids = |c: Vec<ClaimedDelivery>| c.into_iter().map(|d| d.message_id).collect::<Vec<_>>();
        let mut lane = Lane::new(16);

        let between = lane.lease(store.as_ref(), &def, 16, false, lease).await.expect("claim");
        assert_eq!(ids(between), [new], "between polls: the recent message only");
        let poll = lane.lease(store.as_ref(), &def, 16, true, lease).await.expect("claim");
        assert_eq!(ids(poll), [old], "a poll takes the old one");
        let older = stored(&store, &scope, 2, "old-2").await;
        let backlog = lane.lease(store.as_ref(), &def, 16, false, lease).await.expect("claim");
        assert_eq!(ids(backlog), [older], "after old ones, the next claim covers the whole queue");
        let none = lane.lease(store.as_ref(), &def, 16, false, lease).await.expect("claim");
        assert!(none.is_empty(), "nothing due");
        let later = stored(&store, &scope, 2, "old-3").await;
        let recent = lane.lease(store.as_ref(), &def, 16, false, lease).await.expect("claim");
        assert!(recent.is_empty(), "a claim that found no old delivery ended the backlog");
        let poll = lane.lease(store.as_ref(), &def, 16, true, lease).await.expect("claim");
        assert_eq!(ids(poll), [later], "the next poll takes it");
        store.close().await;
    }
}

//! The deliveries the intake leases at the insert (see the parent
//! module's "Leased at the insert"): which destinations lease, the slots a
//! request takes for them before its insert, the count of deliveries
//! waiting for a destination's claim, and the hand-over of what the insert
//! leased to the worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use edihub_store::{ClaimedDelivery, InsertLease, Scope};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use super::{Handed, Handoff};

/// A destination whose deliveries the intake leases at the insert, as the
/// worker sees it.
#[derive(Debug, Clone)]
pub(crate) struct LeaseLane {
    /// The destination's id.
    pub destination: String,
    /// Its tenant.
    pub tenant: String,
    /// Its environment.
    pub environment: String,
    /// The message types it takes (`None`: every type).
    pub message_types: Option<Vec<String>>,
    /// How long a lease lasts: its attempt's timeout and the lease margin.
    pub lease: Duration,
    /// Its free attempt slots in this process (the worker's lane).
    pub slots: Arc<Semaphore>,
    /// Deliveries of it that may have been stored without their lease:
    /// the worker's next claim between polls looks for them.
    pub unleased: Arc<AtomicUsize>,
    /// Wakes the worker's loop, to claim what waits.
    pub wake: Arc<Notify>,
}

/// A delivery the insert leased, on its way to the worker with what its
/// first attempt sends and the slot it runs in.
#[derive(Debug)]
pub(crate) struct Started {
    /// The delivery, as the insert leased it.
    pub delivery: ClaimedDelivery,
    /// Its message's envelope.
    pub handed: Handed,
    /// Its attempt slot, taken before the insert.
    pub permit: OwnedSemaphorePermit,
}

/// The attempt slots a request took for the deliveries it asks the insert
/// to lease ([`Handoff::reserve`]).
#[derive(Debug)]
pub struct Reservation {
    /// The leases asked of the insert.
    pub lease: InsertLease,
    permits: Vec<(String, OwnedSemaphorePermit)>,
}

impl Handoff {
    /// Takes a free attempt slot of each leasing destination of `scope`
    /// that takes `message_type` and has more slots free than deliveries
    /// waiting for a claim, for the insert of a message whose envelope is
    /// handed over to lease its deliveries; `None` when there is none
    /// (then every delivery is claimed).
    pub fn reserve(&self, scope: &Scope, message_type: &str) -> Option<Reservation> {
        let wanted = self.wanted();
        if wanted.started.as_ref().is_none_or(mpsc::UnboundedSender::is_closed) {
            return None;
        }
        let now = chrono::Utc::now();
        let mut reservation = Reservation { lease: InsertLease::default(), permits: Vec::new() };
        for lane in wanted
            .lanes
            .iter()
            .filter(|l| l.tenant == scope.tenant_id && l.environment == scope.environment_id)
        {
            if lane.message_types.as_ref().is_some_and(|types| !types.iter().any(|t| t == message_type)) {
                continue;
            }
            // The slots the deliveries waiting for a claim need are theirs:
            // a destination with no more free than that leases nothing new,
            // and its new deliveries wait behind the others, oldest first.
            // Leasing them would give each freed slot to the newest message
            // and none to a claim.
            if lane.slots.available_permits() <= lane.unleased.load(Ordering::Acquire) {
                continue;
            }
            let Ok(permit) = lane.slots.clone().try_acquire_owned() else { continue };
            let until = now + chrono::Duration::from_std(lane.lease).unwrap_or_default();
            reservation.lease.to.push((lane.destination.clone(), until));
            reservation.permits.push((lane.destination.clone(), permit));
        }
        (!reservation.permits.is_empty()).then_some(reservation)
    }

    /// Notes that `stored` messages were stored in `scope` and that of
    /// their deliveries the insert leased `leased`: each leasing
    /// destination of `scope` counts the rest as waiting for a claim, and
    /// the worker is woken to make it. Every intake calls it for what it
    /// stored.
    pub fn stored(&self, scope: &Scope, stored: usize, leased: &[ClaimedDelivery]) {
        for lane in &self.wanted().lanes {
            if lane.tenant != scope.tenant_id || lane.environment != scope.environment_id {
                continue;
            }
            let waiting =
                stored.saturating_sub(leased.iter().filter(|d| d.destination_id == lane.destination).count());
            // The first one waiting wakes the worker; the others find it awake.
            if waiting > 0 && lane.unleased.fetch_add(waiting, Ordering::AcqRel) == 0 {
                lane.wake.notify_one();
            }
        }
    }

    /// Sends each of `leased` with its slot and `handed` to the worker;
    /// returns the destinations sent. A delivery the worker does not take
    /// (it ended) keeps its lease until it expires, and is claimed then.
    pub(super) fn start(
        &self,
        handed: &Handed,
        reservation: Option<Reservation>,
        leased: &[ClaimedDelivery],
    ) -> Vec<String> {
        let Some(mut reservation) = reservation else { return Vec::new() };
        let wanted = self.wanted();
        let Some(worker) = wanted.started.as_ref() else { return Vec::new() };
        let mut sent = Vec::new();
        for delivery in leased {
            let Some(at) = reservation.permits.iter().position(|(d, _)| *d == delivery.destination_id) else {
                continue;
            };
            let (destination, permit) = reservation.permits.swap_remove(at);
            let started = Started { delivery: delivery.clone(), handed: handed.clone(), permit };
            if worker.send(started).is_ok() {
                sent.push(destination);
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(destination: &str, environment: &str, types: Option<&[&str]>, slots: usize) -> LeaseLane {
        LeaseLane {
            destination: destination.into(),
            tenant: "acme".into(),
            environment: environment.into(),
            message_types: types.map(|t| t.iter().map(|s| s.to_string()).collect()),
            lease: Duration::from_secs(60),
            slots: Arc::new(Semaphore::new(slots)),
            unleased: Arc::new(AtomicUsize::new(0)),
            wake: Arc::new(Notify::new()),
        }
    }

    /// acme/prod's `all` (every type, `all_slots` slots) and `invoices`
    /// (INVOIC02, 4 slots), and acme/test's `test` (4 slots).
    fn three_lanes(all_slots: usize) -> [LeaseLane; 3] {
        [
            lane("all", "prod", None, all_slots),
            lane("invoices", "prod", Some(&["INVOIC02"]), 4),
            lane("test", "test", None, 4),
        ]
    }

    fn leased(destination: &str) -> ClaimedDelivery {
        let now = chrono::Utc::now();
        ClaimedDelivery {
            message_id: uuid::Uuid::now_v7(),
            destination_id: destination.into(),
            attempts: 0,
            lease_until: now,
            created_at: now,
        }
    }

    #[test]
    fn a_reservation_takes_a_free_slot_of_each_destination_that_takes_the_message() {
        let handoff = Handoff::new(1024 * 1024);
        let [all, invoices, test] = three_lanes(1);
        let busy = lane("busy", "prod", None, 8);
        let held: Vec<_> = (0..5).map(|_| busy.slots.clone().try_acquire_owned().expect("a slot")).collect();
        busy.unleased.store(3, Ordering::Release);
        let (started, worker) = mpsc::unbounded_channel();
        handoff.want(Vec::new(), vec![all.clone(), invoices.clone(), test.clone(), busy.clone()], started);
        let scope = Scope::new("acme", "prod");
        let reservation = handoff.reserve(&scope, "ORDERS05").expect("a free slot");
        let asked: Vec<&str> = reservation.lease.to.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(asked, ["all"], "a destination of the environment that takes the type and is not busy");
        assert_eq!(
            busy.slots.available_permits(),
            3,
            "one whose 3 free slots its 3 waiting need is left to its claims"
        );
        assert_eq!(all.slots.available_permits(), 0, "its slot is taken");
        assert_eq!((invoices.slots.available_permits(), test.slots.available_permits()), (4, 4));
        assert!(handoff.reserve(&scope, "ORDERS05").is_none(), "no free slot left: nothing leased");
        drop(reservation);
        assert_eq!(all.slots.available_permits(), 1, "a slot the insert did not use is given back");
        drop(held);
        drop(worker);
        assert!(handoff.reserve(&scope, "ORDERS05").is_none(), "with the worker gone nothing is leased");
    }

    #[test]
    fn what_is_stored_without_its_lease_is_counted_for_a_claim() {
        let handoff = Handoff::new(1024 * 1024);
        let [all, invoices, test] = three_lanes(4);
        let (started, _worker) = mpsc::unbounded_channel();
        handoff.want(Vec::new(), vec![all.clone(), invoices.clone(), test.clone()], started);
        handoff.stored(&Scope::new("acme", "prod"), 2, &[leased("all")]);
        let waiting = |l: &LeaseLane| l.unleased.load(Ordering::Acquire);
        assert_eq!(waiting(&all), 1, "one of its two was leased");
        assert_eq!(waiting(&invoices), 2, "the others of the environment may have both to claim");
        assert_eq!(waiting(&test), 0, "another environment's count nothing");
        handoff.stop_leasing();
        handoff.stored(&Scope::new("acme", "test"), 1, &[]);
        assert_eq!(waiting(&test), 0, "once the worker ends, nothing is counted");
    }
}

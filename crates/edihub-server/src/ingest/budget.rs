//! Budgets of body bytes being processed at once, and each client
//! address's share of one.
//!
//! A body over 64 KiB waits for room in its budget before it is read (see
//! `body`), so many large uploads at once queue instead of exhausting
//! memory. Authenticated senders have `max_inflight_body_bytes`. Webhook
//! bodies have `max_inflight_webhook_body_bytes` apart: their sender is
//! unknown until the signature over the whole body is checked, so anyone
//! can send one. There, each client address may hold at most
//! `max_inflight_webhook_body_bytes_per_address`, and a body takes at most
//! that much of the whole budget: clients trickling large bodies from one
//! address wait behind each other for that address's share, and never
//! queue in the whole budget ahead of another client's webhook (its
//! semaphore serves waiters in order, so one large waiter would hold up
//! every smaller one behind it). How long a share is held is bounded by
//! the minimum rate of body reads (`body`).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bodies up to this size are not counted against a [`BodyBudget`]:
/// their total is already bounded by the connection limit, and a burst of
/// small messages must never queue behind one large IDoc.
const UNCOUNTED_BODY: usize = 64 * 1024;

/// A request's share of a [`BodyBudget`], held until the response is built
/// and released on drop.
#[derive(Debug)]
#[must_use = "the share is released when the permit is dropped"]
pub struct BodyPermit {
    _held: Option<OwnedSemaphorePermit>,
    _share: Option<AddressPermit>,
}

/// A budget of body bytes being processed at once, in KiB permits, and
/// optionally each client address's share of it (see the module docs).
#[derive(Debug)]
pub struct BodyBudget {
    permits: Arc<Semaphore>,
    total_kib: usize,
    shares: Option<Arc<Shares>>,
}

/// The share of each client address: a semaphore per address that holds
/// or waits for a part of the budget, dropped with its last permit.
#[derive(Debug)]
struct Shares {
    kib: usize,
    open: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

/// A body's part of its address's share.
#[derive(Debug)]
struct AddressPermit {
    shares: Arc<Shares>,
    addr: IpAddr,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for AddressPermit {
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut open = self.shares.open.lock().unwrap_or_else(|p| p.into_inner());
        // The map's own reference is the last one: nobody holds or waits
        // for this address's share any more.
        if open.get(&self.addr).is_some_and(|s| Arc::strong_count(s) == 1) {
            open.remove(&self.addr);
        }
    }
}

/// The address a client is counted under: an IPv4 client on a dual-stack
/// listener (`::ffff:a.b.c.d`) is the IPv4 one; a request without a known
/// peer (served without a socket) counts as one unknown address.
fn address(peer: Option<IpAddr>) -> IpAddr {
    match peer {
        Some(IpAddr::V6(v6)) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        Some(v4) => v4,
        None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    }
}

/// `kib` permits of `semaphore` (never closed, so acquiring only fails if
/// it were).
async fn acquire(semaphore: &Arc<Semaphore>, kib: usize) -> Option<OwnedSemaphorePermit> {
    let kib = u32::try_from(kib).unwrap_or(u32::MAX);
    Arc::clone(semaphore).acquire_many_owned(kib).await.ok()
}

impl Shares {
    /// Waits until `kib` fit in `addr`'s share.
    async fn admit(self: &Arc<Self>, addr: IpAddr, kib: usize) -> AddressPermit {
        let semaphore = {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(open.entry(addr).or_insert_with(|| Arc::new(Semaphore::new(self.kib))))
        };
        let permit = acquire(&semaphore, kib).await;
        // The permit keeps the semaphore alive; this reference goes, so the
        // count the drop reads is the map's and the permits'.
        drop(semaphore);
        AddressPermit { shares: Arc::clone(self), addr, permit }
    }
}

impl BodyBudget {
    /// A budget of `bytes`, without shares per address.
    pub fn new(bytes: usize) -> Self {
        let total_kib = bytes.div_ceil(1024).max(1);
        Self { permits: Arc::new(Semaphore::new(total_kib)), total_kib, shares: None }
    }

    /// A budget of `bytes` of which one client address holds at most
    /// `per_address` bytes at once.
    pub fn shared_per_address(bytes: usize, per_address: usize) -> Self {
        let mut budget = Self::new(bytes);
        let kib = per_address.div_ceil(1024).clamp(1, budget.total_kib);
        budget.shares = Some(Arc::new(Shares { kib, open: Mutex::new(HashMap::new()) }));
        budget
    }

    /// Waits until a body of `len` bytes from `peer` fits. A body larger
    /// than the whole budget (or than an address's share) takes all of it,
    /// i.e. it is processed alone (among its address's bodies).
    pub(super) async fn admit(&self, len: usize, peer: Option<IpAddr>) -> BodyPermit {
        if len <= UNCOUNTED_BODY {
            return BodyPermit { _held: None, _share: None };
        }
        let mut kib = len.div_ceil(1024).min(self.total_kib);
        let share = match &self.shares {
            Some(shares) => {
                kib = kib.min(shares.kib);
                Some(shares.admit(address(peer), kib).await)
            }
            None => None,
        };
        BodyPermit { _held: acquire(&self.permits, kib).await, _share: share }
    }

    /// Client addresses holding or waiting for a share (for tests).
    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.shares.as_ref().map_or(0, |s| s.open.lock().unwrap_or_else(|p| p.into_inner()).len())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const KIB: usize = 1024;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    /// Whether `admit` completes within 100 ms.
    async fn admitted_now(budget: &BodyBudget, len: usize, peer: Option<IpAddr>) -> Option<BodyPermit> {
        tokio::time::timeout(Duration::from_millis(100), budget.admit(len, peer)).await.ok()
    }

    #[tokio::test]
    async fn one_address_cannot_take_more_than_its_share() {
        let budget = BodyBudget::shared_per_address(4096 * KIB, 1024 * KIB);
        // Two 2 MB bodies from one address: the first takes the address's
        // share (and that much of the budget), the second waits for it.
        let first = admitted_now(&budget, 2_100_000, ip("10.0.0.1")).await.expect("first");
        assert!(admitted_now(&budget, 2_100_000, ip("10.0.0.1")).await.is_none(), "the second waits");
        assert!(admitted_now(&budget, 200 * KIB, ip("::ffff:10.0.0.1")).await.is_none(), "the same address");
        // Other addresses fit beside it, up to the whole budget.
        let b = admitted_now(&budget, 2_100_000, ip("10.0.0.2")).await.expect("another address");
        let c = admitted_now(&budget, 1024 * KIB, ip("10.0.0.3")).await.expect("a third");
        let d = admitted_now(&budget, 200 * KIB, ip("10.0.0.4")).await.expect("a fourth");
        assert!(admitted_now(&budget, 1000 * KIB, ip("10.0.0.5")).await.is_none(), "the budget is full");
        drop((b, c, d));
        // Small bodies are not counted at all.
        assert!(admitted_now(&budget, 64 * KIB, ip("10.0.0.1")).await.is_some());
        drop(first);
        assert!(admitted_now(&budget, 2_100_000, ip("10.0.0.1")).await.is_some(), "the share is free again");
        assert_eq!(budget.addresses(), 0, "addresses without bodies are forgotten");
    }

    #[tokio::test]
    async fn without_shares_a_body_takes_up_to_the_whole_budget() {
        let budget = BodyBudget::new(1024 * KIB);
        let all = admitted_now(&budget, 5_000_000, ip("10.0.0.1")).await.expect("alone");
        assert!(admitted_now(&budget, 100 * KIB, ip("10.0.0.2")).await.is_none(), "processed alone");
        drop(all);
        assert!(admitted_now(&budget, 100 * KIB, None).await.is_some());
    }
}

//! Deliveries leased at their message's insert ([`crate::InsertLease`]):
//! the insert leases the deliveries it creates that the caller names, and
//! no others; no claim takes them while the lease holds; the caller's
//! verdict under that lease is recorded; and a lease that ends without a
//! verdict (the caller died between the insert and the attempt) leaves the
//! delivery claimable as any other. Duplicates and keyed requests lease
//! nothing.

use chrono::{DateTime, Duration, Utc};

use super::outbox::{attempt, seed_mixed};
use super::support::*;
use crate::{FinishedAttempt, InsertLease, Recorded, Verdict};

/// One message of `scope` at `at`, its deliveries to `to` asked to be
/// leased until `until`.
async fn ingest_leased(
    store: &StoreRef,
    scope: &Scope,
    key: Option<KeyClaim>,
    m: NewMessage,
    at: DateTime<Utc>,
    to: &[&str],
    until: DateTime<Utc>,
) -> Answer {
    let lease = InsertLease { to: to.iter().map(|d| (d.to_string(), until)).collect() };
    let req = IngestRequest { scope, key, messages: vec![m], now: at, envelope: None, lease: Some(lease) };
    match store.ingest(req).await.expect("ingest") {
        IngestOutcome::Processed(answer) => answer,
        other => panic!("expected Processed, got {other:?}"),
    }
}

/// The insert leases the named deliveries it writes: not one of a
/// destination the message does not go to, not the others of its
/// message; a claim passes them over until the lease ends, and the
/// caller's verdict under the lease is applied.
pub async fn deliveries_leased_at_the_insert(store: StoreRef) {
    let scope = fresh_scope();
    let tag = scope.tenant_id.clone();
    let all = seed_mixed(&store, &scope, &tag).await;
    let (orders, other_type, off) =
        (format!("{tag}-orders"), format!("{tag}-other-type"), format!("{tag}-off"));
    let at = now();
    let until = at + Duration::seconds(40);
    let asked = [all.as_str(), other_type.as_str(), off.as_str(), "nowhere"];
    let answer = ingest_leased(&store, &scope, None, message(Some("il-1")), at, &asked, until).await;
    let id = outcome_id(&answer.outcomes[0]);
    assert_eq!(answer.leased.len(), 1, "only a delivery the insert wrote is leased: {:?}", answer.leased);
    let leased = &answer.leased[0];
    assert_eq!((leased.message_id, leased.destination_id.as_str(), leased.attempts), (id, all.as_str(), 0));
    assert!((leased.lease_until - until).abs() < Duration::milliseconds(1), "{}", leased.lease_until);
    assert!((leased.created_at - at).abs() < Duration::milliseconds(1), "{}", leased.created_at);

    let reports = store.deliveries_of(id).await.unwrap();
    let lease_of =
        |d: &str| reports.iter().find(|r| r.delivery.destination_id == d).map(|r| r.delivery.lease_until);
    assert_eq!(lease_of(&all), Some(Some(leased.lease_until)), "the lease is stored as answered");
    assert_eq!(lease_of(&orders), Some(None), "a delivery not named is not leased");
    let claim = |d: String| {
        let store = store.clone();
        async move { store.claim_deliveries(&d, at, at + Duration::seconds(30), 10).await.unwrap() }
    };
    assert!(claim(all.clone()).await.is_empty(), "a leased delivery is not claimed");
    assert_eq!(claim(orders.clone()).await.len(), 1, "the other is claimed as ever");

    let done = FinishedAttempt {
        message_id: id,
        destination_id: all.clone(),
        attempt: attempt(Some(200), None),
        verdict: Verdict::Delivered,
        lease_until: leased.lease_until,
        sap_status: false,
    };
    assert_eq!(store.finish_delivery(&done).await.unwrap(), Recorded::Applied, "the caller's verdict counts");
    let report =
        store.deliveries_of(id).await.unwrap().into_iter().find(|r| r.delivery.destination_id == all);
    let report = report.expect("delivery");
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("delivered", 1));
}

/// A lease written at the insert that ends without a verdict leaves its
/// delivery to the next claim, as a first attempt; a duplicate and a keyed
/// request lease nothing (their deliveries, if any, are claimed).
pub async fn an_insert_lease_that_ends_leaves_the_delivery_to_a_claim(store: StoreRef) {
    let scope = fresh_scope();
    let all = seed_mixed(&store, &scope, &scope.tenant_id).await;
    let at = now();
    let until = at + Duration::seconds(40);
    let first = ingest_leased(&store, &scope, None, message(Some("il-2")), at, &[&all], until).await;
    assert_eq!(first.leased.len(), 1);
    let id = outcome_id(&first.outcomes[0]);
    let repeat = ingest_leased(&store, &scope, None, message(Some("il-2")), at, &[&all], until).await;
    assert!(matches!(repeat.outcomes[0], MessageOutcome::Duplicate { .. }));
    assert!(repeat.leased.is_empty(), "a duplicate leases nothing");
    let key = Some(key("il-k", "sha-il-k"));
    let keyed = ingest_leased(&store, &scope, key, message(Some("il-3")), at, &[&all], until).await;
    assert!(keyed.leased.is_empty(), "a keyed request leases nothing");
    let keyed_id = outcome_id(&keyed.outcomes[0]);

    let before = store.claim_deliveries(&all, at, at + Duration::minutes(5), 10).await.unwrap();
    let ids: Vec<_> = before.iter().map(|d| d.message_id).collect();
    assert_eq!(ids, [keyed_id], "only the keyed request's delivery is claimable while the lease holds");
    let after = store.claim_deliveries(&all, until, until + Duration::seconds(30), 10).await.unwrap();
    let taken: Vec<_> = after.iter().map(|d| (d.message_id, d.attempts)).collect();
    assert_eq!(taken, [(id, 0)], "once the lease ends, a claim takes it as a first attempt");
}

//! A destination moved to another tenant or environment, by an admin or by
//! the file: its deliveries still pending for its former owner (due, leased
//! or waiting for a retry) are withdrawn as `failed` with the reason, once,
//! audited `delivery.withdrawn` under the former owner; what it delivered
//! stays delivered; it claims only its new owner's messages from then on.
//! A change that keeps its scope withdraws nothing.

use chrono::Duration;

use super::outbox::{attempt, destination};
use super::support::*;
use crate::{AuditFilter, DELIVERY_WITHDRAWN, FinishedAttempt, SOURCE_ADMIN, Verdict};

/// `store`'s deliveries of `message` to `dest`: (status, last error).
async fn delivery(store: &StoreRef, message: uuid::Uuid, dest: &str) -> (String, Option<String>) {
    let reports = store.deliveries_of(message).await.unwrap();
    let r = reports.into_iter().find(|r| r.delivery.destination_id == dest).expect("delivery");
    (r.delivery.status, r.delivery.last_error)
}

/// The `delivery.withdrawn` events of `tenant`.
async fn withdrawals(store: &StoreRef, tenant: &str) -> Vec<crate::AuditEvent> {
    let filter = AuditFilter {
        action: Some(DELIVERY_WITHDRAWN.into()),
        tenant: Some(tenant.into()),
        limit: 10,
        ..Default::default()
    };
    store.list_audit(&filter).await.unwrap()
}

/// Stores `n` messages in `scope`; returns their ids.
async fn stored(store: &StoreRef, scope: &Scope, tag: &str, n: usize) -> Vec<uuid::Uuid> {
    let sent = (0..n).map(|i| message(Some(&format!("{tag}-{i}")))).collect();
    processed(ingest_at(store, scope, None, sent, now()).await).iter().map(outcome_id).collect()
}

/// An admin moves a destination with one delivered, one leased and one
/// due delivery to another tenant: the two pending ones are withdrawn.
pub async fn moving_a_destination_withdraws_its_queued_deliveries(store: StoreRef) {
    let (old, new) = (fresh_scope(), fresh_scope());
    let id = format!("mv-{}", old.tenant_id);
    store.seed_destinations(&[destination(&id, &old, None, true)]).await.unwrap();
    let ids = stored(&store, &old, "mv", 3).await;
    let claimed = store.claim_deliveries(&id, now(), now() + Duration::seconds(30), 2).await.unwrap();
    assert_eq!(claimed.len(), 2);
    let done = FinishedAttempt {
        message_id: claimed[0].message_id,
        destination_id: id.clone(),
        attempt: attempt(Some(200), None),
        verdict: Verdict::Delivered,
        lease_until: claimed[0].lease_until,
        sap_status: false,
    };
    store.finish_delivery(&done).await.unwrap();

    // A change within the scope withdraws nothing.
    let mut changed = destination(&id, &old, None, true);
    changed.definition.0["url"] = "http://127.0.0.1:9/other".into();
    store.put_destination(&changed).await.unwrap();
    assert!(withdrawals(&store, &old.tenant_id).await.is_empty());

    let moved = crate::DestinationRow { source: SOURCE_ADMIN.into(), ..destination(&id, &new, None, true) };
    store.put_destination(&moved).await.unwrap();
    let reason =
        format!("not delivered: the destination moved from {}/prod to {}/prod", old.tenant_id, new.tenant_id);
    for m in &ids {
        let expected = if *m == claimed[0].message_id {
            ("delivered".to_string(), None)
        } else {
            ("failed".to_string(), Some(reason.clone()))
        };
        assert_eq!(delivery(&store, *m, &id).await, expected, "message {m}");
    }
    let events = withdrawals(&store, &old.tenant_id).await;
    assert_eq!(events.len(), 1, "the move is audited once, under the former owner");
    assert_eq!(events[0].details.0["withdrawn"], 2);
    assert_eq!(events[0].details.0["to"], format!("{}/prod", new.tenant_id));
    let due = now() + Duration::minutes(5);
    assert!(
        store.claim_deliveries(&id, due, due + Duration::seconds(30), 10).await.unwrap().is_empty(),
        "nothing of the former owner is claimed, not even once the lease has expired"
    );
    let theirs = stored(&store, &new, "mv-new", 1).await;
    let claimed = store.claim_deliveries(&id, due, due + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(claimed.iter().map(|c| c.message_id).collect::<Vec<_>>(), theirs, "its new owner's only");
    assert!(withdrawals(&store, &new.tenant_id).await.is_empty());
}

/// The file moves a destination it seeded: the same withdrawal, audited;
/// a destination an admin changed is not moved by the file.
pub async fn a_moved_seed_withdraws_its_queued_deliveries(store: StoreRef) {
    let (old, new) = (fresh_scope(), fresh_scope());
    let id = format!("mvs-{}", old.tenant_id);
    store.seed_destinations(&[destination(&id, &old, None, true)]).await.unwrap();
    let ids = stored(&store, &old, "mvs", 2).await;
    store.seed_destinations(&[destination(&id, &old, None, true)]).await.unwrap();
    assert!(withdrawals(&store, &old.tenant_id).await.is_empty(), "an unchanged seed withdraws nothing");
    store.seed_destinations(&[destination(&id, &new, None, true)]).await.unwrap();
    for m in &ids {
        assert_eq!(delivery(&store, *m, &id).await.0, "failed");
    }
    let events = withdrawals(&store, &old.tenant_id).await;
    assert_eq!((events.len(), &events[0].details.0["withdrawn"]), (1, &serde_json::json!(2)));

    // An admin's row: the file's move back does not apply, nor withdraw.
    let admin = crate::DestinationRow { source: SOURCE_ADMIN.into(), ..destination(&id, &new, None, true) };
    store.put_destination(&admin).await.unwrap();
    let kept = stored(&store, &new, "mvs-new", 1).await;
    store.seed_destinations(&[destination(&id, &old, None, true)]).await.unwrap();
    assert_eq!(delivery(&store, kept[0], &id).await.0, "pending", "the admin's row keeps its deliveries");
    assert!(withdrawals(&store, &new.tenant_id).await.is_empty());
}

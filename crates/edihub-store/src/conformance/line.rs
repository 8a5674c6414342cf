//! A `fifo` destination's line: one delivery in flight, in commit order; a
//! retry and a dead letter hold the line; concurrent claims take the head
//! once. And the queue depth per destination the metrics read.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::outbox::{attempt, destination};
use super::support::*;
use crate::{ClaimedDelivery, FinishedAttempt, Verdict};

/// Seeds one destination of `scope` for every type; returns its id.
async fn seed_line(store: &StoreRef, scope: &Scope) -> String {
    let id = format!("{}-line", scope.tenant_id);
    store.seed_destinations(&[destination(&id, scope, None, true)]).await.expect("seed");
    id
}

/// Records `verdict` for a claimed delivery.
async fn finish(store: &StoreRef, claimed: &ClaimedDelivery, verdict: Verdict) {
    let code = if verdict == Verdict::Delivered { 200 } else { 500 };
    let done = FinishedAttempt {
        message_id: claimed.message_id,
        destination_id: claimed.destination_id.clone(),
        attempt: attempt(Some(code), None),
        verdict,
        lease_until: claimed.lease_until,
        sap_status: false,
    };
    store.finish_delivery(&done).await.expect("finish");
}

/// Stores a packet of two messages at `t0` and one more a second later;
/// returns their ids in commit order.
async fn three_in_line(store: &StoreRef, scope: &Scope, t0: DateTime<Utc>) -> Vec<Uuid> {
    let packet = processed(ingest_at(store, scope, None, vec![message(None), message(None)], t0).await);
    let later =
        processed(ingest_at(store, scope, None, vec![message(None)], t0 + Duration::seconds(1)).await);
    packet.iter().chain(&later).map(outcome_id).collect()
}

/// The head is claimed alone and in order; nothing behind it while it is in
/// flight, waiting for its retry, or failed; an expired lease and a replay
/// make it claimable again; the line then moves on.
pub async fn fifo_line_claims_the_head_in_order(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_line(&store, &scope).await;
    let ids = three_in_line(&store, &scope, now() - Duration::minutes(10)).await;
    let at = now();
    let lease = |t: DateTime<Utc>| t + Duration::seconds(30);
    let head = |t: DateTime<Utc>| store.claim_line_head(&dest, t, lease(t));
    let first = head(at).await.unwrap().expect("the head");
    assert_eq!((first.message_id, first.attempts), (ids[0], 0));
    assert_eq!(head(at).await.unwrap(), None, "nothing behind a delivery in flight");
    for behind in &ids[1..] {
        let report = store.deliveries_of(*behind).await.unwrap();
        assert_eq!(report[0].delivery.lease_until, None, "the claim leased the head alone");
    }
    let retaken = head(lease(at)).await.unwrap().expect("an expired lease is claimable again");
    assert_eq!(retaken.message_id, ids[0]);
    finish(&store, &retaken, Verdict::RetryAt(at + Duration::minutes(1))).await;
    assert_eq!(head(at + Duration::seconds(59)).await.unwrap(), None, "a retry holds the line");
    let retry = head(at + Duration::minutes(1)).await.unwrap().expect("the retry is due");
    assert_eq!((retry.message_id, retry.attempts), (ids[0], 1));
    finish(&store, &retry, Verdict::Delivered).await;

    let second = head(at + Duration::minutes(2)).await.unwrap().expect("the next in line");
    assert_eq!(second.message_id, ids[1], "a packet's messages keep their order");
    finish(&store, &second, Verdict::Failed).await;
    assert_eq!(head(at + Duration::days(3)).await.unwrap(), None, "a dead letter holds the line");
    assert_eq!(store.redeliver(ids[1], Some(&dest)).await.unwrap(), vec![dest.clone()]);
    let later = now() + Duration::hours(1);
    let replayed = head(later).await.unwrap().expect("the replayed head");
    assert_eq!(replayed.message_id, ids[1]);
    finish(&store, &replayed, Verdict::Delivered).await;
    let third = head(later).await.unwrap().expect("the last one");
    assert_eq!(third.message_id, ids[2]);
    finish(&store, &third, Verdict::Delivered).await;
    assert_eq!(head(later).await.unwrap(), None, "the line is empty");
}

/// Eight concurrent claimers: each round exactly one gets the head, and the
/// rounds follow the line.
pub async fn fifo_line_claims_are_exclusive(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_line(&store, &scope).await;
    let ids = three_in_line(&store, &scope, now() - Duration::minutes(10)).await;
    for expected in ids {
        let at = now();
        let claimers: Vec<_> = (0..8)
            .map(|_| {
                let (store, dest) = (store.clone(), dest.clone());
                tokio::spawn(async move {
                    store.claim_line_head(&dest, at, at + Duration::minutes(5)).await.expect("claim")
                })
            })
            .collect();
        let mut won = Vec::new();
        for claimer in claimers {
            won.extend(claimer.await.expect("claimer"));
        }
        assert_eq!(won.len(), 1, "one claimer gets the head: {won:?}");
        assert_eq!(won[0].message_id, expected);
        finish(&store, &won[0], Verdict::Delivered).await;
    }
}

/// Pending deliveries (due or waiting for a retry) count per destination,
/// with the oldest's creation time; delivered and failed ones do not count.
pub async fn delivery_queues_count_pending(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_line(&store, &scope).await;
    let t0 = now() - Duration::minutes(10);
    let ids = three_in_line(&store, &scope, t0).await;
    processed(ingest_at(&store, &scope, None, vec![message(None)], now()).await);
    let queue = |queues: Vec<crate::DeliveryQueue>| queues.into_iter().find(|q| q.destination_id == dest);
    let q = queue(store.delivery_queues().await.unwrap()).expect("a queue");
    assert_eq!((q.depth, q.oldest), (4, t0));
    let at = now();
    let first = store.claim_line_head(&dest, at, at + Duration::seconds(30)).await.unwrap().expect("head");
    finish(&store, &first, Verdict::Delivered).await;
    let second = store.claim_line_head(&dest, at, at + Duration::seconds(30)).await.unwrap().expect("next");
    finish(&store, &second, Verdict::RetryAt(at + Duration::hours(1))).await;
    let q = queue(store.delivery_queues().await.unwrap()).expect("a queue");
    assert_eq!((q.depth, q.oldest), (3, t0), "a delivery waiting for its retry is pending");
    let again = store.redeliver(ids[1], None).await.unwrap();
    assert_eq!(again, vec![dest.clone()]);
    let third = store.claim_line_head(&dest, now(), now() + Duration::seconds(30)).await.unwrap();
    finish(&store, &third.expect("the replayed one"), Verdict::Failed).await;
    let q = queue(store.delivery_queues().await.unwrap()).expect("a queue");
    assert_eq!(q.depth, 2, "delivered and failed ones are not pending");
    assert_eq!(q.oldest, t0 + Duration::seconds(1));
}

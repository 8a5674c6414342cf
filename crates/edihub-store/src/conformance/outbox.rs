//! The outbox: deliveries written with their messages on every insert path,
//! never for duplicates, claimed exclusively under concurrency, finished,
//! failed and replayed with audit events.

use std::collections::HashSet;

use chrono::Duration;

use super::partitions::id_at;
use super::support::*;
use crate::ingest::packet::TX_CHUNK;
use crate::{
    AttemptRow, AuditFilter, ClaimedDelivery, DELIVERY_FAILED, DELIVERY_REPLAYED, DestinationRow,
    FinishedAttempt, Json, SOURCE_CONFIG, Verdict,
};

/// A destination of `scope` for `types` (`None`: every type).
pub(super) fn destination(id: &str, scope: &Scope, types: Option<&[&str]>, enabled: bool) -> DestinationRow {
    DestinationRow {
        id: id.into(),
        tenant_id: scope.tenant_id.clone(),
        environment_id: scope.environment_id.clone(),
        message_types: types.map(|t| Json(t.iter().map(|s| s.to_string()).collect())),
        enabled,
        definition: Json(serde_json::json!({ "url": "http://127.0.0.1:9/" })),
        source: SOURCE_CONFIG.into(),
        updated_at: now(),
    }
}

/// The destinations a message has deliveries to, sorted.
async fn delivered_to(store: &StoreRef, id: uuid::Uuid) -> Vec<String> {
    let reports = store.deliveries_of(id).await.expect("deliveries");
    reports.iter().map(|r| r.delivery.destination_id.clone()).collect()
}

/// Seeds four destinations of which only `{tag}-all` admits an ORDERS05 of `scope`.
pub(super) async fn seed_mixed(store: &StoreRef, scope: &Scope, tag: &str) -> String {
    let other_env = Scope::new(scope.tenant_id.clone(), "qa");
    let rows = [
        destination(&format!("{tag}-all"), scope, None, true),
        destination(&format!("{tag}-orders"), scope, Some(&["ORDERS05", "X"]), true),
        destination(&format!("{tag}-other-type"), scope, Some(&["INVOIC02"]), true),
        destination(&format!("{tag}-off"), scope, None, false),
        destination(&format!("{tag}-qa"), &other_env, None, true),
    ];
    store.seed_destinations(&rows).await.expect("seed");
    format!("{tag}-all")
}

/// Every insert path (group insert, transaction, packet chunks) writes one
/// pending delivery per matching enabled destination with the message;
/// duplicates write none.
pub async fn outbox_rows_written_with_messages(store: StoreRef) {
    let scope = fresh_scope();
    let tag = scope.tenant_id.clone();
    seed_mixed(&store, &scope, &tag).await;
    let expected = vec![format!("{tag}-all"), format!("{tag}-orders")];
    let group = processed(ingest_at(&store, &scope, None, vec![message(Some("ob-1"))], now()).await);
    let tx = processed(
        ingest_at(&store, &scope, None, vec![message(Some("ob-2")), message(Some("ob-3"))], now()).await,
    );
    let chunks: Vec<NewMessage> = (0..TX_CHUNK + 5).map(|i| message(Some(&format!("ob-p{i}")))).collect();
    let packet = processed(ingest_at(&store, &scope, None, chunks, now()).await);
    // A keyed request takes the keyed group insert (one statement on PostgreSQL).
    let keyed = processed(
        ingest_at(&store, &scope, Some(key("ob-k", "sha-ob-k")), vec![message(Some("ob-k"))], now()).await,
    );
    let mut ids: Vec<_> = group.iter().chain(&tx).chain(&packet).chain(&keyed).map(outcome_id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4 + TX_CHUNK + 5);
    for id in &ids {
        assert_eq!(delivered_to(&store, *id).await, expected, "message {id}");
    }
    let report = &store.deliveries_of(ids[0]).await.unwrap()[0];
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("pending", 0));
    assert!(report.attempt_log.is_empty());

    let dup = processed(ingest_at(&store, &scope, None, vec![message(Some("ob-1"))], now()).await);
    assert!(matches!(dup[0], MessageOutcome::Duplicate { .. }));
    assert_eq!(delivered_to(&store, ids[0]).await, expected, "a duplicate adds no delivery");
    let all = format!("{tag}-all");
    let claimed = store.claim_deliveries(&all, now(), now() + Duration::minutes(1), 10_000);
    assert_eq!(claimed.await.unwrap().len(), ids.len(), "one delivery per message, none for the duplicate");
}

/// Concurrent claims never return one delivery twice while its lease
/// holds; an expired lease is claimable again.
pub async fn lease_claim_is_exclusive(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_mixed(&store, &scope, &scope.tenant_id).await;
    for i in 0..40 {
        processed(ingest_at(&store, &scope, None, vec![message(Some(&format!("lc-{i}")))], now()).await);
    }
    let at = now();
    let lease = at + Duration::minutes(5);
    let claimers = (0..8).map(|_| {
        let (store, dest) = (store.clone(), dest.clone());
        tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let got = store.claim_deliveries(&dest, at, lease, 3).await.expect("claim");
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|c| c.message_id));
            }
        })
    });
    let mut all = Vec::new();
    for claimer in claimers.collect::<Vec<_>>() {
        all.extend(claimer.await.expect("claimer"));
    }
    assert_eq!(all.len(), 40, "every delivery claimed once");
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 40, "no delivery claimed twice");
    assert!(store.claim_deliveries(&dest, at, lease, 100).await.unwrap().is_empty(), "leased");
    let later = store.claim_deliveries(&dest, lease, lease + Duration::minutes(5), 100).await.unwrap();
    assert_eq!(later.len(), 40, "expired leases are claimable again");
}

pub(super) fn attempt(status: Option<i32>, error: Option<&str>) -> AttemptRow {
    AttemptRow {
        attempted_at: now(),
        status_code: status,
        latency_ms: 12,
        error: error.map(str::to_string),
        response_prefix: Some("ok".into()),
    }
}

/// The verdict of claim `c` to `dest`: delivered, 200.
pub(super) fn delivered(dest: &str, c: &ClaimedDelivery) -> FinishedAttempt {
    FinishedAttempt {
        message_id: c.message_id,
        destination_id: dest.into(),
        attempt: attempt(Some(200), None),
        verdict: Verdict::Delivered,
        lease_until: c.lease_until,
        sap_status: false,
    }
}

/// A retry moves the due time and counts the attempt; a failure is the
/// dead letter, audited; a replay makes it due again, audited; a delivered
/// one is never claimed again.
pub async fn deliveries_finish_fail_and_replay(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_mixed(&store, &scope, &scope.tenant_id).await;
    let out = processed(ingest_at(&store, &scope, None, vec![message(Some("fr-1"))], now()).await);
    let id = outcome_id(&out[0]);
    let claim = |at| store.claim_deliveries(&dest, at, at + Duration::seconds(30), 10);
    let first = claim(now()).await.unwrap();
    assert_eq!(first[0].attempts, 0);
    let retry_at = now() + Duration::minutes(10);
    let finish = |verdict, a, lease| FinishedAttempt {
        message_id: id,
        destination_id: dest.clone(),
        attempt: a,
        verdict,
        lease_until: lease,
        sap_status: false,
    };
    store
        .finish_delivery(&finish(
            Verdict::RetryAt(retry_at),
            attempt(Some(500), Some("HTTP 500")),
            first[0].lease_until,
        ))
        .await
        .unwrap();
    assert!(claim(now()).await.unwrap().is_empty(), "not due before the retry time");
    let again = claim(retry_at).await.unwrap();
    assert_eq!(again[0].attempts, 1);
    let lease = again[0].lease_until;
    store
        .finish_delivery(&finish(Verdict::Failed, attempt(Some(410), Some("HTTP 410")), lease))
        .await
        .unwrap();
    let report =
        store.deliveries_of(id).await.unwrap().into_iter().find(|r| r.delivery.destination_id == dest);
    let report = report.expect("delivery");
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("failed", 2));
    assert_eq!(report.delivery.last_status_code, Some(410));
    assert_eq!(report.attempt_log.iter().map(|a| a.status_code).collect::<Vec<_>>(), [Some(500), Some(410)]);
    assert!(claim(retry_at + Duration::hours(1)).await.unwrap().is_empty(), "failed is final");
    let audit = |action: &str| AuditFilter {
        action: Some(action.into()),
        message_id: Some(id),
        limit: 10,
        ..Default::default()
    };
    let failed = store.list_audit(&audit(DELIVERY_FAILED)).await.unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].tenant_id.as_deref(), Some(scope.tenant_id.as_str()));
    assert_eq!(failed[0].details.0["destination"], dest.as_str());

    assert_eq!(store.redeliver(id, Some(&dest)).await.unwrap(), vec![dest.clone()]);
    assert!(store.redeliver(id, Some("no-such-destination")).await.unwrap().is_empty());
    assert_eq!(store.list_audit(&audit(DELIVERY_REPLAYED)).await.unwrap().len(), 1);
    let replayed = claim(now()).await.unwrap();
    assert_eq!(replayed.len(), 1, "a replay is due at once");
    let lease = replayed[0].lease_until;
    store.finish_delivery(&finish(Verdict::Delivered, attempt(Some(200), None), lease)).await.unwrap();
    assert!(claim(retry_at + Duration::hours(1)).await.unwrap().is_empty(), "delivered is final");
}

/// A purged message takes its deliveries and attempts with it; the
/// deliveries of messages kept stay.
pub async fn purged_messages_drop_their_deliveries(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_mixed(&store, &scope, &scope.tenant_id).await;
    let old =
        processed(ingest_at(&store, &scope, None, vec![message(None)], now() - Duration::days(10)).await);
    let kept = processed(ingest_at(&store, &scope, None, vec![message(None)], now()).await);
    let (old, kept) = (outcome_id(&old[0]), outcome_id(&kept[0]));
    let claimed = store.claim_deliveries(&dest, now(), now() + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(claimed.len(), 2);
    for c in claimed {
        store.finish_delivery(&delivered(&dest, &c)).await.unwrap();
    }
    let purged =
        store.retention_step(crate::RetentionStep::PurgeMessages, now() - Duration::days(5), now(), 100);
    assert!(purged.await.unwrap() >= 1);
    assert!(store.get_message(old).await.unwrap().is_none());
    assert!(store.deliveries_of(old).await.unwrap().is_empty(), "deliveries of a purged message are gone");
    let report = store.deliveries_of(kept).await.unwrap();
    assert_eq!(report.len(), 2, "the kept message keeps its deliveries");
    assert!(report.iter().any(|r| r.attempt_log.len() == 1));
}

/// The recent claim leases the deliveries of messages stored since the
/// start of `since`'s UTC day, never an older one, and says when each
/// message was stored; the full claim leases the older ones too.
pub async fn recent_claim_leaves_older_messages(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_mixed(&store, &scope, &scope.tenant_id).await;
    let old_at = now() - Duration::days(3);
    let old = NewMessage { id: id_at(old_at), ..message(Some("rc-old")) };
    let old = outcome_id(&processed(ingest_at(&store, &scope, None, vec![old], old_at).await)[0]);
    let new_at = now();
    let new = outcome_id(
        &processed(ingest_at(&store, &scope, None, vec![message(Some("rc-new"))], new_at).await)[0],
    );
    let (at, lease) = (now(), now() + Duration::minutes(1));

    let recent = store.claim_recent_deliveries(&dest, at - Duration::days(1), at, lease, 10).await.unwrap();
    let recent: Vec<_> = recent.iter().map(|c| (c.message_id, c.created_at)).collect();
    assert_eq!(recent, [(new, new_at)], "only the new message's delivery");
    let full = store.claim_deliveries(&dest, at, lease, 10).await.unwrap();
    let full: Vec<_> = full.iter().map(|c| (c.message_id, c.created_at)).collect();
    assert_eq!(full, [(old, old_at)], "the full claim takes the old one");
    let since_its_day = store.claim_recent_deliveries(&dest, old_at, lease, lease + Duration::minutes(1), 10);
    assert_eq!(
        since_its_day.await.unwrap().len(),
        2,
        "both, once the leases ran out, from the old one's day on"
    );
}

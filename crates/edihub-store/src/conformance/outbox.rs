//! The outbox: deliveries written with their messages on every insert path,
//! never for duplicates, claimed exclusively under concurrency, finished,
//! failed and replayed with audit events.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};

use super::*;
use crate::ingest::packet::TX_CHUNK;
use crate::{
    AttemptRow, AuditFilter, DELIVERY_FAILED, DELIVERY_REPLAYED, DestinationRow, FinishedAttempt, Json,
    SOURCE_CONFIG, Verdict,
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
async fn seed_mixed(store: &StoreRef, scope: &Scope, tag: &str) -> String {
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
        let done = FinishedAttempt {
            message_id: c.message_id,
            destination_id: dest.clone(),
            attempt: attempt(Some(200), None),
            verdict: Verdict::Delivered,
            lease_until: c.lease_until,
        };
        store.finish_delivery(&done).await.unwrap();
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

/// One delivery claimed twice: by a worker that then stalls past its lease
/// (5 s), and again once that lease has expired. Returns a maker of
/// finished attempts of that delivery, the stalled lease and the current one.
async fn claimed_twice(
    store: &StoreRef,
    fp: &str,
) -> (impl Fn(Verdict, i32, DateTime<Utc>) -> FinishedAttempt, DateTime<Utc>, DateTime<Utc>) {
    let scope = fresh_scope();
    let dest = seed_mixed(store, &scope, &scope.tenant_id).await;
    let out = processed(ingest_at(store, &scope, None, vec![message(Some(fp))], now()).await);
    let id = outcome_id(&out[0]);
    let t0 = now();
    let stalled = store.claim_deliveries(&dest, t0, t0 + Duration::seconds(5), 10).await.unwrap();
    let t1 = t0 + Duration::seconds(6);
    let current = store.claim_deliveries(&dest, t1, t1 + Duration::seconds(5), 10).await.unwrap();
    assert_eq!((stalled.len(), current.len()), (1, 1), "the expired lease is claimed again");
    let done = move |verdict, code, lease| FinishedAttempt {
        message_id: id,
        destination_id: dest.clone(),
        attempt: attempt(Some(code), None),
        verdict,
        lease_until: lease,
    };
    (done, stalled[0].lease_until, current[0].lease_until)
}

/// The delivery's report and its `delivery.failed` events.
async fn report_and_failures(store: &StoreRef, d: &FinishedAttempt) -> (crate::DeliveryReport, usize) {
    let reports = store.deliveries_of(d.message_id).await.unwrap();
    let report = reports.into_iter().find(|r| r.delivery.destination_id == d.destination_id);
    let failed = AuditFilter {
        action: Some(DELIVERY_FAILED.into()),
        message_id: Some(d.message_id),
        limit: 10,
        ..Default::default()
    };
    (report.expect("delivery"), store.list_audit(&failed).await.unwrap().len())
}

/// A worker that stalled past its lease finds the delivery claimed again by
/// another: its attempt is logged, its verdict is not recorded, and the
/// newer attempt's verdict decides.
pub async fn a_stale_verdict_does_not_overwrite_a_newer_lease(store: StoreRef) {
    let (done, stalled, current) = claimed_twice(&store, "stale-1").await;
    store.finish_delivery(&done(Verdict::Delivered, 200, current)).await.unwrap();
    // The stalled worker's late verdict: a failure that must not win.
    store.finish_delivery(&done(Verdict::Failed, 410, stalled)).await.unwrap();
    let (report, failures) = report_and_failures(&store, &done(Verdict::Delivered, 200, current)).await;
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("delivered", 1));
    assert_eq!(report.delivery.last_status_code, Some(200));
    assert_eq!(report.attempt_log.len(), 2, "both attempts are logged");
    assert_eq!(failures, 0, "a stale failure is not audited");
}

/// The stalled attempt's verdict and the newer one's in the same batch:
/// the newer lease's verdict is recorded, the stale one only logged.
pub async fn a_stale_verdict_in_the_same_batch_changes_nothing(store: StoreRef) {
    let (done, stalled, current) = claimed_twice(&store, "stale-2").await;
    let retry_at = current + Duration::seconds(90);
    let batch = [done(Verdict::Failed, 410, stalled), done(Verdict::RetryAt(retry_at), 503, current)];
    store.finish_deliveries(&batch).await.unwrap();
    let (report, failures) = report_and_failures(&store, &batch[1]).await;
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("pending", 1));
    assert_eq!(report.delivery.last_status_code, Some(503));
    assert_eq!(report.delivery.next_attempt_at, retry_at, "the retry is due when its verdict says");
    assert_eq!(report.delivery.lease_until, None);
    assert_eq!(report.attempt_log.len(), 2, "both attempts are logged");
    assert_eq!(failures, 0, "a stale failure is not audited");
}

/// Attempts recorded together (the worker's batch): each delivery gets its
/// own attempt and verdict, and only the failed one is audited.
pub async fn attempts_recorded_together(store: StoreRef) {
    let scope = fresh_scope();
    let dest = seed_mixed(&store, &scope, &scope.tenant_id).await;
    let sent = vec![message(Some("batch-1")), message(Some("batch-2")), message(Some("batch-3"))];
    let out = processed(ingest_at(&store, &scope, None, sent, now()).await);
    assert_eq!(out.len(), 3);
    let claimed = store.claim_deliveries(&dest, now(), now() + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(claimed.len(), 3);
    let verdicts = [Verdict::Delivered, Verdict::Failed, Verdict::RetryAt(now() + Duration::seconds(60))];
    let done: Vec<FinishedAttempt> = claimed
        .iter()
        .zip(verdicts)
        .map(|(c, verdict)| FinishedAttempt {
            message_id: c.message_id,
            destination_id: dest.clone(),
            attempt: attempt(Some(if verdict == Verdict::Delivered { 200 } else { 503 }), None),
            verdict,
            lease_until: c.lease_until,
        })
        .collect();
    store.finish_deliveries(&done).await.unwrap();
    for d in &done {
        let report = store.deliveries_of(d.message_id).await.unwrap();
        let report = report.into_iter().find(|r| r.delivery.destination_id == dest).expect("delivery");
        let status = match d.verdict {
            Verdict::Delivered => "delivered",
            Verdict::Failed => "failed",
            Verdict::RetryAt(_) => "pending",
        };
        assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), (status, 1));
        assert_eq!(report.delivery.lease_until, None, "the lease is released");
        assert_eq!(report.attempt_log.len(), 1);
        let audited = AuditFilter {
            action: Some(DELIVERY_FAILED.into()),
            message_id: Some(d.message_id),
            limit: 10,
            ..Default::default()
        };
        let events = store.list_audit(&audited).await.unwrap();
        assert_eq!(events.len(), usize::from(d.verdict == Verdict::Failed), "only the failure is audited");
    }
    assert!(store.finish_deliveries(&[]).await.is_ok(), "an empty batch records nothing");
}

//! Delivery verdicts: a worker's verdict counts only for the lease it was
//! given, so one that stalled past its lease cannot overwrite the verdict
//! of the worker that claimed the delivery after it, alone or in a batch;
//! a batch of verdicts is recorded together.

use chrono::{DateTime, Duration, Utc};

use super::outbox::{attempt, seed_mixed};
use super::support::*;
use crate::testing::{Backend, TestDb};
use crate::{AuditFilter, DELIVERY_FAILED, FinishedAttempt, Verdict};

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
        sap_status: false,
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
    let late = store.finish_delivery(&done(Verdict::Failed, 410, stalled)).await.unwrap();
    assert_eq!(late, crate::Recorded::Superseded, "logged, not applied");
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
            sap_status: false,
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

/// Three claimed deliveries of one destination (one message each); returns
/// the destination and the claims.
pub(super) async fn three_claimed(store: &StoreRef, tag: &str) -> (String, Vec<crate::ClaimedDelivery>) {
    let scope = fresh_scope();
    let dest = seed_mixed(store, &scope, &scope.tenant_id).await;
    let sent = (1..=3).map(|i| message(Some(&format!("{tag}-{i}")))).collect();
    assert_eq!(processed(ingest_at(store, &scope, None, sent, now()).await).len(), 3);
    let claimed = store.claim_deliveries(&dest, now(), now() + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(claimed.len(), 3);
    (dest, claimed)
}

/// A receiver's answer with a NUL (which PostgreSQL's `text` and `jsonb`
/// refuse) in a batch with others: every attempt and verdict is recorded,
/// the NUL stored as U+FFFD, in the attempt log, the delivery's last error
/// and the `delivery.failed` audit event alike.
pub async fn an_answer_with_a_nul_is_recorded(store: StoreRef) {
    let (dest, claimed) = three_claimed(&store, "nul").await;
    let answered = |c: &crate::ClaimedDelivery, code: i32, text: &str, verdict| FinishedAttempt {
        message_id: c.message_id,
        destination_id: dest.clone(),
        attempt: crate::AttemptRow {
            response_prefix: Some(text.into()),
            ..attempt(Some(code), (code >= 300).then_some("HTTP 500 \0 Internal Server Error"))
        },
        verdict,
        lease_until: c.lease_until,
        sap_status: false,
    };
    let done = [
        answered(&claimed[0], 500, "abc\0def", Verdict::RetryAt(now() + Duration::seconds(60))),
        answered(&claimed[1], 200, "abc\0def", Verdict::Delivered),
        answered(&claimed[2], 500, "\0", Verdict::Failed),
    ];
    let recorded = store.finish_deliveries(&done).await.unwrap();
    assert_eq!(recorded, [crate::Recorded::Applied; 3], "every verdict applied");
    for (d, (status, prefix)) in done.iter().zip([
        ("pending", "abc\u{FFFD}def"),
        ("delivered", "abc\u{FFFD}def"),
        ("failed", "\u{FFFD}"),
    ]) {
        let (report, failures) = report_and_failures(&store, d).await;
        assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), (status, 1));
        assert_eq!(report.delivery.lease_until, None, "the lease is released");
        assert_eq!(report.attempt_log.len(), 1, "logged once");
        assert_eq!(report.attempt_log[0].response_prefix.as_deref(), Some(prefix));
        if d.verdict != Verdict::Delivered {
            let error = "HTTP 500 \u{FFFD} Internal Server Error";
            assert_eq!(report.attempt_log[0].error.as_deref(), Some(error));
            assert_eq!(report.delivery.last_error.as_deref(), Some(error));
        }
        assert_eq!(failures, usize::from(d.verdict == Verdict::Failed), "only the failure is audited");
    }
    let failed = AuditFilter {
        action: Some(DELIVERY_FAILED.into()),
        message_id: Some(done[2].message_id),
        limit: 10,
        ..Default::default()
    };
    let event = store.list_audit(&failed).await.unwrap().remove(0);
    assert_eq!(event.details["last_error"], "HTTP 500 \u{FFFD} Internal Server Error");
}

/// The rows of `delivery_attempts` of message `id`, counted on the
/// database itself.
async fn attempt_rows(db: &TestDb, id: uuid::Uuid) -> i64 {
    use sqlx::Connection;
    let count = "SELECT COUNT(*) FROM delivery_attempts WHERE message_id = $1";
    match db.backend {
        Backend::Postgres => {
            let mut conn = sqlx::PgConnection::connect(&db.direct_url()).await.expect("connect");
            sqlx::query_scalar(count).bind(id).fetch_one(&mut conn).await.expect("count")
        }
        Backend::Sqlite => {
            let mut conn = sqlx::SqliteConnection::connect(&db.url).await.expect("connect");
            sqlx::query_scalar(count).bind(id).fetch_one(&mut conn).await.expect("count")
        }
    }
}

/// A first attempt that delivers is kept on its delivery row, with no row
/// of `delivery_attempts`; every other attempt (a retry, a failure, a
/// replayed one, a second attempt that delivers) gets its row. The report
/// lists both kinds as one log, oldest first, and a replay keeps the first
/// attempt as it was.
pub async fn a_first_try_success_is_kept_on_its_delivery(db: &TestDb) {
    let store = db.store().await;
    let (dest, claimed) = three_claimed(&store, "first-try").await;
    let due = now() + Duration::seconds(1);
    let verdicts = [Verdict::Delivered, Verdict::RetryAt(due), Verdict::Failed];
    let first = |c: &crate::ClaimedDelivery, verdict, code, latency_ms| FinishedAttempt {
        message_id: c.message_id,
        destination_id: dest.clone(),
        attempt: crate::AttemptRow {
            latency_ms,
            response_prefix: Some(format!("answer {code}")),
            ..attempt(Some(code), None)
        },
        verdict,
        lease_until: c.lease_until,
        sap_status: false,
    };
    let batch: Vec<_> = claimed
        .iter()
        .zip(verdicts)
        .zip([200, 503, 410])
        .map(|((c, v), code)| first(c, v, code, 7))
        .collect();
    store.finish_deliveries(&batch).await.unwrap();
    let ids: Vec<_> = claimed.iter().map(|c| c.message_id).collect();
    for (id, rows) in ids.iter().zip([0, 1, 1]) {
        assert_eq!(attempt_rows(db, *id).await, rows, "rows of delivery_attempts");
    }
    let (report, _) = report_and_failures(&store, &batch[0]).await;
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("delivered", 1));
    assert_eq!(report.attempt_log, [batch[0].attempt.clone()], "the first attempt, as it was made");

    // The retry delivers at its second attempt, which gets a row.
    let again = store.claim_deliveries(&dest, due, due + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(again.iter().map(|c| c.message_id).collect::<Vec<_>>(), [ids[1]]);
    store.finish_delivery(&first(&again[0], Verdict::Delivered, 200, 9)).await.unwrap();
    assert_eq!(attempt_rows(db, ids[1]).await, 2, "a second attempt that delivers is a row");
    let (report, _) = report_and_failures(&store, &batch[1]).await;
    let codes: Vec<_> = report.attempt_log.iter().map(|a| a.status_code).collect();
    assert_eq!((report.delivery.status.as_str(), codes), ("delivered", vec![Some(503), Some(200)]));

    // A replay of the first-try success: its new attempt is a row, and the
    // first one stays in the log as it was.
    assert_eq!(store.redeliver(ids[0], Some(&dest)).await.unwrap(), std::slice::from_ref(&dest));
    let replayed = store.claim_deliveries(&dest, due, due + Duration::seconds(30), 10).await.unwrap();
    assert_eq!(replayed.iter().map(|c| c.message_id).collect::<Vec<_>>(), [ids[0]]);
    let mut replay = first(&replayed[0], Verdict::RetryAt(due + Duration::seconds(60)), 502, 11);
    replay.attempt.attempted_at = due;
    store.finish_delivery(&replay).await.unwrap();
    assert_eq!(attempt_rows(db, ids[0]).await, 1, "the replayed attempt is a row");
    let (report, _) = report_and_failures(&store, &batch[0]).await;
    assert_eq!((report.delivery.status.as_str(), report.delivery.attempts), ("pending", 2));
    assert_eq!(report.attempt_log, [batch[0].attempt.clone(), replay.attempt.clone()]);
    store.close().await;
}

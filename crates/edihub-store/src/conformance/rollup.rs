//! The overview's hourly rollup: what it answers equals a direct count,
//! an hour is rolled up only once it has settled, and racing roll-ups add
//! each hour once.

use chrono::{DateTime, Duration, TimeDelta, Utc};

use super::support::*;
use crate::activity_rollup::{HORIZON_HOURS, floor_hour};
use crate::{ActivityCount, ActivityPoint, Counted, NewAuditEvent, SIGNATURE_REJECTED};

const HORIZON: u64 = HORIZON_HOURS as u64;

/// Stores a message of `message_type` at `at` and, when `repeat`, its
/// duplicate a minute later (blocked by the fingerprint).
async fn arrive(store: &StoreRef, scope: &Scope, message_type: &str, at: DateTime<Utc>, repeat: bool) {
    let mut m = message(Some(&uuid::Uuid::new_v4().to_string()));
    m.message_type = message_type.into();
    m.window_seconds = 30 * 86_400;
    processed(ingest_at(store, scope, None, vec![m.clone()], at).await);
    if repeat {
        let again = NewMessage { id: uuid::Uuid::now_v7(), ..m };
        let outcome = processed(ingest_at(store, scope, None, vec![again], at + Duration::minutes(1)).await);
        assert!(matches!(outcome[0], MessageOutcome::Duplicate { .. }), "{outcome:?}");
    }
}

/// Everything the overview reads for `now`: the counts since several
/// starts (aligned to the hour and not) and three series.
async fn readings(
    store: &StoreRef,
    now: DateTime<Utc>,
) -> (Vec<Vec<ActivityCount>>, Vec<Vec<ActivityPoint>>) {
    let top = floor_hour(now);
    let mut counts = Vec::new();
    for since in [
        now - Duration::hours(24),
        now - Duration::days(7),
        top - Duration::minutes(30 * 60 + 17),
        top - Duration::hours(100),
    ] {
        counts.push(store.activity(since).await.unwrap());
    }
    let mut series = Vec::new();
    for bounds in [
        crate::hourly_bounds(now, 24),
        crate::hourly_bounds(now, 170),
        crate::series_bounds(now, Duration::minutes(90), 10),
    ] {
        series.push(store.activity_series(&bounds).await.unwrap());
    }
    (counts, series)
}

fn accepted(rows: &[ActivityCount]) -> i64 {
    rows.iter().filter(|r| r.what == Counted::Accepted).map(|r| r.count).sum()
}

/// Counts read after a roll-up equal the direct counts before it, for
/// ranges that start mid-hour, span the rollup's edge and end in the open
/// hour; a settled hour is then read from the rollup alone, the open hour
/// still directly.
pub async fn rollup_answers_like_a_direct_count(store: StoreRef) {
    let (prod, qa) = (fresh_scope(), Scope::new("tq", "qa"));
    let now = now();
    let top = floor_hour(now);
    let h = |n: i64| top - Duration::hours(n);
    let tiny = TimeDelta::microseconds(1);
    for (scope, message_type, at, repeat) in [
        (&prod, "ORDERS05", h(200), true),
        (&prod, "ORDERS05", h(168) - Duration::minutes(20), false),
        (&prod, "ORDERS05", h(167) + Duration::minutes(10), true),
        (&prod, "INVOIC02", h(30) + Duration::minutes(12), false),
        (&prod, "ORDERS05", h(24) - tiny, true),
        (&prod, "ORDERS05", h(24), false),
        (&qa, "INVOIC02", h(5) - tiny, false),
        (&qa, "INVOIC02", h(5), true),
        (&prod, "ORDERS05", h(1) + Duration::minutes(59), false),
        (&prod, "INVOIC02", now, true),
    ] {
        arrive(&store, scope, message_type, at, repeat).await;
    }
    let keyed = |at| ingest_at(&store, &qa, Some(key("roll-k", "s")), vec![message(None)], at);
    processed(keyed(h(3) + Duration::minutes(5)).await);
    assert!(matches!(keyed(h(3) + Duration::minutes(6)).await, IngestOutcome::Replayed { .. }));
    let interchange = KeyClaim {
        kind: DetectedBy::Interchange,
        on_reuse: KeyReusePolicy::Replay,
        window_seconds: Some(86_400),
        ..key("X12|ZZ:A|ZZ:B|roll", "sha-roll")
    };
    let sent = |at| ingest_at(&store, &qa, Some(interchange.clone()), vec![message(Some("roll-ic"))], at);
    processed(sent(h(4) + Duration::minutes(5)).await);
    assert!(matches!(sent(h(4) + Duration::minutes(6)).await, IngestOutcome::Replayed(_)));
    let refused = NewAuditEvent {
        action: SIGNATURE_REJECTED.into(),
        tenant_id: Some(prod.tenant_id.clone()),
        environment_id: Some(prod.environment_id.clone()),
        details: serde_json::json!({ "integration": "shop", "count": 3 }),
        ..Default::default()
    };
    store.insert_audit(&refused).await.unwrap();

    let direct = readings(&store, now).await;
    assert_eq!(accepted(&direct.0[1]), 10, "the week's messages, counted directly: {:?}", direct.0[1]);
    let interchanges = |rows: &[ActivityCount]| -> i64 {
        rows.iter().filter(|r| r.what == Counted::Duplicate(DetectedBy::Interchange)).map(|r| r.count).sum()
    };
    assert_eq!(interchanges(&direct.0[0]), 1, "the repeated interchange: {:?}", direct.0[0]);
    assert_eq!(store.roll_up_activity(now).await.unwrap(), HORIZON);
    assert_eq!(readings(&store, now).await, direct, "the rollup answers what the direct count did");
    assert_eq!(store.roll_up_activity(now).await.unwrap(), 0, "nothing left to roll up");

    // A row stamped in a rolled-up hour after its roll-up (which a request
    // cannot do once the hour has settled) is not seen where whole hours
    // are read: from the rollup. The open hour is still counted directly.
    arrive(&store, &prod, "ORDERS05", h(5) + Duration::minutes(30), false).await;
    assert_eq!(store.activity(h(100)).await.unwrap(), direct.0[3]);
    assert_eq!(store.activity_series(&crate::hourly_bounds(now, 24)).await.unwrap(), direct.1[0]);
    arrive(&store, &prod, "ORDERS05", now, false).await;
    assert_eq!(
        accepted(&store.activity(now - Duration::hours(24)).await.unwrap()),
        accepted(&direct.0[0]) + 1
    );
}

/// An hour is rolled up only when it ended before `settled`: a message
/// stamped in it that commits later is still counted, and the bounds of
/// an hour belong to it (from its first microsecond up to the next hour's).
pub async fn rollup_waits_for_the_hour_to_settle(store: StoreRef) {
    let scope = fresh_scope();
    let hour = floor_hour(now()) - Duration::hours(3);
    let tiny = TimeDelta::microseconds(1);
    arrive(&store, &scope, "ORDERS05", hour - tiny, false).await;
    arrive(&store, &scope, "ORDERS05", hour, false).await;
    arrive(&store, &scope, "ORDERS05", hour + Duration::hours(1) - tiny, false).await;
    assert_eq!(store.roll_up_activity(hour + Duration::minutes(30)).await.unwrap(), HORIZON);
    // Stamped in the hour, committed after the first roll-up.
    arrive(&store, &scope, "ORDERS05", hour + Duration::minutes(10), false).await;
    assert_eq!(store.roll_up_activity(hour + Duration::minutes(59)).await.unwrap(), 0, "not settled yet");
    assert_eq!(store.roll_up_activity(hour + Duration::minutes(61)).await.unwrap(), 1);

    let bounds = [hour - Duration::hours(1), hour, hour + Duration::hours(1)];
    let points = store.activity_series(&bounds).await.unwrap();
    assert_eq!(points.iter().map(|p| p.accepted).collect::<Vec<_>>(), [1, 3]);
    // From the last microsecond before the hour: that one directly, the
    // hour from the rollup.
    assert_eq!(accepted(&store.activity(hour - tiny).await.unwrap()), 4);
    assert_eq!(accepted(&store.activity(hour).await.unwrap()), 3);
    assert_eq!(accepted(&store.activity(hour + tiny).await.unwrap()), 2);
}

/// Concurrent roll-ups (as from several replicas) add each hour once, and
/// a range left behind the horizon is replaced, not extended.
pub async fn racing_roll_ups_add_each_hour_once(store: StoreRef) {
    let scope = fresh_scope();
    let now = now();
    for hours in [2, 20, 150] {
        arrive(&store, &scope, "ORDERS05", now - Duration::hours(hours), true).await;
    }
    let direct = readings(&store, now).await;
    assert_eq!(store.roll_up_activity(now - Duration::days(10)).await.unwrap(), HORIZON);
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.roll_up_activity(now).await.unwrap() })
        })
        .collect();
    let mut added = 0;
    for racer in racers {
        added += racer.await.unwrap();
    }
    assert_eq!(added, HORIZON, "the whole horizon again, once");
    assert_eq!(readings(&store, now).await, direct);
}

//! The overview's delivery backlog: per destination, pending and failed
//! counts and the oldest pending delivery; a destination without
//! deliveries shows zeros and no oldest one.

use chrono::Duration;

use super::support::*;
use sqlx::types::Json;

use crate::{AttemptRow, DestinationRow, FinishedAttempt, SOURCE_CONFIG, Verdict};

fn destination(id: &str, scope: &Scope, types: Option<&[&str]>) -> DestinationRow {
    DestinationRow {
        id: id.into(),
        tenant_id: scope.tenant_id.clone(),
        environment_id: scope.environment_id.clone(),
        message_types: types.map(|t| Json(t.iter().map(|s| s.to_string()).collect())),
        enabled: true,
        definition: Json(serde_json::json!({ "url": "http://127.0.0.1:9/" })),
        source: SOURCE_CONFIG.into(),
        updated_at: now(),
    }
}

/// Three messages to `{tag}-all` (one of them failed), none to `{tag}-none`.
pub async fn delivery_backlog_per_destination(store: StoreRef) {
    let scope = fresh_scope();
    let tag = scope.tenant_id.clone();
    let (all, none) = (format!("{tag}-all"), format!("{tag}-none"));
    let rows = [destination(&all, &scope, None), destination(&none, &scope, Some(&["NO.SUCH.TYPE"]))];
    store.seed_destinations(&rows).await.expect("seed");
    let t0 = now() - Duration::hours(2);
    let mut received = Vec::new();
    for i in 0..3 {
        let at = t0 + Duration::minutes(i);
        let out =
            processed(ingest_at(&store, &scope, None, vec![message(Some(&format!("bl-{i}")))], at).await);
        received.push((outcome_id(&out[0]), at));
    }
    let claimed = store.claim_deliveries(&all, now(), now() + Duration::minutes(1), 1).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let attempt = AttemptRow {
        attempted_at: now(),
        status_code: Some(410),
        latency_ms: 3,
        error: Some("HTTP 410".into()),
        response_prefix: None,
    };
    let finished = FinishedAttempt {
        message_id: claimed[0].message_id,
        destination_id: all.clone(),
        attempt,
        verdict: Verdict::Failed,
        lease_until: claimed[0].lease_until,
        sap_status: false,
    };
    store.finish_delivery(&finished).await.unwrap();
    let oldest = received.iter().filter(|(id, _)| *id != claimed[0].message_id).map(|(_, at)| *at).min();

    let backlog = store.delivery_backlog().await.unwrap();
    let mine: Vec<_> = backlog.iter().filter(|b| b.tenant_id == scope.tenant_id).collect();
    assert_eq!(mine.len(), 2, "{backlog:?}");
    let (a, n) = (mine[0], mine[1]);
    assert_eq!((a.destination_id.as_str(), a.pending, a.failed), (all.as_str(), 2, 1));
    assert_eq!(
        (a.oldest_pending_at, a.oldest_pending_due_at),
        (oldest, oldest),
        "created and due at receipt"
    );
    assert_eq!(a.environment_id, scope.environment_id);
    assert_eq!((n.destination_id.as_str(), n.pending, n.failed), (none.as_str(), 0, 0));
    assert_eq!((n.oldest_pending_at, n.oldest_pending_due_at), (None, None));
}

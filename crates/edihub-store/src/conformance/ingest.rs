//! Single-request behaviour: accept, duplicate, windows, keys, scopes, packets.

use chrono::Duration;

use super::*;
use crate::{AuditFilter, DUPLICATE_BLOCKED, KEY_MISMATCH};

/// New → accepted; same fingerprint → duplicate of the original, audited.
pub async fn new_then_duplicate(store: StoreRef) {
    let scope = fresh_scope();
    let t = now();
    let first = processed(ingest_at(&store, &scope, None, vec![message(Some("fp-a"))], t).await);
    let MessageOutcome::Accepted(original) = &first[0] else { panic!("first must be accepted") };
    let second = processed(ingest_at(&store, &scope, None, vec![message(Some("fp-a"))], t).await);
    match &second[0] {
        MessageOutcome::Duplicate { existing, detected_by } => {
            assert_eq!(existing, original, "the duplicate describes the stored original");
            assert_eq!(*detected_by, DetectedBy::Fingerprint);
        }
        other => panic!("expected duplicate, got {other:?}"),
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), 1);
    let stored = store.get_message(original.id).await.unwrap().expect("stored");
    assert_eq!(stored.payload, b"<ORDERS05/>");
    assert_eq!(stored.fingerprint.as_deref(), Some("fp-a"));
    assert_eq!(stored.received_at, t);
    let filter = AuditFilter {
        tenant: Some(scope.tenant_id.clone()),
        action: Some(DUPLICATE_BLOCKED.into()),
        limit: 10,
        ..Default::default()
    };
    let events = store.list_audit(&filter).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].message_id, Some(original.id));
    assert_eq!(events[0].fingerprint.as_deref(), Some("fp-a"));
    assert_eq!(events[0].detected_by.as_deref(), Some("fingerprint"));
}

/// Messages without a fingerprint are never duplicates of each other.
pub async fn no_fingerprint_never_collides(store: StoreRef) {
    let scope = fresh_scope();
    for _ in 0..3 {
        let out = processed(ingest_at(&store, &scope, None, vec![message(None)], now()).await);
        assert!(matches!(out[0], MessageOutcome::Accepted(_)));
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), 3);
}

/// Inside the window a repeat is a duplicate; after it, the repeat is new and
/// becomes the original for later repeats.
pub async fn window_expiry_admits_again(store: StoreRef) {
    let scope = fresh_scope();
    let t0 = now();
    let mut m = message(Some("fp-w"));
    m.window_seconds = 2;
    let a = processed(ingest_at(&store, &scope, None, vec![m.clone()], t0).await);
    let inside = t0 + Duration::milliseconds(1999);
    let b = processed(ingest_at(&store, &scope, None, vec![message_like(&m)], inside).await);
    assert_eq!(outcome_id(&b[0]), outcome_id(&a[0]), "inside the window: duplicate");
    let after = t0 + Duration::seconds(2);
    let c = processed(ingest_at(&store, &scope, None, vec![message_like(&m)], after).await);
    let MessageOutcome::Accepted(renewed) = &c[0] else { panic!("after the window: new, got {c:?}") };
    let d = processed(ingest_at(&store, &scope, None, vec![message_like(&m)], after).await);
    assert_eq!(outcome_id(&d[0]), renewed.id, "the new message is the new original");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 2);
}

fn message_like(m: &NewMessage) -> NewMessage {
    NewMessage { id: uuid::Uuid::now_v7(), ..m.clone() }
}

/// The same fingerprint in two environments is two messages.
pub async fn scopes_are_isolated(store: StoreRef) {
    let a = fresh_scope();
    let b = Scope::new(a.tenant_id.clone(), "qa");
    let k = key("same-key", "sha-1");
    let x = processed(ingest_at(&store, &a, Some(k.clone()), vec![message(Some("fp"))], now()).await);
    let y = processed(ingest_at(&store, &b, Some(k), vec![message(Some("fp"))], now()).await);
    assert!(matches!(x[0], MessageOutcome::Accepted(_)));
    assert!(matches!(y[0], MessageOutcome::Accepted(_)), "other environment: new, got {y:?}");
    assert_eq!(store.count_messages(&a).await.unwrap(), 1);
    assert_eq!(store.count_messages(&b).await.unwrap(), 1);
}

/// A repeated key replays the first response; another payload is refused;
/// the replay policy answers with the first response anyway.
pub async fn idempotency_key_replay_and_mismatch(store: StoreRef) {
    let scope = fresh_scope();
    let first = ingest_at(&store, &scope, Some(key("k1", "sha-1")), vec![message(Some("f1"))], now()).await;
    let IngestOutcome::Processed(answer) = first else { panic!("first is processed") };
    assert!(answer.outcomes[0].is_new());
    // The repeat carries a message with another fingerprint: the key decides first.
    let again = ingest_at(&store, &scope, Some(key("k1", "sha-1")), vec![message(Some("f2"))], now()).await;
    assert_eq!(again, IngestOutcome::Replayed(Replay::Answer(answer.clone())));
    let other = ingest_at(&store, &scope, Some(key("k1", "sha-2")), vec![message(Some("f3"))], now()).await;
    assert_eq!(other, IngestOutcome::KeyMismatch);
    let mut lenient = key("k1", "sha-3");
    lenient.on_reuse = KeyReusePolicy::Replay;
    let replayed = ingest_at(&store, &scope, Some(lenient), vec![message(Some("f4"))], now()).await;
    assert_eq!(replayed, IngestOutcome::Replayed(Replay::Answer(answer)));
    assert_eq!(store.count_messages(&scope).await.unwrap(), 1, "only the first stored anything");
    let all = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 10, ..Default::default() };
    let events = store.list_audit(&all).await.unwrap();
    let actions: Vec<&str> = events.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, [DUPLICATE_BLOCKED, KEY_MISMATCH, DUPLICATE_BLOCKED]);
    assert!(events.iter().all(|e| e.idempotency_key.as_deref() == Some("k1")));
    assert_eq!(events[0].detected_by.as_deref(), Some("idempotency_key"));
}

/// A packet is processed per message, in order, and an IDoc repeating an
/// earlier one of the same packet is a duplicate of it.
pub async fn packet_outcomes_in_order(store: StoreRef) {
    let scope = fresh_scope();
    processed(ingest_at(&store, &scope, None, vec![message(Some("p2"))], now()).await);
    let packet = vec![message(Some("p1")), message(Some("p2")), message(Some("p3")), message(Some("p1"))];
    let out = processed(ingest_at(&store, &scope, None, packet, now()).await);
    assert!(matches!(out[0], MessageOutcome::Accepted(_)));
    assert!(matches!(out[1], MessageOutcome::Duplicate { .. }));
    assert!(matches!(out[2], MessageOutcome::Accepted(_)));
    assert_eq!(outcome_id(&out[3]), outcome_id(&out[0]));
    assert_eq!(store.count_messages(&scope).await.unwrap(), 3);
    // Every stored IDoc of the packet reads the whole body, stored once.
    for o in [&out[0], &out[2]] {
        let row = store.get_message(outcome_id(o)).await.unwrap().expect("stored");
        assert_eq!(row.payload, b"<ORDERS05/>");
    }
}

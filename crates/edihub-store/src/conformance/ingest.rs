//! Single-request behaviour: accept, duplicate, windows, keys, scopes, packets.

use chrono::Duration;

use super::support::*;
use crate::{
    AuditFilter, DUPLICATE_BLOCKED, INTERCHANGE_DUPLICATE_BLOCKED, INTERCHANGE_MISMATCH, KEY_MISMATCH,
};

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

/// An interchange claim blocks within its window and is released after
/// it: a repeat at the window's end is new and claims the key anew, whose
/// window starts then. Through the group insert (one message) and the
/// transaction (two) alike; a key without a window is untouched by time.
pub async fn interchange_window_releases_its_claim(store: StoreRef) {
    let scope = fresh_scope();
    let t = now();
    let claim = |k: &str| KeyClaim {
        kind: DetectedBy::Interchange,
        on_reuse: KeyReusePolicy::Replay,
        window_seconds: Some(60),
        ..key(k, "sha-ic")
    };
    for (ic, count) in [("X12|ZZ:A|ZZ:B|1", 1_usize), ("X12|ZZ:A|ZZ:B|2", 2)] {
        let messages = |tag: &str| (0..count).map(|i| message(Some(&format!("{ic}-{tag}-{i}")))).collect();
        let first = processed(ingest_at(&store, &scope, Some(claim(ic)), messages("a"), t).await);
        assert!(first.iter().all(MessageOutcome::is_new));
        // Within the window (its last second): the first answer, nothing stored.
        let within =
            ingest_at(&store, &scope, Some(claim(ic)), messages("b"), t + Duration::seconds(59)).await;
        assert!(matches!(within, IngestOutcome::Replayed(_)), "{ic}: within the window: {within:?}");
        // At its end: a new interchange, stored, and the claim's window starts again.
        let later = t + Duration::seconds(60);
        let after = processed(ingest_at(&store, &scope, Some(claim(ic)), messages("c"), later).await);
        assert!(after.iter().all(MessageOutcome::is_new), "{ic}: after the window");
        let again =
            ingest_at(&store, &scope, Some(claim(ic)), messages("d"), later + Duration::seconds(30)).await;
        assert_eq!(
            again,
            IngestOutcome::Replayed(Replay::Answer(Answer {
                outcomes: after,
                envelope: None,
                leased: Vec::new()
            }))
        );
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), 6, "two sends of each interchange stored");
    // A claim that refuses reuse (as interchanges do): other content under
    // the number is a mismatch, audited as one, and stores nothing; the
    // same content replays.
    let strict = |sha: &str| KeyClaim {
        on_reuse: KeyReusePolicy::Reject,
        request_sha256: sha.into(),
        ..claim("X12|ZZ:A|ZZ:B|3")
    };
    processed(ingest_at(&store, &scope, Some(strict("sha-ic")), vec![message(Some("s1"))], t).await);
    let other = ingest_at(&store, &scope, Some(strict("sha-other")), vec![message(Some("s2"))], t).await;
    assert_eq!(other, IngestOutcome::KeyMismatch);
    let same = ingest_at(&store, &scope, Some(strict("sha-ic")), vec![message(Some("s3"))], t).await;
    assert!(matches!(same, IngestOutcome::Replayed(_)), "{same:?}");
    let events = store
        .list_audit(&AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 2, ..Default::default() })
        .await
        .unwrap();
    let actions: Vec<&str> = events.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, [INTERCHANGE_DUPLICATE_BLOCKED, INTERCHANGE_MISMATCH]);
    assert_eq!(events[1].details.0["same_payload"], false);
    assert_eq!(events[1].detected_by.as_deref(), Some("interchange"));
    assert_eq!(store.count_messages(&scope).await.unwrap(), 7);
    // An Idempotency-Key (no window) still replays a day later.
    let plain = key("k-plain", "sha-p");
    processed(ingest_at(&store, &scope, Some(plain.clone()), vec![message(Some("p1"))], t).await);
    let day = ingest_at(&store, &scope, Some(plain), vec![message(Some("p2"))], t + Duration::days(1)).await;
    assert!(matches!(day, IngestOutcome::Replayed(_)));
}

/// `size` bytes of every value 0–255 in a pattern of its own (`seed`), so
/// a payload that lost, moved or re-encoded a byte differs.
fn binary_payload(size: usize, seed: u8) -> bytes::Bytes {
    (0..size)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Payloads of a megabyte and more (which PostgreSQL receives by `COPY`,
/// not as a bound parameter) are stored byte for byte: a packet's shared
/// body once for all its IDocs, a body of its own in the next request;
/// their duplicates and key replays answer as small ones do; a request
/// that fails stores none of them and leaves nothing behind for the next.
pub async fn large_payloads_are_stored_whole(store: StoreRef) {
    let scope = fresh_scope();
    let body = binary_payload(3 * 1024 * 1024 + 5, 7);
    let packet: Vec<NewMessage> = (0..3)
        .map(|i| NewMessage {
            packet_index: i,
            payload: body.clone(),
            ..message(Some(&format!("fp-big-{i}")))
        })
        .collect();
    let first = ingest_at(&store, &scope, Some(key("k-big", "sha-big")), packet.clone(), now()).await;
    let IngestOutcome::Processed(answer) = first else { panic!("first is processed: {first:?}") };
    assert!(answer.outcomes.iter().all(MessageOutcome::is_new), "{answer:?}");
    let mut other = message(Some("fp-other"));
    other.payload = binary_payload(1024 * 1024, 91);
    assert!(processed(ingest_at(&store, &scope, None, vec![other.clone()], now()).await)[0].is_new());
    let expected = packet.iter().map(|m| (m.id, &body)).chain([(other.id, &other.payload)]);
    for (id, payload) in expected {
        let stored = store.get_message(id).await.unwrap().expect("stored");
        assert_eq!(stored.payload.len(), payload.len(), "message {id}");
        assert!(stored.payload == payload[..], "message {id} is stored byte for byte");
    }

    let again = ingest_at(&store, &scope, Some(key("k-big", "sha-big")), packet.clone(), now()).await;
    assert_eq!(again, IngestOutcome::Replayed(Replay::Answer(answer)), "the key replays");
    let repeat = NewMessage { id: uuid::Uuid::now_v7(), ..other.clone() };
    let dup = processed(ingest_at(&store, &scope, None, vec![repeat], now()).await);
    assert!(
        matches!(&dup[0], MessageOutcome::Duplicate { existing, .. } if existing.id == other.id),
        "a repeat of the large message is its duplicate: {dup:?}"
    );

    // The second IDoc reuses a stored id: the request fails as a whole.
    let doomed_body = binary_payload(2 * 1024 * 1024, 3);
    let doomed = NewMessage { payload: doomed_body.clone(), ..message(Some("fp-doomed")) };
    let taken = NewMessage { packet_index: 1, payload: doomed_body, fingerprint: None, ..other.clone() };
    let req = IngestRequest {
        scope: &scope,
        key: None,
        messages: vec![doomed.clone(), taken],
        now: now(),
        envelope: None,
        lease: None,
    };
    assert!(store.ingest(req).await.is_err(), "a request with a taken id fails");
    assert!(store.get_message(doomed.id).await.unwrap().is_none(), "nothing of the failed request is kept");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 4);

    let alone = processed(ingest_at(&store, &scope, None, vec![doomed.clone()], now()).await);
    assert!(alone[0].is_new(), "the large message alone is stored afterwards: {alone:?}");
    let stored = store.get_message(doomed.id).await.unwrap().expect("stored");
    assert!(stored.payload == doomed.payload[..], "stored byte for byte");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 5);
}

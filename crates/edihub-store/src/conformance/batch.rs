//! The group insert (see `crate::ingest::group`): many requests' new messages in one
//! statement must behave exactly like one transaction per request.
//!
//! The requests run concurrently on the multi-threaded runtime, so they
//! really do share statements; what a batch holds is up to timing, which is
//! why every check asserts what must hold for any grouping.

use std::collections::HashSet;

use super::support::*;
use crate::AuditFilter;

/// How many requests each check sends at once.
const BURST: usize = 64;

/// A burst of distinct new messages, with and without fingerprints: each is
/// accepted under its own id, stored with its own payload, and nothing is
/// audited as a duplicate.
pub async fn concurrent_new_messages_all_stored(store: StoreRef) {
    let scope = fresh_scope();
    let mut tasks = Vec::new();
    for i in 0..BURST {
        let (store, scope) = (store.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            let fp = (i % 4 != 0).then(|| format!("burst-{i}"));
            let mut m = message(fp.as_deref());
            m.payload = bytes::Bytes::from(format!("<ORDERS05 n='{i}'/>"));
            let id = m.id;
            let out = processed(ingest_at(&store, &scope, None, vec![m], now()).await);
            (i, id, out)
        }));
    }
    let mut ids = HashSet::new();
    for t in tasks {
        let (i, id, out) = t.await.expect("task");
        assert!(matches!(&out[0], MessageOutcome::Accepted(s) if s.id == id), "message {i}: {out:?}");
        let row = store.get_message(id).await.unwrap().expect("stored");
        assert_eq!(row.payload, format!("<ORDERS05 n='{i}'/>").into_bytes(), "message {i} has its own body");
        ids.insert(id);
    }
    assert_eq!(ids.len(), BURST);
    assert_eq!(store.count_messages(&scope).await.unwrap(), BURST as i64);
    let events = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 500, ..Default::default() };
    assert!(store.list_audit(&events).await.unwrap().is_empty(), "no duplicates, no events");
}

/// A row the database refuses (here: an id that is already taken) fails only
/// its own request; the requests it shared a statement with are stored.
pub async fn bad_row_fails_only_its_request(store: StoreRef) {
    let scope = fresh_scope();
    let taken = message(None);
    let taken_id = taken.id;
    processed(ingest_at(&store, &scope, None, vec![taken.clone()], now()).await);
    let mut tasks = Vec::new();
    for i in 0..BURST {
        let (store, scope, taken) = (store.clone(), scope.clone(), taken.clone());
        tasks.push(tokio::spawn(async move {
            // Every 16th request reuses the taken id.
            let m = if i % 16 == 0 { taken } else { message(Some(&format!("ok-{i}"))) };
            let req = IngestRequest {
                scope: &scope,
                key: None,
                messages: vec![m],
                now: now(),
                envelope: None,
                lease: None,
            };
            store.ingest(req).await
        }));
    }
    let (mut stored, mut failed) = (0, 0);
    for t in tasks {
        match t.await.expect("task") {
            Ok(out) => {
                let out = processed(out);
                assert!(matches!(&out[0], MessageOutcome::Accepted(s) if s.id != taken_id), "{out:?}");
                stored += 1;
            }
            Err(_) => failed += 1,
        }
    }
    assert_eq!((stored, failed), (BURST - BURST / 16, BURST / 16));
    assert_eq!(store.count_messages(&scope).await.unwrap(), (1 + stored) as i64);
}

/// Storing a message whose own row is already there (a group insert that
/// committed but whose answer was lost) accepts it once, without calling it
/// a duplicate of itself.
pub async fn own_row_is_not_a_duplicate(store: StoreRef) {
    let scope = fresh_scope();
    let m = message(Some("own"));
    let t = now();
    let first = processed(ingest_at(&store, &scope, None, vec![m.clone()], t).await);
    let again = processed(ingest_at(&store, &scope, None, vec![m.clone()], t).await);
    assert!(matches!(&first[0], MessageOutcome::Accepted(s) if s.id == m.id));
    assert!(matches!(&again[0], MessageOutcome::Accepted(s) if s.id == m.id), "{again:?}");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 1);
    let events = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 10, ..Default::default() };
    assert!(store.list_audit(&events).await.unwrap().is_empty());
}

/// Sends `count` keyless repeats of fingerprint `fp` at once (the group
/// insert settles them) and checks that each is answered as a duplicate of
/// `original`.
pub(super) async fn duplicates_at_once(
    store: &StoreRef,
    scope: &Scope,
    fp: &str,
    count: usize,
    original: uuid::Uuid,
) {
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let (store, scope, fp) = (store.clone(), scope.clone(), fp.to_owned());
            tokio::spawn(async move {
                processed(ingest_at(&store, &scope, None, vec![message(Some(&fp))], now()).await)
            })
        })
        .collect();
    for t in tasks {
        let out = t.await.expect("task");
        assert!(
            matches!(&out[0], MessageOutcome::Duplicate { existing, detected_by: DetectedBy::Fingerprint }
                if existing.id == original),
            "{out:?}"
        );
    }
}

/// Duplicates settled by the group insert are answered and audited exactly
/// like those found by the settle transaction (here: inside a packet, which
/// always takes the transaction).
pub async fn grouped_duplicates_are_audited_like_single_ones(store: StoreRef) {
    let scope = fresh_scope();
    let original = processed(ingest_at(&store, &scope, None, vec![message(Some("g"))], now()).await);
    let original_id = outcome_id(&original[0]);

    // A burst of keyless repeats: the group insert settles them.
    duplicates_at_once(&store, &scope, "g", BURST, original_id).await;
    // The same repeat as the first IDoc of a packet: the transaction path.
    let packet = vec![message(Some("g")), message(Some("g-other"))];
    let out = processed(ingest_at(&store, &scope, None, packet, now()).await);
    assert_eq!(outcome_id(&out[0]), original_id);

    let filter = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 500, ..Default::default() };
    let events = store.list_audit(&filter).await.unwrap();
    assert_eq!(events.len(), BURST + 1, "one event per blocked duplicate");
    let shape = |e: &crate::AuditEvent| {
        (
            e.action.clone(),
            e.environment_id.clone(),
            e.message_type.clone(),
            e.fingerprint.clone(),
            e.idempotency_key.clone(),
            e.detected_by.clone(),
            e.message_id,
            e.details.0.clone(),
        )
    };
    let from_packet = shape(&events[0]);
    assert_eq!(from_packet.6, Some(original_id));
    assert_eq!(from_packet.7["docnum"], "4711");
    for e in &events[1..] {
        assert_eq!(shape(e), from_packet, "a grouped duplicate's event equals the transaction's");
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), 2);
}

/// A burst of keyed requests, each key sent twice at once: every key is
/// processed once and its twin replays that very response. Then a burst
/// reusing a fourth of the keys with other bodies: each is refused. Every
/// repeat is audited.
pub async fn keyed_burst_claims_each_key_once(store: StoreRef) {
    let scope = fresh_scope();
    let keys = BURST / 2;
    let send = |k: usize, sha: String| {
        let (store, scope) = (store.clone(), scope.clone());
        tokio::spawn(async move {
            ingest_at(&store, &scope, Some(key(&format!("k-{k}"), &sha)), vec![message(None)], now()).await
        })
    };
    let tasks: Vec<_> = (0..BURST).map(|i| (i % keys, send(i % keys, format!("sha-{}", i % keys)))).collect();
    let mut first: Vec<Option<Answer>> = vec![None; keys];
    let mut replays = Vec::new();
    for (k, t) in tasks {
        match t.await.expect("task") {
            IngestOutcome::Processed(answer) => {
                assert!(first[k].replace(answer).is_none(), "key {k} processed twice");
            }
            IngestOutcome::Replayed(Replay::Answer(answer)) => replays.push((k, answer)),
            IngestOutcome::Replayed(other) => panic!("key {k}: a new key replays its answer, got {other:?}"),
            IngestOutcome::KeyMismatch => panic!("key {k}: same body is no mismatch"),
        }
    }
    assert_eq!(replays.len(), BURST - keys);
    for (k, answer) in replays {
        assert_eq!(Some(answer), first[k], "key {k} replays its first answer");
    }
    let reuse: Vec<_> = (0..keys / 4).map(|k| send(k, format!("other-{k}"))).collect();
    for t in reuse {
        assert_eq!(t.await.expect("task"), IngestOutcome::KeyMismatch);
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), keys as i64);
    let events = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 500, ..Default::default() };
    assert_eq!(store.list_audit(&events).await.unwrap().len(), BURST - keys + keys / 4);
}

/// A keyed request meeting a holder whose window has passed: the settle
/// transaction releases the holder and stores the message, and its key
/// then replays that answer.
pub async fn keyed_request_after_an_expired_window(store: StoreRef) {
    let scope = fresh_scope();
    let t0 = now();
    let mut m = message(Some("fp-kw"));
    m.window_seconds = 2;
    let a = processed(ingest_at(&store, &scope, None, vec![m.clone()], t0).await);
    let later = t0 + chrono::Duration::seconds(3);
    let k = key("after-window", "sha-kw");
    let retry = NewMessage { id: uuid::Uuid::now_v7(), ..m.clone() };
    let b = processed(ingest_at(&store, &scope, Some(k.clone()), vec![retry.clone()], later).await);
    let MessageOutcome::Accepted(renewed) = &b[0] else { panic!("after the window: new, got {b:?}") };
    assert_ne!(renewed.id, outcome_id(&a[0]));
    let again =
        ingest_at(&store, &scope, Some(k), vec![NewMessage { id: uuid::Uuid::now_v7(), ..retry }], later)
            .await;
    assert!(matches!(again, IngestOutcome::Replayed(Replay::Answer(_))), "{again:?}");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 2);
}

/// A burst of keyed requests with windowed keys (an interchange's), each
/// key sent twice at once, every message repeating the fingerprint of a
/// message whose window has passed: the batches release each expired
/// holder and store the message as the new original, once per key; each
/// twin replays its key's answer, audited.
pub async fn keyed_burst_after_expired_windows(store: StoreRef) {
    let scope = fresh_scope();
    let t0 = now();
    let keys = BURST / 2;
    let mut old = Vec::new();
    for k in 0..keys {
        let mut m = message(Some(&format!("kw-{k}")));
        m.window_seconds = 2;
        old.push(outcome_id(&processed(ingest_at(&store, &scope, None, vec![m], t0).await)[0]));
    }
    let later = t0 + chrono::Duration::seconds(3);
    let tasks: Vec<_> = (0..BURST)
        .map(|i| {
            let (store, scope, k) = (store.clone(), scope.clone(), i % keys);
            let claim =
                KeyClaim { window_seconds: Some(3600), ..key(&format!("kw-key-{k}"), &format!("sha-{k}")) };
            let m = message(Some(&format!("kw-{k}")));
            tokio::spawn(async move { (k, ingest_at(&store, &scope, Some(claim), vec![m], later).await) })
        })
        .collect();
    let mut first: Vec<Option<Answer>> = vec![None; keys];
    let mut replays = Vec::new();
    for t in tasks {
        match t.await.expect("task") {
            (k, IngestOutcome::Processed(answer)) => {
                let MessageOutcome::Accepted(m) = &answer.outcomes[0] else {
                    panic!("key {k}: past the window the message is new, got {answer:?}")
                };
                assert_ne!(m.id, old[k], "key {k}: a new original");
                assert!(first[k].replace(answer).is_none(), "key {k} processed twice");
            }
            (k, IngestOutcome::Replayed(Replay::Answer(answer))) => replays.push((k, answer)),
            (k, other) => panic!("key {k}: got {other:?}"),
        }
    }
    assert_eq!(replays.len(), BURST - keys);
    for (k, answer) in replays {
        assert_eq!(Some(answer), first[k], "key {k} replays its first answer");
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), (2 * keys) as i64);
    let events = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 500, ..Default::default() };
    let audited = store.list_audit(&events).await.unwrap();
    assert_eq!(audited.len(), BURST - keys, "one event per replay, none for a released holder");
}

/// A burst of keyed requests, each with its own new key, where every third
/// message repeats the fingerprint of a message stored before the burst:
/// the new ones are stored once, the repeats are duplicates of the stored
/// originals with their audit events, and every key then replays exactly
/// the answer its request got. (On PostgreSQL a keyed batch is first tried
/// as one statement, which a repeated fingerprint fails; the batch is then
/// settled by its transaction.)
pub async fn keyed_burst_with_duplicates_settles_each(store: StoreRef) {
    let scope = fresh_scope();
    let originals: Vec<_> = (0..BURST.div_ceil(3)).map(|i| message(Some(&format!("kd-{i}")))).collect();
    let mut original_ids = Vec::new();
    for m in &originals {
        original_ids
            .push(outcome_id(&processed(ingest_at(&store, &scope, None, vec![m.clone()], now()).await)[0]));
    }
    let request = |i: usize| {
        let fp = if i.is_multiple_of(3) { format!("kd-{}", i / 3) } else { format!("kd-new-{i}") };
        (key(&format!("kd-key-{i}"), &format!("sha-{i}")), message(Some(&fp)))
    };
    let tasks: Vec<_> = (0..BURST)
        .map(|i| {
            let (store, scope) = (store.clone(), scope.clone());
            let (k, m) = request(i);
            tokio::spawn(async move { ingest_at(&store, &scope, Some(k), vec![m], now()).await })
        })
        .collect();
    let mut answers = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        let outcomes = processed(t.await.expect("task"));
        match (&outcomes[0], i % 3) {
            (MessageOutcome::Duplicate { existing, .. }, 0) => assert_eq!(existing.id, original_ids[i / 3]),
            (MessageOutcome::Accepted(_), 1 | 2) => {}
            (other, _) => panic!("request {i}: got {other:?}"),
        }
        answers.push(outcomes);
    }
    let duplicates = BURST.div_ceil(3);
    assert_eq!(store.count_messages(&scope).await.unwrap(), (originals.len() + BURST - duplicates) as i64);
    let events = AuditFilter { tenant: Some(scope.tenant_id.clone()), limit: 500, ..Default::default() };
    let audited = store.list_audit(&events).await.unwrap();
    assert_eq!(audited.len(), duplicates, "one duplicate_blocked event per repeat");
    for (i, first) in answers.iter().enumerate() {
        let (k, m) = request(i);
        let again =
            ingest_at(&store, &scope, Some(k), vec![NewMessage { id: uuid::Uuid::now_v7(), ..m }], now())
                .await;
        let IngestOutcome::Replayed(Replay::Answer(answer)) = again else { panic!("request {i}: {again:?}") };
        assert_eq!(&answer.outcomes, first, "request {i} replays its first answer");
    }
    // Each replay's event names the message its key answered for: the new
    // message, or the original a duplicate repeated.
    let audited = store.list_audit(&events).await.unwrap();
    let replays: Vec<_> =
        audited.iter().filter(|e| e.detected_by.as_deref() == Some("idempotency_key")).collect();
    assert_eq!(replays.len(), BURST, "one event per replay");
    for e in replays {
        let key = e.idempotency_key.as_deref().expect("the key");
        let i: usize = key.strip_prefix("kd-key-").and_then(|n| n.parse().ok()).expect("a burst key");
        let (MessageOutcome::Accepted(m) | MessageOutcome::Duplicate { existing: m, .. }) = &answers[i][0];
        assert_eq!(e.message_id, Some(m.id), "{key}");
        assert_eq!(e.message_type.as_deref(), Some(m.message_type.as_str()), "{key}");
        assert_eq!(e.fingerprint, m.fingerprint, "{key}");
        assert!(e.fingerprint.is_some(), "{key}: every burst message has a fingerprint");
    }
}

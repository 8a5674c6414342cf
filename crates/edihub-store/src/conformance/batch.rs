//! The group insert (see `crate::batch`): many requests' new messages in one
//! statement must behave exactly like one transaction per request.
//!
//! The requests run concurrently on the multi-threaded runtime, so they
//! really do share statements; what a batch holds is up to timing, which is
//! why every check asserts what must hold for any grouping.

use std::collections::HashSet;

use super::*;
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
            let req =
                IngestRequest { scope: &scope, key: None, messages: vec![m], now: now(), render: &render };
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

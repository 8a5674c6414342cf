//! Real concurrency: many tasks racing for one fingerprint or one key.
//!
//! The tasks run on the multi-threaded runtime against a real pool, so the
//! database's unique indexes, not test ordering, decide who wins.

use std::collections::HashSet;

use super::support::*;
use crate::{AuditFilter, DUPLICATE_BLOCKED};

/// How many requests race in each check.
pub const RACERS: usize = 48;

/// 48 concurrent ingests of one fingerprint: one accepted, 47 duplicates of it,
/// one stored message, 47 audit events.
pub async fn racing_fingerprints_store_one(store: StoreRef) {
    let scope = fresh_scope();
    let t = now();
    let mut tasks = Vec::new();
    for _ in 0..RACERS {
        let (store, scope) = (store.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            processed(ingest_at(&store, &scope, None, vec![message(Some("race"))], t).await)
        }));
    }
    one_winner(&store, &scope, tasks).await;
}

/// The outcomes of [`RACERS`] racers for one fingerprint in `scope`: one
/// accepted, every other a duplicate naming it, one stored message, one
/// audit event per loser.
pub(super) async fn one_winner(
    store: &StoreRef,
    scope: &Scope,
    tasks: Vec<tokio::task::JoinHandle<Vec<MessageOutcome>>>,
) {
    let mut accepted = 0;
    let mut ids = HashSet::new();
    for t in tasks {
        let out = t.await.expect("task");
        accepted += usize::from(matches!(out[0], MessageOutcome::Accepted(_)));
        ids.insert(outcome_id(&out[0]));
    }
    assert_eq!(accepted, 1, "exactly one winner");
    assert_eq!(ids.len(), 1, "every loser names the winner");
    assert_eq!(store.count_messages(scope).await.unwrap(), 1);
    assert_eq!(blocked_events(store, scope).await, RACERS - 1);
}

/// 48 concurrent requests with one Idempotency-Key: one processed, 47 replays
/// of its response, one stored message, 47 audit events.
pub async fn racing_keys_store_one(store: StoreRef) {
    let scope = fresh_scope();
    let mut tasks = Vec::new();
    for _ in 0..RACERS {
        let (store, scope) = (store.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            // Distinct fingerprints: only the key can make them duplicates.
            let fp = uuid::Uuid::new_v4().to_string();
            ingest_at(&store, &scope, Some(key("race-key", "sha")), vec![message(Some(&fp))], now()).await
        }));
    }
    let mut first = None;
    let mut replays = Vec::new();
    for t in tasks {
        match t.await.expect("task") {
            IngestOutcome::Processed(answer) => {
                assert!(first.replace(answer).is_none(), "only one request is processed");
            }
            IngestOutcome::Replayed(Replay::Answer(answer)) => replays.push(answer),
            IngestOutcome::Replayed(other) => panic!("a new key replays its answer, got {other:?}"),
            IngestOutcome::KeyMismatch => panic!("same payload is no mismatch"),
        }
    }
    let first = first.expect("one request processed");
    assert_eq!(replays.len(), RACERS - 1);
    assert!(replays.iter().all(|r| *r == first), "every replay is the first response");
    assert_eq!(store.count_messages(&scope).await.unwrap(), 1);
    assert_eq!(blocked_events(&store, &scope).await, RACERS - 1);
}

/// Two packets claiming the same fingerprints in opposite order (a deadlock
/// on PostgreSQL unless retried) both finish, storing each message once.
pub async fn crossed_packets_do_not_deadlock(store: StoreRef) {
    let scope = fresh_scope();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (store, scope) = (store.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            let mut fps = vec!["x1", "x2", "x3"];
            if i % 2 == 1 {
                fps.reverse();
            }
            let msgs = fps.into_iter().map(|f| message(Some(f))).collect();
            processed(ingest_at(&store, &scope, None, msgs, now()).await)
        }));
    }
    for t in tasks {
        assert_eq!(t.await.expect("task").len(), 3);
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), 3);
}

pub(super) async fn blocked_events(store: &StoreRef, scope: &Scope) -> usize {
    let filter = AuditFilter {
        tenant: Some(scope.tenant_id.clone()),
        action: Some(DUPLICATE_BLOCKED.into()),
        limit: 500,
        ..Default::default()
    };
    store.list_audit(&filter).await.unwrap().len()
}

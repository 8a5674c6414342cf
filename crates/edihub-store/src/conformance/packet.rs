//! Large packets (see `crate::ingest::packet`): stored in chunks with the same
//! outcomes as one transaction, re-sent as duplicates settled set-wise, a
//! retry after a partial commit storing only what is missing, a key claimed
//! with the last chunk, and two copies racing storing each IDoc once.

use std::collections::HashSet;

use super::support::*;
use crate::ingest::packet::TX_CHUNK;
use crate::{AuditFilter, DUPLICATE_BLOCKED};

/// More IDocs than two chunks hold, so a packet has three.
const IDOCS: usize = 2 * TX_CHUNK + 88;

/// A packet of `IDOCS` messages with fingerprints `{tag}-0…`, in order.
fn packet(tag: &str) -> Vec<NewMessage> {
    (0..IDOCS)
        .map(|i| {
            let mut m = message(Some(&format!("{tag}-{i}")));
            m.packet_index = i32::try_from(i).expect("small index");
            m
        })
        .collect()
}

/// `message.duplicate_blocked` events of a scope.
async fn duplicate_events(store: &StoreRef, scope: &Scope) -> usize {
    let filter = AuditFilter {
        tenant: Some(scope.tenant_id.clone()),
        action: Some(DUPLICATE_BLOCKED.into()),
        limit: 10_000,
        ..Default::default()
    };
    store.list_audit(&filter).await.expect("audit").len()
}

/// A large packet is stored in order, with in-packet and earlier duplicates
/// settled as in one transaction; its re-send is all duplicates of the
/// first send, each audited once, and stores nothing.
pub async fn large_packet_chunks_and_resend(store: StoreRef) {
    let scope = fresh_scope();
    // One IDoc of the packet was stored before; the last repeats the first.
    let earlier = processed(ingest_at(&store, &scope, None, vec![message(Some("lp-300"))], now()).await);
    let mut first = packet("lp");
    first[IDOCS - 1].fingerprint = Some("lp-0".into());
    let out = processed(ingest_at(&store, &scope, None, first, now()).await);
    assert_eq!(out.len(), IDOCS);
    assert!(
        matches!(&out[300], MessageOutcome::Duplicate { existing, .. } if existing.id == earlier[0].id())
    );
    assert_eq!(outcome_id(&out[IDOCS - 1]), outcome_id(&out[0]), "the in-packet repeat");
    let accepted = out.iter().filter(|o| matches!(o, MessageOutcome::Accepted(_))).count();
    assert_eq!(accepted, IDOCS - 2);
    assert_eq!(store.count_messages(&scope).await.unwrap(), i64::try_from(IDOCS - 1).unwrap());
    // The body is stored once and read by IDocs of every chunk.
    for i in [0, TX_CHUNK + 1, IDOCS - 2] {
        let row = store.get_message(outcome_id(&out[i])).await.unwrap().expect("stored");
        assert_eq!(row.payload, b"<ORDERS05/>", "IDoc {i}");
    }
    assert_eq!(duplicate_events(&store, &scope).await, 2);

    let mut again = packet("lp");
    again[IDOCS - 1].fingerprint = Some("lp-0".into());
    let resent = processed(ingest_at(&store, &scope, None, again, now()).await);
    for (i, (o, first)) in resent.iter().zip(&out).enumerate() {
        assert!(matches!(o, MessageOutcome::Duplicate { .. }), "IDoc {i}: {o:?}");
        assert_eq!(outcome_id(o), outcome_id(first), "IDoc {i} names the original");
    }
    assert_eq!(store.count_messages(&scope).await.unwrap(), i64::try_from(IDOCS - 1).unwrap());
    assert_eq!(duplicate_events(&store, &scope).await, 2 + IDOCS, "one event per blocked IDoc");
}

/// A retry after a partial commit (the first chunks stored, then a crash
/// or a timeout) stores only what is missing.
pub async fn large_packet_retry_stores_only_the_rest(store: StoreRef) {
    let scope = fresh_scope();
    let committed: Vec<NewMessage> = packet("rt").into_iter().take(TX_CHUNK).collect();
    processed(ingest_at(&store, &scope, None, committed, now()).await);
    let out = processed(ingest_at(&store, &scope, None, packet("rt"), now()).await);
    let duplicates = out.iter().take_while(|o| matches!(o, MessageOutcome::Duplicate { .. })).count();
    assert_eq!(duplicates, TX_CHUNK);
    assert!(out[TX_CHUNK..].iter().all(|o| matches!(o, MessageOutcome::Accepted(_))));
    assert_eq!(store.count_messages(&scope).await.unwrap(), i64::try_from(IDOCS).unwrap());
}

/// With an Idempotency-Key, the last chunk stores the response: a repeat
/// replays it without touching the messages, another payload is refused.
pub async fn large_packet_with_a_key(store: StoreRef) {
    let scope = fresh_scope();
    let out = ingest_at(&store, &scope, Some(key("big-1", "sha-a")), packet("kp"), now()).await;
    let IngestOutcome::Processed(answer) = out else { panic!("processed: {out:?}") };
    assert_eq!(answer.outcomes.len(), IDOCS);
    assert!(answer.outcomes.iter().all(MessageOutcome::is_new));
    let replay = ingest_at(&store, &scope, Some(key("big-1", "sha-a")), packet("kp"), now()).await;
    assert_eq!(replay, IngestOutcome::Replayed(Replay::Answer(answer)));
    let other = ingest_at(&store, &scope, Some(key("big-1", "sha-b")), packet("kp2"), now()).await;
    assert_eq!(other, IngestOutcome::KeyMismatch);
    assert_eq!(store.count_messages(&scope).await.unwrap(), i64::try_from(IDOCS).unwrap());
    // The replay is one blocked duplicate (by its key), not one per IDoc.
    assert_eq!(duplicate_events(&store, &scope).await, 1, "one event for the replayed request");
}

/// Two copies of a large packet at once (SAP re-sending while the first is
/// still being stored): each IDoc is stored once, and both answers name the
/// stored IDocs.
pub async fn racing_large_packets_store_each_idoc_once(store: StoreRef) {
    let scope = fresh_scope();
    let (a, b) = tokio::join!(
        ingest_at(&store, &scope, None, packet("rc"), now()),
        ingest_at(&store, &scope, None, packet("rc"), now()),
    );
    let (a, b) = (processed(a), processed(b));
    assert_eq!(store.count_messages(&scope).await.unwrap(), i64::try_from(IDOCS).unwrap());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(outcome_id(x), outcome_id(y), "IDoc {i}: both answers name one message");
        let kinds = [x, y].iter().filter(|o| matches!(o, MessageOutcome::Accepted(_))).count();
        assert_eq!(kinds, 1, "IDoc {i}: exactly one send stored it");
    }
    let ids: HashSet<_> = a.iter().map(outcome_id).collect();
    assert_eq!(ids.len(), IDOCS);
}

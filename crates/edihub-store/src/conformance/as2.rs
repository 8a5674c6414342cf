//! AS2 messages received (`Store::claim_as2_message` and the rest, see
//! `crate::as2`): a Message-ID is claimed once per station and partner, a
//! repeat gets the first MDN byte for byte and its audit event, another
//! payload under it is told apart, a failed message leaves nothing, the
//! asynchronous MDNs are leased once, and retention purges old rows.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};

use super::support::*;
use crate::{
    AS2_DUPLICATE_BLOCKED, AS2_MESSAGE_ID_REUSED, As2Claim, As2Filter, As2Key, As2MdnAttempt, As2Settlement,
    AuditFilter, MDN_PENDING, MDN_PROCESSING, MDN_SENT, NewAs2Message, RetentionStep,
};

/// How many tasks claim one Message-ID at once.
pub const AS2_RACERS: usize = 16;

fn as2_message(
    scope: &Scope,
    partner: &str,
    message_id: &str,
    digest: &str,
    at: DateTime<Utc>,
) -> NewAs2Message {
    NewAs2Message {
        key: As2Key {
            station: format!("HUB-{}", scope.tenant_id),
            partner: partner.into(),
            message_id: message_id.into(),
        },
        scope: scope.clone(),
        payload_sha256: digest.into(),
        mdn_mode: "sync".into(),
        received_at: at,
    }
}

fn settlement(body: &[u8], async_url: Option<&str>, at: DateTime<Utc>) -> As2Settlement {
    As2Settlement {
        mdn_headers: vec![
            ("Content-Type".into(), "multipart/report; boundary=\"b1\"".into()),
            ("Message-ID".into(), "<mdn-1@hub>".into()),
        ],
        mdn_body: body.to_vec(),
        stored_message_id: Some(uuid::Uuid::now_v7()),
        async_url: async_url.map(str::to_string),
        now: at,
    }
}

async fn actions(store: &StoreRef, scope: &Scope, action: &str) -> usize {
    let filter = AuditFilter {
        action: Some(action.into()),
        tenant: Some(scope.tenant_id.clone()),
        limit: 100,
        ..AuditFilter::default()
    };
    store.list_audit(&filter).await.expect("list_audit").len()
}

/// The first claim is new; a repeat with the same payload gets the row with
/// the MDN as settled (byte for byte) and is audited as a blocked
/// duplicate; another payload under the Message-ID is `Reused` and audited
/// so; another partner's same Message-ID is its own; a released claim
/// leaves nothing and may be claimed again.
pub async fn as2_message_ids_are_claimed_once(store: StoreRef) {
    let scope = fresh_scope();
    let at = now();
    let first = as2_message(&scope, "PARTNER", "m1@partner", "aa", at);
    assert_eq!(store.claim_as2_message(&first).await.expect("claim"), As2Claim::New);
    let in_progress = store.claim_as2_message(&first).await.expect("claim");
    let As2Claim::Duplicate(row) = in_progress else { panic!("expected a duplicate, got {in_progress:?}") };
    assert_eq!((row.mdn_status.as_str(), row.mdn()), (MDN_PROCESSING, None), "no MDN before it is settled");

    let mdn = b"--b1\r\nContent-Type: text/plain\r\n\r\nprocessed\r\n--b1--\r\n\xff";
    let settled = settlement(mdn, None, at);
    store.settle_as2_message(&first.key, &settled).await.expect("settle");
    let As2Claim::Duplicate(row) = store.claim_as2_message(&first).await.expect("claim") else {
        panic!("expected a duplicate")
    };
    assert_eq!(row.mdn(), Some((settled.mdn_headers.clone(), mdn.to_vec())), "the MDN as answered");
    assert_eq!((row.mdn_status.as_str(), row.stored_message_id), (MDN_SENT, settled.stored_message_id));
    assert_eq!(actions(&store, &scope, AS2_DUPLICATE_BLOCKED).await, 2);

    let other_payload = as2_message(&scope, "PARTNER", "m1@partner", "bb", at);
    let reused = store.claim_as2_message(&other_payload).await.expect("claim");
    assert!(matches!(&reused, As2Claim::Reused(r) if r.payload_sha256 == "aa"), "{reused:?}");
    assert_eq!(actions(&store, &scope, AS2_MESSAGE_ID_REUSED).await, 1);

    let other_partner = as2_message(&scope, "OTHER", "m1@partner", "bb", at);
    assert_eq!(store.claim_as2_message(&other_partner).await.expect("claim"), As2Claim::New);
    store.release_as2_message(&other_partner.key).await.expect("release");
    assert_eq!(store.as2_message(&other_partner.key).await.expect("get"), None, "a released claim is gone");
    assert_eq!(store.claim_as2_message(&other_partner).await.expect("claim"), As2Claim::New);

    store.release_as2_message(&first.key).await.expect("release");
    assert!(store.as2_message(&first.key).await.expect("get").is_some(), "a settled claim is never released");
    let listed = store
        .list_as2_messages(&As2Filter { partner: Some("PARTNER".into()), limit: 10, ..As2Filter::default() })
        .await
        .expect("list");
    assert!(listed.iter().any(|r| r.key() == first.key));
    assert!(listed.iter().all(|r| r.partner == "PARTNER"));
}

/// 16 tasks claiming one Message-ID at once: exactly one gets `New`, the
/// others the duplicate, each audited.
pub async fn racing_as2_claims_admit_one(store: StoreRef) {
    let scope = fresh_scope();
    let new = as2_message(&scope, "PARTNER", "race@partner", "cc", now());
    let mut tasks = Vec::new();
    for _ in 0..AS2_RACERS {
        let (store, new) = (store.clone(), new.clone());
        tasks.push(tokio::spawn(async move { store.claim_as2_message(&new).await.expect("claim") }));
    }
    let mut new_claims = 0;
    for t in tasks {
        match t.await.expect("task") {
            As2Claim::New => new_claims += 1,
            As2Claim::Duplicate(_) => {}
            As2Claim::Reused(r) => panic!("the same payload read as reused: {r:?}"),
        }
    }
    assert_eq!(new_claims, 1, "exactly one claim wins");
    assert_eq!(actions(&store, &scope, AS2_DUPLICATE_BLOCKED).await, AS2_RACERS - 1);
}

/// An asynchronous MDN is due once settled, leased by one claim at a time,
/// retried when the attempt says so and left alone once sent.
pub async fn as2_async_mdns_are_leased_once(store: StoreRef) {
    let scope = fresh_scope();
    let at = now();
    let new = as2_message(&scope, "PARTNER", "async@partner", "dd", at);
    assert_eq!(store.claim_as2_message(&new).await.expect("claim"), As2Claim::New);
    store
        .settle_as2_message(&new.key, &settlement(b"mdn", Some("http://partner.test/mdn"), at))
        .await
        .expect("settle");
    let ours = |rows: Vec<crate::As2MessageRow>| rows.into_iter().filter(|r| r.key() == new.key).count();
    let lease = at + Duration::seconds(60);
    let mut claims = Vec::new();
    for _ in 0..4 {
        let store = store.clone();
        claims.push(tokio::spawn(async move { store.claim_as2_mdns(at, lease, 100).await.expect("claim") }));
    }
    let mut leased = 0;
    for c in claims {
        leased += ours(c.await.expect("task"));
    }
    assert_eq!(leased, 1, "one lease among concurrent claims");
    let retry = As2MdnAttempt {
        key: new.key.clone(),
        status: MDN_PENDING,
        due_at: Some(at + Duration::seconds(30)),
        error: Some("connection refused".into()),
    };
    store.finish_as2_mdn(&retry).await.expect("finish");
    assert_eq!(ours(store.claim_as2_mdns(at, lease, 100).await.expect("claim")), 0, "not due yet");
    let later = at + Duration::seconds(31);
    let rows = store.claim_as2_mdns(later, later + Duration::seconds(60), 100).await.expect("claim");
    let row = rows.into_iter().find(|r| r.key() == new.key).expect("due again");
    assert_eq!((row.mdn_attempts, row.mdn_error.as_deref()), (2, Some("connection refused")));
    let sent = As2MdnAttempt { key: new.key.clone(), status: MDN_SENT, due_at: None, error: None };
    store.finish_as2_mdn(&sent).await.expect("finish");
    let much_later = at + Duration::hours(2);
    let rows = store.claim_as2_mdns(much_later, much_later, 100).await.expect("claim");
    assert_eq!(ours(rows), 0, "a sent MDN is not claimed again");
    assert_eq!(store.as2_message(&new.key).await.expect("get").expect("row").mdn_status, MDN_SENT);
}

/// Retention deletes AS2 messages received before the cutoff, a batch at a
/// time, and keeps the younger ones.
pub async fn retention_purges_as2_messages(store: StoreRef) {
    let scope = fresh_scope();
    let at = now();
    let old = at - Duration::days(40);
    let mut old_keys = HashSet::new();
    for i in 0..3 {
        let new = as2_message(&scope, "PARTNER", &format!("old{i}@partner"), "ee", old);
        store.claim_as2_message(&new).await.expect("claim");
        old_keys.insert(new.key);
    }
    let young = as2_message(&scope, "PARTNER", "young@partner", "ee", at);
    store.claim_as2_message(&young).await.expect("claim");
    let cutoff = at - Duration::days(30);
    let mut purged = 0;
    loop {
        let n = store.retention_step(RetentionStep::PurgeAs2Messages, cutoff, at, 2).await.expect("purge");
        purged += n;
        if n < 2 {
            break;
        }
    }
    assert!(purged >= 3, "purged {purged}");
    for key in &old_keys {
        assert_eq!(store.as2_message(key).await.expect("get"), None);
    }
    assert!(store.as2_message(&young.key).await.expect("get").is_some());
}

//! Admin changes, message lookups and retention batches.

use chrono::Duration;

use super::support::*;
use crate::{
    AuditFilter, INTEGRATION_UPDATED, IntegrationRow, KeyPurge, MESSAGE_TYPE_UPDATED, MessageQuery,
    MessageTypeRow, RetentionStep, SOURCE_ADMIN,
};

/// An admin change is stored, reported with the old row, audited with old
/// and new, and survives a later seed from the config.
pub async fn admin_changes_are_audited_and_kept(store: StoreRef) {
    let tenant = fresh_scope().tenant_id;
    let row = |window: i64| MessageTypeRow {
        tenant_id: tenant.clone(),
        id: "ORDERS05".into(),
        duplicate_key_fields: sqlx::types::Json(vec!["E1EDK01.BELNR".into()]),
        exclude_fields: sqlx::types::Json(vec![]),
        duplicate_window_seconds: window,
        fingerprint_scope: sqlx::types::Json(vec!["sender".into(), "receiver".into()]),
        source: crate::SOURCE_CONFIG.into(),
        updated_at: now(),
    };
    store.seed_message_types(&[row(60)]).await.unwrap();
    let old = store.put_message_type(&row(120)).await.unwrap().expect("old row returned");
    assert_eq!(old.duplicate_window_seconds, 60);
    store.seed_message_types(&[row(60)]).await.unwrap();
    let listed = store.list_message_types().await.unwrap();
    let mine = listed.iter().find(|r| r.tenant_id == tenant).expect("row kept");
    assert_eq!((mine.duplicate_window_seconds, mine.source.as_str()), (120, SOURCE_ADMIN));
    assert_eq!(mine.fingerprint_scope.0, ["sender", "receiver"]);
    let filter = AuditFilter {
        action: Some(MESSAGE_TYPE_UPDATED.into()),
        tenant: Some(tenant.clone()),
        limit: 10,
        ..Default::default()
    };
    let events = store.list_audit(&filter).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].details.0["old"]["duplicate_window_seconds"], 60);
    assert_eq!(events[0].details.0["new"]["duplicate_window_seconds"], 120);

    let integ = IntegrationRow {
        id: format!("i-{tenant}"),
        tenant_id: tenant.clone(),
        environment_id: "prod".into(),
        definition: sqlx::types::Json(serde_json::json!({ "message_type": "a" })),
        source: crate::SOURCE_CONFIG.into(),
        updated_at: now(),
    };
    assert!(store.put_integration(&integ).await.unwrap().is_none(), "new integration has no old row");
    let changed =
        IntegrationRow { definition: sqlx::types::Json(serde_json::json!({ "message_type": "b" })), ..integ };
    let old = store.put_integration(&changed).await.unwrap().expect("old integration");
    assert_eq!(old.definition.0["message_type"], "a");
    let filter = AuditFilter { action: Some(INTEGRATION_UPDATED.into()), ..filter };
    assert_eq!(store.list_audit(&filter).await.unwrap().len(), 2);
}

/// Lookups by fingerprint, key and docnum find exactly the matching messages
/// of the asked environment.
pub async fn lookups_find_messages(store: StoreRef) {
    let scope = fresh_scope();
    let mut a = message(Some("look-a"));
    a.docnum = Some("1001".into());
    a.idempotency_key = Some("key-a".into());
    let mut b = message(Some("look-b"));
    b.docnum = Some("1002".into());
    processed(ingest_at(&store, &scope, None, vec![a.clone(), b.clone()], now()).await);
    let base = MessageQuery { tenant: Some(scope.tenant_id.clone()), limit: 10, ..Default::default() };
    let by_fp = MessageQuery { fingerprint: Some("look-a".into()), ..base.clone() };
    assert_eq!(
        store.find_messages(&by_fp).await.unwrap().messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        [a.id]
    );
    let by_key = MessageQuery { idempotency_key: Some("key-a".into()), ..base.clone() };
    assert_eq!(store.find_messages(&by_key).await.unwrap().messages.len(), 1);
    let by_doc = MessageQuery { docnum: Some("1002".into()), ..base.clone() };
    let found = store.find_messages(&by_doc).await.unwrap().messages;
    assert_eq!(found.iter().map(|m| m.id).collect::<Vec<_>>(), [b.id]);
    assert!(found[0].fingerprint_active);
    let other_env = MessageQuery { environment: Some("qa".into()), ..base.clone() };
    assert!(store.find_messages(&other_env).await.unwrap().messages.is_empty());
    assert_eq!(store.find_messages(&base).await.unwrap().messages.len(), 2);
}

async fn drain(
    store: &StoreRef,
    step: RetentionStep,
    cutoff: chrono::DateTime<chrono::Utc>,
    at: chrono::DateTime<chrono::Utc>,
) -> u64 {
    let mut total = 0;
    loop {
        let n = store.retention_step(step, cutoff, at, 2).await.unwrap();
        total += n;
        if n < 2 {
            return total;
        }
    }
}

/// Released fingerprints admit the document again; purges delete only rows
/// older than the cutoff, never a message whose fingerprint still blocks.
pub async fn retention_releases_and_purges(store: StoreRef) {
    let scope = fresh_scope();
    let t0 = now() - Duration::days(10);
    let mut old_short = message(Some("ret-short"));
    old_short.window_seconds = 60;
    let mut old_long = message(Some("ret-long"));
    old_long.window_seconds = 30 * 86_400;
    processed(ingest_at(&store, &scope, Some(key("ret-key", "s")), vec![old_short.clone()], t0).await);
    processed(ingest_at(&store, &scope, None, vec![old_long.clone()], t0).await);
    // A packet whose first IDoc holds the body for a sibling that still blocks.
    let mut holder = message(Some("ret-holder"));
    holder.window_seconds = 60;
    let mut sibling = message(Some("ret-sibling"));
    sibling.window_seconds = 30 * 86_400;
    processed(ingest_at(&store, &scope, None, vec![holder.clone(), sibling.clone()], t0).await);
    let fresh = processed(ingest_at(&store, &scope, None, vec![message(Some("ret-new"))], now()).await);
    assert_eq!(drain(&store, RetentionStep::ReleaseFingerprints, now(), now()).await, 2);
    let again = NewMessage { id: uuid::Uuid::now_v7(), ..old_short.clone() };
    let out = processed(ingest_at(&store, &scope, None, vec![again], now()).await);
    assert!(
        matches!(out[0], MessageOutcome::Accepted(_)),
        "a released fingerprint admits the document again"
    );

    let cutoff = now() - Duration::days(5);
    assert_eq!(
        drain(&store, RetentionStep::PurgeMessages, cutoff, now()).await,
        1,
        "only the released old one"
    );
    assert!(store.get_message(old_short.id).await.unwrap().is_none());
    assert!(store.get_message(holder.id).await.unwrap().is_some(), "kept: a sibling still needs its body");
    let kept = store.get_message(sibling.id).await.unwrap().expect("sibling still blocks");
    assert_eq!(kept.payload, &sibling.payload[..], "the sibling reads the shared body");
    assert!(store.get_message(old_long.id).await.unwrap().is_some(), "still blocking: kept");
    assert!(store.get_message(outcome_id(&fresh[0])).await.unwrap().is_some(), "inside retention: kept");
    assert_eq!(drain(&store, RetentionStep::PurgeKeys, cutoff, now()).await, 1);
    let replay = ingest_at(&store, &scope, Some(key("ret-key", "s")), vec![message(None)], now()).await;
    assert!(matches!(replay, IngestOutcome::Processed { .. }), "a purged key is free again");
    store.insert_audit(&crate::NewAuditEvent { action: "x".into(), ..Default::default() }).await.unwrap();
    assert_eq!(drain(&store, RetentionStep::PurgeAudit, now() - Duration::days(1), now()).await, 0);
    assert!(drain(&store, RetentionStep::PurgeAudit, now() + Duration::seconds(1), now()).await >= 1);
}

/// `purge_keys`: `AllExcept` deletes every old key but the event ids of the
/// named integrations (an id that merely starts like one is not spared);
/// `EventIdsOf` deletes only that integration's old event ids.
pub async fn key_purge_keeps_an_integrations_event_ids(store: StoreRef) {
    let scope = fresh_scope();
    let old = now() - Duration::days(10);
    let event = |k: &str| KeyClaim { kind: DetectedBy::ProviderEventId, ..key(k, "s") };
    for claim in [key("idem-1", "s"), event("shop:e-1"), event("shop2:e-1"), event("gh:e-1")] {
        processed(ingest_at(&store, &scope, Some(claim), vec![message(None)], old).await);
    }
    processed(ingest_at(&store, &scope, Some(event("shop:e-new")), vec![message(None)], now()).await);
    let cutoff = now() - Duration::days(5);
    let kept = ["shop".to_string()];
    assert_eq!(store.purge_keys(KeyPurge::AllExcept(&kept), cutoff, 100).await.unwrap(), 3);
    let shop = "shop".to_string();
    assert_eq!(
        store.purge_keys(KeyPurge::EventIdsOf(&shop), now() - Duration::days(20), 100).await.unwrap(),
        0
    );
    assert_eq!(
        store.purge_keys(KeyPurge::EventIdsOf(&shop), cutoff, 100).await.unwrap(),
        1,
        "only the old one"
    );
    // The newer id still replays; the purged ones are free again.
    let replay = ingest_at(&store, &scope, Some(event("shop:e-new")), vec![message(None)], now()).await;
    assert!(matches!(replay, IngestOutcome::Replayed { .. }), "kept: {replay:?}");
    let again = ingest_at(&store, &scope, Some(event("shop:e-1")), vec![message(None)], now()).await;
    assert!(matches!(again, IngestOutcome::Processed { .. }), "purged: {again:?}");
}

//! Audit queries: filters, newest first, keyset pagination; message types.

use chrono::Duration;

use super::support::*;
use crate::{AuditFilter, MessageTypeRow, NewAuditEvent, SOURCE_CONFIG};

/// Filters select exactly the matching events, newest first, and the cursor
/// walks the rest without repeats or gaps, even with inserts in between.
pub async fn audit_filters_and_pagination(store: StoreRef) {
    let tenant = fresh_scope().tenant_id;
    for i in 0..7 {
        let event = NewAuditEvent {
            action: if i % 2 == 0 { "a.even" } else { "a.odd" }.into(),
            tenant_id: Some(tenant.clone()),
            environment_id: Some("prod".into()),
            message_type: Some(format!("T{}", i % 3)),
            fingerprint: Some(format!("fp{i}")),
            details: serde_json::json!({ "i": i }),
            ..Default::default()
        };
        store.insert_audit(&event).await.unwrap();
    }
    let base = AuditFilter { tenant: Some(tenant.clone()), limit: 3, ..Default::default() };
    let i_of = |e: &crate::AuditEvent| e.details.0["i"].as_i64().unwrap();
    let page1 = store.list_audit(&base).await.unwrap();
    assert_eq!(page1.iter().map(i_of).collect::<Vec<_>>(), [6, 5, 4]);
    // A new event between pages must not shift the next page.
    let late =
        NewAuditEvent { action: "a.late".into(), tenant_id: Some(tenant.clone()), ..Default::default() };
    store.insert_audit(&late).await.unwrap();
    let page2 = store.list_audit(&AuditFilter { cursor: Some(page1[2].id), ..base.clone() }).await.unwrap();
    assert_eq!(page2.iter().map(i_of).collect::<Vec<_>>(), [3, 2, 1]);
    let page3 = store.list_audit(&AuditFilter { cursor: Some(page2[2].id), ..base.clone() }).await.unwrap();
    assert_eq!(page3.iter().map(i_of).collect::<Vec<_>>(), [0]);

    let odd = AuditFilter { action: Some("a.odd".into()), limit: 10, ..base.clone() };
    assert_eq!(store.list_audit(&odd).await.unwrap().iter().map(i_of).collect::<Vec<_>>(), [5, 3, 1]);
    let t1 = AuditFilter { message_type: Some("T1".into()), limit: 10, ..base.clone() };
    assert_eq!(store.list_audit(&t1).await.unwrap().iter().map(i_of).collect::<Vec<_>>(), [4, 1]);
    let fp = AuditFilter { fingerprint: Some("fp2".into()), limit: 10, ..base.clone() };
    assert_eq!(store.list_audit(&fp).await.unwrap().iter().map(i_of).collect::<Vec<_>>(), [2]);
    let qa = AuditFilter { environment: Some("qa".into()), limit: 10, ..base.clone() };
    assert!(store.list_audit(&qa).await.unwrap().is_empty());
    let future = AuditFilter { since: Some(now() + Duration::hours(1)), limit: 10, ..base.clone() };
    assert!(store.list_audit(&future).await.unwrap().is_empty());
    let past = AuditFilter { until: Some(now() + Duration::hours(1)), limit: 100, ..base };
    assert_eq!(store.list_audit(&past).await.unwrap().len(), 8);
}

fn type_row(tenant: &str, id: &str, window: i64) -> MessageTypeRow {
    MessageTypeRow {
        tenant_id: tenant.into(),
        id: id.into(),
        duplicate_key_fields: sqlx::types::Json(vec!["E1EDK01.BELNR".into()]),
        exclude_fields: sqlx::types::Json(vec![]),
        duplicate_window_seconds: window,
        fingerprint_scope: sqlx::types::Json(vec![]),
        source: SOURCE_CONFIG.into(),
        updated_at: now(),
    }
}

/// Seeding makes the config rows match the file: new ones appear, changed
/// ones follow, removed ones go.
pub async fn seeding_follows_config(store: StoreRef) {
    let tenant = fresh_scope().tenant_id;
    let rows = vec![type_row("", "ORDERS05", 3600), type_row(&tenant, "ORDERS05", 60)];
    store.seed_message_types(&rows).await.unwrap();
    let listed = store.list_message_types().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].tenant_id, "", "global rows sort first");
    assert_eq!(listed[1].duplicate_window_seconds, 60);
    let rows = vec![type_row("", "ORDERS05", 7200)];
    store.seed_message_types(&rows).await.unwrap();
    let listed = store.list_message_types().await.unwrap();
    assert_eq!(listed.len(), 1, "the tenant row left the config");
    assert_eq!(listed[0].duplicate_window_seconds, 7200);
    assert_eq!(listed[0].duplicate_key_fields.0, ["E1EDK01.BELNR"]);
    assert!(listed[0].fingerprint_scope.0.is_empty(), "no scope unless one is configured");
    let scoped = MessageTypeRow {
        fingerprint_scope: sqlx::types::Json(vec!["receiver".into()]),
        ..type_row("", "ORDERS05", 7200)
    };
    store.seed_message_types(&[scoped]).await.unwrap();
    let listed = store.list_message_types().await.unwrap();
    assert_eq!(listed[0].fingerprint_scope.0, ["receiver"], "a changed scope follows the config");
}

fn integration_row(id: &str, tenant: &str, definition: serde_json::Value) -> crate::IntegrationRow {
    crate::IntegrationRow {
        id: id.into(),
        tenant_id: tenant.into(),
        environment_id: "prod".into(),
        definition: sqlx::types::Json(definition),
        source: SOURCE_CONFIG.into(),
        updated_at: now(),
    }
}

/// Integrations seed like message types: added, updated, removed with the config.
pub async fn seeding_integrations_follows_config(store: StoreRef) {
    let rows = vec![
        integration_row("shop", "acme", serde_json::json!({ "message_type": "shop.order" })),
        integration_row("gh", "acme", serde_json::json!({ "message_type": "github.push" })),
    ];
    store.seed_integrations(&rows).await.unwrap();
    let listed = store.list_integrations().await.unwrap();
    assert_eq!(listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["gh", "shop"]);
    let rows = vec![integration_row("shop", "globex", serde_json::json!({ "message_type_path": "$.type" }))];
    store.seed_integrations(&rows).await.unwrap();
    let listed = store.list_integrations().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].tenant_id, "globex");
    assert_eq!(listed[0].definition.0["message_type_path"], "$.type");
}

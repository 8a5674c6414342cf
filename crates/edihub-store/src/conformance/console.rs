//! The console's queries: message search with keyset pagination, audit
//! events of one original message, and the overview's aggregates.

use chrono::Duration;

use super::support::*;
use crate::{ActivityCount, AuditFilter, Counted, MessageQuery, NewAuditEvent, SIGNATURE_REJECTED};

/// Search by sender, key value (exactly, wildcards taken literally) and
/// time, and a keyset walk that neither repeats nor skips a row, even for
/// messages received at the same instant.
pub async fn message_search_filters_and_pages(store: StoreRef) {
    let scope = fresh_scope();
    let t0 = now() - Duration::hours(3);
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut m = message(Some(&format!("search-{i}")));
        m.sender = Some(if i % 2 == 0 { "PARTNER_A" } else { "PARTNER_B" }.into());
        let value = if i == 3 { "45%_00\\\"x".to_string() } else { format!("45000{i}") };
        m.key_values = serde_json::json!([{ "path": "E1EDK01.BELNR", "values": [value] }]);
        // Two messages share one instant: the id breaks the tie.
        let at = t0 + Duration::minutes(i64::from(i.min(3)));
        ids.push(m.id);
        processed(ingest_at(&store, &scope, None, vec![m], at).await);
    }
    let base = MessageQuery { tenant: Some(scope.tenant_id.clone()), limit: 2, ..Default::default() };
    let ids_of = |found: &[crate::MessageMeta]| found.iter().map(|m| m.id).collect::<Vec<_>>();
    let mut walked = Vec::new();
    let mut query = base.clone();
    loop {
        let page = store.find_messages(&query).await.unwrap();
        walked.extend(ids_of(&page.messages));
        assert!(page.messages.len() <= 2);
        match page.next {
            Some(next) => query.before = Some(next),
            None => break,
        }
    }
    let expected: Vec<_> = ids.iter().rev().copied().collect();
    assert_eq!(walked, expected, "newest first, each once");

    let all = MessageQuery { limit: 10, ..base.clone() };
    let sender = MessageQuery { sender: Some("PARTNER_B".into()), ..all.clone() };
    assert_eq!(ids_of(&store.find_messages(&sender).await.unwrap().messages), [ids[3], ids[1]]);
    let value = MessageQuery { key_value: Some("450002".into()), ..all.clone() };
    assert_eq!(ids_of(&store.find_messages(&value).await.unwrap().messages), [ids[2]]);
    let partial = MessageQuery { key_value: Some("45000".into()), ..all.clone() };
    assert!(store.find_messages(&partial).await.unwrap().messages.is_empty(), "whole values only");
    let odd = MessageQuery { key_value: Some("45%_00\\\"x".into()), ..all.clone() };
    assert_eq!(ids_of(&store.find_messages(&odd).await.unwrap().messages), [ids[3]]);
    let wild = MessageQuery { key_value: Some("45%".into()), ..all.clone() };
    assert!(store.find_messages(&wild).await.unwrap().messages.is_empty(), "% is not a wildcard");
    let window = MessageQuery {
        since: Some(t0 + Duration::minutes(1)),
        until: Some(t0 + Duration::minutes(3)),
        ..all.clone()
    };
    assert_eq!(ids_of(&store.find_messages(&window).await.unwrap().messages), [ids[2], ids[1]]);
}

/// A search checked row by row examines at most `scan` messages a page:
/// a short (even empty) page then names where the next one starts, and
/// following `next` finds every match once, in order, while a docnum lookup
/// is not bounded at all.
pub async fn bounded_search_pages_see_every_match_once(store: StoreRef) {
    let scope = fresh_scope();
    let t0 = now() - Duration::hours(2);
    let mut ids = Vec::new();
    for i in 0..7 {
        let mut m = message(Some(&format!("scan-{i}")));
        m.sender = Some(if i == 0 || i == 5 { "RARE" } else { "COMMON" }.into());
        m.docnum = Some(format!("{}", 9000 + i));
        ids.push(m.id);
        // The last two share an instant: a scan may end between them.
        let at = t0 + Duration::minutes(i64::from(i.min(5)));
        processed(ingest_at(&store, &scope, None, vec![m], at).await);
    }
    let rare = MessageQuery {
        tenant: Some(scope.tenant_id.clone()),
        sender: Some("RARE".into()),
        limit: 10,
        scan: Some(2),
        ..Default::default()
    };
    let (mut query, mut found, mut pages) = (rare.clone(), Vec::new(), Vec::new());
    loop {
        let page = store.find_messages(&query).await.unwrap();
        pages.push(page.messages.len());
        found.extend(page.messages.iter().map(|m| m.id));
        match page.next {
            Some(next) => query.before = Some(next),
            None => break,
        }
    }
    assert_eq!(found, [ids[5], ids[0]], "each match once, newest first");
    // Seven messages, two examined a page: the newest pair holds ids[5]
    // (ids[6] shares its instant), then two empty pages, then ids[0] alone.
    assert_eq!(pages, [1, 0, 0, 1], "pages of at most two examined messages");
    let one_page = MessageQuery { scan: Some(7), ..rare.clone() };
    let page = store.find_messages(&one_page).await.unwrap();
    assert_eq!((page.messages.len(), page.next), (2, None), "a scan that reaches the end has no next");
    let full = MessageQuery { limit: 1, scan: Some(100), ..rare.clone() };
    let page = store.find_messages(&full).await.unwrap();
    let last = &page.messages[0];
    assert_eq!(page.next, Some((last.received_at, last.id)), "a full page continues after its last row");
    let by_docnum = MessageQuery { docnum: Some("9001".into()), scan: Some(1), ..rare };
    let by_docnum = MessageQuery { sender: Some("COMMON".into()), ..by_docnum };
    let page = store.find_messages(&by_docnum).await.unwrap();
    assert_eq!((ids_of_page(&page), page.next), (vec![ids[1]], None), "an indexed lookup is not bounded");
}

fn ids_of_page(page: &crate::MessagePage) -> Vec<uuid::Uuid> {
    page.messages.iter().map(|m| m.id).collect()
}

/// `AuditFilter::message_id` selects the events about one original.
pub async fn audit_events_of_one_message(store: StoreRef) {
    let scope = fresh_scope();
    let original = message(Some("of-one"));
    processed(ingest_at(&store, &scope, None, vec![original.clone()], now()).await);
    for _ in 0..2 {
        let again = NewMessage { id: uuid::Uuid::now_v7(), ..original.clone() };
        processed(ingest_at(&store, &scope, None, vec![again], now()).await);
    }
    let other = message(Some("of-other"));
    processed(ingest_at(&store, &scope, None, vec![other.clone()], now()).await);
    processed(
        ingest_at(&store, &scope, None, vec![NewMessage { id: uuid::Uuid::now_v7(), ..other }], now()).await,
    );
    let filter = AuditFilter { message_id: Some(original.id), limit: 10, ..Default::default() };
    let events = store.list_audit(&filter).await.unwrap();
    assert_eq!(events.len(), 2);
    assert!(
        events
            .iter()
            .all(|e| e.message_id == Some(original.id) && e.detected_by.as_deref() == Some("fingerprint"))
    );
}

/// The overview's counts per scope and type since a time, signature
/// refusals summed over their aggregated events, and the series per
/// interval.
pub async fn activity_counts_and_series(store: StoreRef) {
    let scope = fresh_scope();
    let end = now();
    let old = end - Duration::hours(30);
    processed(ingest_at(&store, &scope, None, vec![message(Some("act-old"))], old).await);
    let mut a = message(Some("act-a"));
    a.window_seconds = 86_400;
    processed(ingest_at(&store, &scope, None, vec![a.clone()], end - Duration::minutes(90)).await);
    let again = NewMessage { id: uuid::Uuid::now_v7(), ..a.clone() };
    processed(ingest_at(&store, &scope, None, vec![again], end - Duration::minutes(30)).await);
    let keyed =
        ingest_at(&store, &scope, Some(key("act-k", "s")), vec![message(None)], end - Duration::minutes(20))
            .await;
    processed(keyed);
    let replay =
        ingest_at(&store, &scope, Some(key("act-k", "s")), vec![message(None)], end - Duration::minutes(10))
            .await;
    assert!(matches!(replay, IngestOutcome::Replayed { .. }));
    // An EDIFACT/X12 interchange and its repeat: one message accepted, the
    // repeated interchange counted once, by its detector.
    let interchange = KeyClaim {
        kind: DetectedBy::Interchange,
        on_reuse: KeyReusePolicy::Replay,
        window_seconds: Some(86_400),
        ..key("X12|ZZ:A|ZZ:B|act", "sha-act")
    };
    let at = end - Duration::minutes(5);
    processed(ingest_at(&store, &scope, Some(interchange.clone()), vec![message(Some("act-ic"))], at).await);
    let repeat = ingest_at(&store, &scope, Some(interchange), vec![message(Some("act-ic-2"))], at).await;
    assert!(matches!(repeat, IngestOutcome::Replayed(_)), "{repeat:?}");
    for count in [3, 4] {
        let event = NewAuditEvent {
            action: SIGNATURE_REJECTED.into(),
            tenant_id: Some(scope.tenant_id.clone()),
            environment_id: Some(scope.environment_id.clone()),
            details: serde_json::json!({ "integration": "shop", "count": count }),
            ..Default::default()
        };
        store.insert_audit(&event).await.unwrap();
    }

    let since = end - Duration::hours(24);
    let mine: Vec<ActivityCount> =
        store.activity(since).await.unwrap().into_iter().filter(|c| c.tenant_id == scope.tenant_id).collect();
    let row = |t: &str, what: Counted, count: i64| ActivityCount {
        tenant_id: scope.tenant_id.clone(),
        environment_id: scope.environment_id.clone(),
        message_type: t.into(),
        what,
        count,
    };
    assert_eq!(
        mine,
        [
            row("", Counted::SignaturesRefused, 7),
            row("ORDERS05", Counted::Accepted, 3),
            row("ORDERS05", Counted::Duplicate(DetectedBy::Fingerprint), 1),
            row("ORDERS05", Counted::Duplicate(DetectedBy::IdempotencyKey), 1),
            row("ORDERS05", Counted::Duplicate(DetectedBy::Interchange), 1),
        ]
    );

    // The series: 4 intervals of an hour up to `end + 1 min` (audit events
    // are stamped with the wall clock; everything else is in the past).
    let bounds = crate::series_bounds(end + Duration::minutes(1), Duration::hours(1), 4);
    let points = store.activity_series(&bounds).await.unwrap();
    assert_eq!(points.iter().map(|p| p.bucket).collect::<Vec<_>>(), [0, 1, 2, 3]);
    // The old message lies before the first interval.
    assert_eq!(points.iter().map(|p| p.accepted).collect::<Vec<_>>(), [0, 0, 1, 2]);
    assert_eq!(points.iter().map(|p| p.duplicates).sum::<i64>(), 3, "{points:?}");
    assert!(store.activity_series(&bounds[..1]).await.unwrap().is_empty());
}

/// `MessageQuery::tenants` and `environments` limit a lookup to the listed
/// ones, with any other filter; empty, they limit nothing.
pub async fn lookups_keep_to_their_tenants_and_environments(store: StoreRef) {
    let scopes = [fresh_scope(), fresh_scope(), Scope::new("t-limits", "qa")];
    let mut ids = Vec::new();
    for scope in &scopes {
        let m = message(Some("limited"));
        ids.push(m.id);
        processed(ingest_at(&store, scope, None, vec![m], now()).await);
    }
    let by_docnum = |tenants: &[&Scope], environments: &[&str]| MessageQuery {
        docnum: Some("4711".into()),
        tenants: tenants.iter().map(|s| s.tenant_id.clone()).collect(),
        environments: environments.iter().map(|e| e.to_string()).collect(),
        limit: 10,
        ..Default::default()
    };
    let found = |q: MessageQuery| {
        let store = store.clone();
        async move {
            let mut ids: Vec<_> =
                store.find_messages(&q).await.unwrap().messages.iter().map(|m| m.id).collect();
            ids.sort();
            ids
        }
    };
    let sorted = |mut v: Vec<uuid::Uuid>| {
        v.sort();
        v
    };
    assert_eq!(found(by_docnum(&[&scopes[0], &scopes[1]], &[])).await, sorted(ids[..2].to_vec()));
    assert_eq!(found(by_docnum(&[], &["prod"])).await, sorted(ids[..2].to_vec()));
    assert_eq!(found(by_docnum(&[&scopes[1], &scopes[2]], &["qa"])).await, [ids[2]]);
    assert_eq!(found(by_docnum(&[], &[])).await, sorted(ids.clone()));
    let elsewhere =
        MessageQuery { tenant: Some(scopes[2].tenant_id.clone()), ..by_docnum(&[&scopes[0]], &[]) };
    assert!(found(elsewhere).await.is_empty(), "both limits hold");
}

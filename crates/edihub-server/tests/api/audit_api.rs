//! `GET /admin/audit` and the health endpoints: the admin credential (Bearer
//! or Basic) is required; `action` and `fingerprint` filters return exactly
//! the expected events; `limit` + `cursor`/`next_cursor` page newest first
//! without repeats or gaps; bad parameters are 400; `/healthz` and `/readyz`
//! answer 200.

use std::collections::HashSet;

use crate::support::*;
use serde_json::Value;

backend_tests!(
    admin_credential_bearer_and_basic,
    filters_return_exactly_the_expected_events,
    pagination_without_repeats,
    bad_parameters_are_400,
    html_page_escapes_sender_text,
    health_and_readiness,
    unknown_route_is_404_problem,
    wrong_method_is_405_problem,
    database_down_is_503_and_stores_nothing,
);

/// acme/prod: orders05 once + 2 repeats (fingerprint A), ordchg05 once + 1
/// repeat (fingerprint B), one Idempotency-Key mismatch. Returns (A, B, order id, change id).
async fn seed(app: &TestApp) -> (String, String, String, String) {
    let order = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let change = accepted(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await);
    for _ in 0..2 {
        app.post_xml(ACME_PROD, fixture("orders05.xml")).await.expect(200);
    }
    app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await.expect(200);
    let key = [("idempotency-key", "audit-key")];
    accepted(
        &app.post_json(ACME_PROD, r#"{"docnum":"1"}"#, &[key[0], ("x-message-type", "free.event")]).await,
    );
    app.post_json(ACME_PROD, r#"{"docnum":"2"}"#, &[key[0], ("x-message-type", "free.event")])
        .await
        .expect(422);
    let s = |v: &Value| v.as_str().unwrap().to_string();
    (s(&order["fingerprint"]), s(&change["fingerprint"]), s(&order["id"]), s(&change["id"]))
}

async fn admin_credential_bearer_and_basic(backend: Backend) {
    let app = TestApp::new(backend).await;
    seed(&app).await;
    let by_bearer = app.get("/admin/audit", Some(&bearer(ADMIN_TOKEN))).await;
    by_bearer.expect(200);
    assert_eq!(by_bearer.json()["events"].as_array().unwrap().len(), 4);
    let by_basic = app.get("/admin/audit", Some(&basic("admin", ADMIN_TOKEN))).await;
    by_basic.expect(200);
    assert_eq!(by_basic.json(), by_bearer.json());
    for auth in [None, Some(bearer("wrong")), Some(basic("admin", "wrong")), Some(bearer(ACME_PROD))] {
        let res = app.get("/admin/audit", auth.as_deref()).await;
        res.expect_problem(401, "");
        assert!(res.header("www-authenticate").is_some());
    }
}

async fn filters_return_exactly_the_expected_events(backend: Backend) {
    let app = TestApp::new(backend).await;
    let (fp_order, fp_change, order_id, change_id) = seed(&app).await;

    let blocked = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(blocked.len(), 3);
    assert!(
        blocked
            .iter()
            .all(|e| e["action"] == "message.duplicate_blocked" && e["detected_by"] == "fingerprint")
    );

    let order_events = app.audit_events(&format!("fingerprint={fp_order}")).await;
    assert_eq!(order_events.len(), 2);
    for e in &order_events {
        assert_eq!(e["fingerprint"], fp_order.as_str());
        assert_eq!(e["original_message_id"], order_id.as_str());
        assert_eq!(e["message_type"], "ORDERS05");
        assert_eq!(e["tenant"], "acme");
        assert_eq!(e["environment"], "prod");
        assert_eq!(e["details"]["mestyp"], "ORDERS");
        chrono::DateTime::parse_from_rfc3339(e["occurred_at"].as_str().unwrap()).unwrap();
    }
    let change_events =
        app.audit_events(&format!("fingerprint={fp_change}&action=message.duplicate_blocked")).await;
    assert_eq!(change_events.len(), 1);
    assert_eq!(change_events[0]["original_message_id"], change_id.as_str());
    assert_eq!(change_events[0]["details"]["mestyp"], "ORDCHG");

    let mismatch = app.audit_events("action=idempotency_key.mismatch").await;
    assert_eq!(mismatch.len(), 1);
    assert_eq!(mismatch[0]["idempotency_key"], "audit-key");

    assert!(
        app.audit_events(&format!("fingerprint={fp_order}&action=idempotency_key.mismatch")).await.is_empty()
    );
    assert!(app.audit_events(&format!("fingerprint={}", "0".repeat(64))).await.is_empty());
    assert_eq!(app.audit_events("message_type=ORDERS05").await.len(), 3);
    assert_eq!(app.audit_events("environment=qa").await.len(), 0);
    // Time filters: everything is after the epoch and before the far future.
    assert_eq!(app.audit_events("since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z").await.len(), 4);
    assert!(app.audit_events("since=2999-01-01T00:00:00Z").await.is_empty());
    // `since` includes an event at that instant, `until` excludes it.
    let all = app.audit_events("").await;
    let oldest = all.last().unwrap();
    let at = oldest["occurred_at"].as_str().unwrap();
    let from_oldest = app.audit_events(&format!("since={at}")).await;
    assert_eq!(from_oldest.len(), 4, "since={at}");
    let before_oldest = app.audit_events(&format!("until={at}")).await;
    assert!(before_oldest.is_empty(), "until={at}: {before_oldest:?}");
    let newest_at = all[0]["occurred_at"].as_str().unwrap();
    let up_to_newest = app.audit_events(&format!("until={newest_at}")).await;
    assert!(up_to_newest.iter().all(|e| e["id"] != all[0]["id"]));
    // Empty filters are ignored.
    assert_eq!(app.audit_events("action=&fingerprint=").await.len(), 4);
}

async fn pagination_without_repeats(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    for _ in 0..7 {
        app.post_xml(ACME_PROD, fixture("orders05.xml")).await.expect(200);
    }
    let all = app.audit_events("").await;
    assert_eq!(all.len(), 7);
    let all_ids: Vec<i64> = all.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(all_ids.windows(2).all(|w| w[0] > w[1]), "newest first: {all_ids:?}");

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            Some(c) => format!("limit=3&cursor={c}"),
            None => "limit=3".to_string(),
        };
        let page = app.audit(&query).await;
        pages += 1;
        let events = page["events"].as_array().unwrap();
        assert!(events.len() <= 3);
        seen.extend(events.iter().map(|e| e["id"].as_i64().unwrap()));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
        assert!(pages < 10, "pagination does not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, all_ids, "same events, same order");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 7, "no repeats");
    assert!(all.iter().all(|e| e["original_message_id"] == first["id"]));

    // New events arriving between pages neither shift nor repeat rows.
    let page1 = app.audit("limit=4").await;
    app.post_xml(ACME_PROD, fixture("orders05.xml")).await.expect(200);
    let cursor = page1["next_cursor"].as_str().unwrap();
    let page2 = app.audit(&format!("limit=4&cursor={cursor}")).await;
    let ids2: Vec<i64> =
        page2["events"].as_array().unwrap().iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert_eq!(ids2, all_ids[4..].to_vec());
    // limit=500 is allowed.
    assert_eq!(app.audit("limit=500").await["events"].as_array().unwrap().len(), 8);
}

async fn bad_parameters_are_400(backend: Backend) {
    let app = TestApp::new(backend).await;
    let admin = bearer(ADMIN_TOKEN);
    for (query, detail) in [
        ("limit=501", "limit"),
        ("limit=0", "limit"),
        ("limit=-1", "limit"),
        ("limit=ten", "limit"),
        ("cursor=abc", "cursor"),
        ("since=yesterday", "since"),
        ("until=2024-13-01", "until"),
    ] {
        let res = app.get(&format!("/admin/audit?{query}"), Some(&admin)).await;
        assert_eq!(res.status.as_u16(), 400, "{query}: {}", res.text());
        res.expect_problem(400, detail);
    }
}

async fn html_page_escapes_sender_text(backend: Backend) {
    let app = TestApp::new(backend).await;
    // Sender-controlled text that ends up in audit events: docnum, key. A
    // type cannot carry markup: it is refused before anything is stored.
    let body = r#"{"docnum":"<img src=x onerror=alert(2)>"}"#;
    let evil = [("x-message-type", "<script>alert(1)</script>")];
    app.post_json(ACME_PROD, body, &evil).await.expect_problem(400, "X-Message-Type");
    let headers = [("x-message-type", "free.event"), ("idempotency-key", "<b>k</b>")];
    accepted(&app.post_json(ACME_PROD, body, &headers).await);
    app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")]).await.expect(200);
    app.post_json(ACME_PROD, body, &headers).await.expect(200);
    assert_eq!(app.audit_events("").await.len(), 2);
    let request = axum::http::Request::builder()
        .uri("/admin/audit")
        .header("authorization", basic("admin", ADMIN_TOKEN))
        .header("accept", "text/html,application/xhtml+xml")
        .body(axum::body::Body::empty())
        .unwrap();
    let page = app.send(request).await;
    page.expect(200);
    assert!(page.header("content-type").is_some_and(|t| t.starts_with("text/html")));
    let html = page.text();
    assert!(html.contains("message.duplicate_blocked"), "events are listed");
    for raw in ["<script>alert(1)", "<img src=x", "<b>k</b>"] {
        assert!(!html.contains(raw), "unescaped {raw:?} in the page");
    }
    assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
    // The HTML view needs the admin credential too.
    let request = axum::http::Request::builder()
        .uri("/admin/audit")
        .header("accept", "text/html")
        .body(axum::body::Body::empty())
        .unwrap();
    let denied = app.send(request).await;
    denied.expect(401);
    assert!(!denied.text().contains("script"));
}

async fn health_and_readiness(backend: Backend) {
    let app = TestApp::new(backend).await;
    let health = app.get("/healthz", None).await;
    health.expect(200);
    assert_eq!(health.json()["status"], "ok");
    let ready = app.get("/readyz", None).await;
    ready.expect(200);
    assert_eq!(ready.json()["status"], "ready");
    let expected = match app.backend() {
        Backend::Sqlite => "SQLite",
        Backend::Postgres => "PostgreSQL",
    };
    assert_eq!(ready.json()["database"], expected);
}

async fn unknown_route_is_404_problem(backend: Backend) {
    let app = TestApp::new(backend).await;
    app.get("/api/edi-hub/nope", Some(&bearer(ACME_PROD))).await.expect_problem(404, "no such route");
}

async fn wrong_method_is_405_problem(backend: Backend) {
    let app = TestApp::new(backend).await;
    // The receive endpoint only takes POST: 405 with Allow, as a problem document
    // like every other error (PRODUCT.md, "Responses").
    let res = app.get(RECEIVE, Some(&bearer(ACME_PROD))).await;
    assert_eq!(res.status.as_u16(), 405, "{}", res.text());
    assert_eq!(res.header("allow"), Some("POST"));
    res.expect_problem(405, "");
}

async fn database_down_is_503_and_stores_nothing(backend: Backend) {
    let app = TestApp::new(backend).await;
    app.state.store.close().await;
    app.get("/healthz", None).await.expect(200);
    let ready = app.get("/readyz", None).await;
    ready.expect_problem(503, "database");
    assert!(ready.header("retry-after").is_some(), "Retry-After tells the prober when to look again");
    // A sender gets 503 (SAP retries anything but 2xx), never a 2xx or a 500.
    let res = app.post_xml(ACME_PROD, fixture("orders05.xml")).await;
    res.expect_problem(503, "");
    assert!(res.header("retry-after").is_some());
    let res = app.get("/admin/audit", Some(&bearer(ADMIN_TOKEN))).await;
    res.expect_problem(503, "");
}

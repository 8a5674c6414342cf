//! Idempotency-Key over HTTP: from the header or a JSON body's
//! `idempotencyKey` (the header wins); a repeat answers 200 with
//! `Idempotency-Replayed: true` and the first body byte for byte; the same key
//! with another payload is refused with 422 (or replayed where the
//! environment opted in); malformed keys are 400 and store nothing.

use crate::support::*;
use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, header};

backend_tests!(
    header_key_replays_the_first_body,
    key_kept_as_a_rendered_response_replays_it_unchanged,
    body_key_replays_the_first_body,
    header_key_wins_over_body_key,
    key_on_a_fingerprint_duplicate_replays_the_duplicate_answer,
    reused_key_with_other_payload_is_422,
    reused_key_replays_where_environment_opted_in,
    refused_request_does_not_burn_its_key,
    key_length_limits,
    malformed_keys_are_400_and_store_nothing,
);

async fn header_key_replays_the_first_body(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "sap-q01-0000000000004711")];
    let first = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
    let body = accepted(&first);
    for _ in 0..2 {
        let again = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
        again.expect(200);
        assert!(again.replayed(), "Idempotency-Replayed: true");
        assert_eq!(again.header("content-type"), Some("application/json"));
        assert_eq!(again.body, first.body, "byte-identical to the first response");
    }
    assert_eq!(app.count_prod().await, 1);
    let id = body["id"].as_str().unwrap();
    let stored = app.state.store.get_message(id.parse().unwrap()).await.unwrap().expect("stored");
    assert_eq!(stored.idempotency_key.as_deref(), Some("sap-q01-0000000000004711"));
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), 2);
    for e in &events {
        assert_eq!(e["detected_by"], "idempotency_key");
        assert_eq!(e["idempotency_key"], "sap-q01-0000000000004711");
        assert_eq!(e["original_message_id"], id);
    }
}

/// A key stored by an edihub from before answers were kept as data holds
/// the rendered response (status and body) and no answer: after the
/// upgrade it replays that body byte for byte, and another payload is still
/// refused.
async fn key_kept_as_a_rendered_response_replays_it_unchanged(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "kept-before-upgrade")];
    let first = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
    accepted(&first);
    // What the earlier version stored: the response, no answer. A marker
    // member proves the stored text is sent, not re-rendered.
    let old_body =
        String::from_utf8(first.body.to_vec()).unwrap().replacen('{', r#"{"kept_by":"earlier edihub","#, 1);
    let sql =
        "UPDATE idempotency_keys SET status_code = 202, response_body = $1, answer = NULL WHERE key = $2";
    let url = &app.direct_database_url();
    let updated = match app.backend() {
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(url).await.expect("connect");
            sqlx::query(sql).bind(&old_body).bind(key[0].1).execute(&pool).await.map(|r| r.rows_affected())
        }
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(url).await.expect("connect");
            sqlx::query(sql).bind(&old_body).bind(key[0].1).execute(&pool).await.map(|r| r.rows_affected())
        }
    };
    assert_eq!(updated.expect("rewrite the key as an earlier version kept it"), 1);
    let again = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.body, old_body.as_bytes(), "the kept response, byte for byte");
    // Such a key has no answer to name its message: the event reads it from the row.
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["message_type"], "ORDERS05", "{events:?}");
    assert_eq!(events[0]["original_message_id"], accepted(&first)["id"], "{events:?}");
    assert!(events[0]["fingerprint"].as_str().is_some_and(|f| !f.is_empty()), "{events:?}");
    let other = app.post_xml_with(ACME_PROD, fixture("orders05-reissued.xml"), &key).await;
    other.expect(422);
    assert_eq!(app.count_prod().await, 1);
}

async fn body_key_replays_the_first_body(backend: Backend) {
    let app = TestApp::new(backend).await;
    // An IDoc as JSON with the key at the top.
    let idoc: serde_json::Value = serde_json::from_slice(&fixture("orders05.json")).unwrap();
    let mut with_key = idoc.as_object().unwrap().clone();
    with_key.insert("idempotencyKey".into(), "json-key-1".into());
    let payload = serde_json::to_vec(&with_key).unwrap();
    let first = app.post_json(ACME_PROD, payload.clone(), &[]).await;
    let body = accepted(&first);
    assert_eq!(body["message_type"], "ORDERS05", "the key member does not hide the IDoc shape");
    let again = app.post_json(ACME_PROD, payload, &[]).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(app.count_prod().await, 1);
    let events = app.audit_events("action=message.duplicate_blocked").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["idempotency_key"], "json-key-1");
    assert_eq!(events[0]["detected_by"], "idempotency_key");
}

async fn header_key_wins_over_body_key(backend: Backend) {
    let app = TestApp::new(backend).await;
    // An unconfigured type without docnum: never fingerprinted, so only keys dedup.
    let payload = r#"{"idempotencyKey":"body-key","amount":1}"#;
    let typ = ("x-message-type", "free.event");
    let first = app.post_json(ACME_PROD, payload, &[typ, ("idempotency-key", "header-key")]).await;
    assert_eq!(accepted(&first)["deduplicated"], false);
    let again = app.post_json(ACME_PROD, payload, &[typ, ("idempotency-key", "header-key")]).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(app.count_prod().await, 1);
    // The body key was never claimed: without the header it is a new request…
    let by_body = app.post_json(ACME_PROD, payload, &[typ]).await;
    let by_body_json = accepted(&by_body);
    assert_ne!(by_body_json["id"], first.json()["id"]);
    assert_eq!(app.count_prod().await, 2);
    // …and from then on its own key.
    let by_body_again = app.post_json(ACME_PROD, payload, &[typ]).await;
    by_body_again.expect(200);
    assert!(by_body_again.replayed());
    assert_eq!(by_body_again.body, by_body.body);
    assert_eq!(app.count_prod().await, 2);
}

async fn key_on_a_fingerprint_duplicate_replays_the_duplicate_answer(backend: Backend) {
    let app = TestApp::new(backend).await;
    let first =
        accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", "k1")]).await);
    // A new key on a known document: a fingerprint duplicate, stored with k2.
    let dup = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", "k2")]).await;
    assert_eq!(duplicate_of(&dup, first["id"].as_str().unwrap())["detected_by"], "fingerprint");
    assert!(!dup.replayed());
    // k2 again: the duplicate answer is replayed as it was.
    let again = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", "k2")]).await;
    again.expect(200);
    assert!(again.replayed());
    assert_eq!(again.body, dup.body);
    assert_eq!(app.count_prod().await, 1);
    let events = app.audit_events("action=message.duplicate_blocked").await;
    let detectors: Vec<&str> = events.iter().map(|e| e["detected_by"].as_str().unwrap()).collect();
    assert_eq!(detectors, ["idempotency_key", "fingerprint"], "newest first");
}

async fn reused_key_with_other_payload_is_422(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "reused-key")];
    let first = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await);
    let res = app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &key).await;
    res.expect_problem(422, "Idempotency-Key");
    assert!(!res.replayed());
    assert_eq!(app.count_prod().await, 1, "the other payload is not stored");
    let events = app.audit_events("action=idempotency_key.mismatch").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["idempotency_key"], "reused-key");
    assert_eq!(events[0]["original_message_id"], first["id"]);
    assert!(app.audit_events("action=message.duplicate_blocked").await.is_empty());
    // The change itself is not lost: with a fresh key it is stored.
    accepted(&app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &[("idempotency-key", "k2")]).await);
    assert_eq!(app.count_prod().await, 2);
}

async fn reused_key_replays_where_environment_opted_in(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "reused-key")];
    let first = app.post_xml_with(ACME_QA, fixture("orders05.xml"), &key).await;
    accepted(&first);
    let res = app.post_xml_with(ACME_QA, fixture("ordchg05.xml"), &key).await;
    res.expect(200);
    assert!(res.replayed());
    assert_eq!(res.body, first.body, "the first response, not the change");
    assert_eq!(app.count("acme", "qa").await, 1);
    let events = app.audit_events("action=message.duplicate_blocked&environment=qa").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["details"]["same_payload"], false);
}

async fn refused_request_does_not_burn_its_key(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "retry-me")];
    let text = String::from_utf8(fixture("orders05.xml")).unwrap();
    let truncated = &text[..text.len() / 2];
    app.post_xml_with(ACME_PROD, truncated, &key).await.expect(400);
    app.post_receive(None, Some("application/xml"), fixture("orders05.xml"), &key).await.expect(401);
    // The corrected retry under the same key is processed, not refused as a reuse.
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
    accepted(&res);
    assert_eq!(app.count_prod().await, 1);
    assert!(app.audit_events("").await.is_empty());
}

async fn key_length_limits(backend: Backend) {
    let app = TestApp::new(backend).await;
    let too_long = "k".repeat(201);
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", &too_long)]).await;
    res.expect_problem(400, "Idempotency-Key");
    assert_eq!(app.count_prod().await, 0);
    let body = format!(r#"{{"idempotencyKey":"{too_long}","docnum":"1"}}"#);
    app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")])
        .await
        .expect_problem(400, "Idempotency-Key");
    assert_eq!(app.count_prod().await, 0);
    // 200 printable characters (punctuation and an inner space included) are fine.
    let mut longest: String = (0..200).map(|i| char::from(b'!' + (i % 94) as u8)).collect();
    longest.replace_range(100..101, " ");
    assert_eq!(longest.len(), 200);
    let res = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", &longest)]).await;
    accepted(&res);
    let again = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", &longest)]).await;
    assert!(again.replayed() && again.body == res.body, "the longest key is stored whole");
    assert_eq!(app.count_prod().await, 1);
}

async fn malformed_keys_are_400_and_store_nothing(backend: Backend) {
    let app = TestApp::new(backend).await;
    let raw_header = |value: &[u8]| {
        Request::builder()
            .method(Method::POST)
            .uri(RECEIVE)
            .header(header::AUTHORIZATION, bearer(ACME_PROD))
            .header(header::CONTENT_TYPE, "application/xml")
            .header("idempotency-key", HeaderValue::from_bytes(value).unwrap())
            .body(Body::from(fixture("orders05.xml")))
            .unwrap()
    };
    let header_cases: [(&str, &[u8]); 4] =
        [("empty", b""), ("tab", b"a\tb"), ("non-ASCII", "clé-1".as_bytes()), ("obs-text byte", b"a\xffb")];
    for (name, value) in header_cases {
        let res = app.send(raw_header(value)).await;
        assert_eq!(res.status.as_u16(), 400, "{name}: {}", res.text());
        res.expect_problem(400, "Idempotency-Key");
    }
    let body_cases = [
        ("empty", r#"{"idempotencyKey":"","docnum":"1"}"#, "Idempotency-Key"),
        ("control", r#"{"idempotencyKey":"a\u0001b","docnum":"1"}"#, "Idempotency-Key"),
        ("non-ASCII", r#"{"idempotencyKey":"ключ","docnum":"1"}"#, "Idempotency-Key"),
        ("not a string", r#"{"idempotencyKey":42,"docnum":"1"}"#, "idempotencyKey"),
    ];
    for (name, body, detail) in body_cases {
        let res = app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")]).await;
        assert_eq!(res.status.as_u16(), 400, "{name}: {}", res.text());
        res.expect_problem(400, detail);
    }
    assert_eq!(app.count_prod().await, 0);
    assert!(app.audit_events("").await.is_empty(), "nothing audited either");
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
}

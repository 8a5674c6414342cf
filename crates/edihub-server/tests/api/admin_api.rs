//! The admin API of issue #4: `GET /admin/messages/{id}` returns the metadata
//! and the payload exactly as received (an ISO-8859-1 IDoc comes back base64
//! and decodes to the same bytes; `/payload` returns the raw bytes with the
//! original Content-Type); 404/400 for unknown and malformed ids; lookups by
//! fingerprint, Idempotency-Key and docnum return exactly the matching
//! messages; and `PUT /admin/message-types/{id}?tenant=…` changes the very
//! next dedup decision, is audited with old and new value, refuses invalid
//! changes with 422 naming the key, and shows up as `source = "admin"`.

use std::collections::BTreeSet;

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request};
use base64::Engine;
use serde_json::{Value, json};

backend_tests!(
    message_and_payload_exactly_as_received,
    lookup_returns_exactly_the_matching_messages,
    message_type_change_applies_to_the_next_decision,
    invalid_message_type_change_changes_nothing,
);

const LATIN1_CT: &str = "application/xml; charset=ISO-8859-1";
/// acme has its own ORDERS05 row (from the config), equal to the global one.
fn with_acme_orders05() -> TestConfig {
    TestConfig::new().message_type("ORDERS05", |t| {
        t.tenant = Some("acme".into());
        t.duplicate_key_fields = strings(ORDERS05_KEYS);
    })
}

fn admin() -> String {
    bearer(ADMIN_TOKEN)
}

async fn put_type(app: &TestApp, query: &str, body: Value) -> TestResponse {
    put_type_as(app, query, Some(&admin()), body.to_string()).await
}

async fn put_type_as(app: &TestApp, query: &str, auth: Option<&str>, body: String) -> TestResponse {
    let mut request =
        Request::builder().method(Method::PUT).uri(format!("/admin/message-types/ORDERS05{query}"));
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let request = request.header("content-type", "application/json").body(Body::from(body));
    app.send(request.expect("request")).await
}

async fn message(app: &TestApp, id: &str) -> Value {
    let res = app.get(&format!("/admin/messages/{id}"), Some(&admin())).await;
    res.expect(200);
    res.json()
}

/// The ids of `GET /admin/messages?<query>`, which must be newest first.
async fn lookup(app: &TestApp, query: &str) -> BTreeSet<String> {
    let res = app.get(&format!("/admin/messages?{query}"), Some(&admin())).await;
    res.expect(200);
    let found = res.json()["messages"].as_array().expect("messages array").clone();
    let times: Vec<&str> = found.iter().map(|m| m["received_at"].as_str().expect("received_at")).collect();
    let parsed: Vec<_> =
        times.iter().map(|t| chrono::DateTime::parse_from_rfc3339(t).expect("time")).collect();
    assert!(parsed.windows(2).all(|w| w[0] >= w[1]), "newest first: {times:?}");
    assert!(found.iter().all(|m| m.get("payload").is_none()), "lookups carry no payload");
    found.iter().map(|m| m["id"].as_str().expect("id").to_string()).collect()
}

fn ids(list: &[&Value]) -> BTreeSet<String> {
    list.iter().map(|v| v["id"].as_str().expect("id").to_string()).collect()
}

async fn message_and_payload_exactly_as_received(backend: Backend) {
    let app = TestApp::new(backend).await;
    let latin1 = fixture("orders05-latin1.xml");
    assert!(std::str::from_utf8(&latin1).is_err(), "the fixture really is ISO-8859-1");
    let res = app.post_receive(Some(&bearer(ACME_PROD)), Some(LATIN1_CT), latin1.clone(), &[]).await;
    let stored = accepted(&res);
    let id = stored["id"].as_str().unwrap();
    // A repeat stores nothing new and names the same message.
    duplicate_of(&app.post_receive(Some(&bearer(ACME_PROD)), Some(LATIN1_CT), latin1.clone(), &[]).await, id);

    let m = message(&app, id).await;
    let want = json!({ "id": id, "tenant": "acme", "environment": "prod", "message_type": "ORDERS05",
        "mestyp": "ORDERS", "docnum": "0000000000004711", "sender": "Q01CLNT100", "packet_index": 0,
        "fingerprint": stored["fingerprint"], "idempotency_key": null, "content_type": LATIN1_CT,
        "payload_encoding": "base64", "payload_bytes": latin1.len() });
    for (field, value) in want.as_object().unwrap() {
        assert_eq!(&m[field], value, "{field}: {m}");
    }
    let b64 = m["payload"].as_str().unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(b64).unwrap(), latin1, "same bytes");
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(at(&m["received_at"]), at(&stored["received_at"]));
    assert!(at(&m["fingerprint_expires_at"]) > at(&m["received_at"]));
    let keys = m["key_values"].to_string();
    assert!(keys.contains("4500012345") && keys.contains("PO-77881"), "key values: {keys}");

    // The raw bytes with the original Content-Type.
    let raw = app.get(&format!("/admin/messages/{id}/payload"), Some(&basic("admin", ADMIN_TOKEN))).await;
    raw.expect(200);
    assert_eq!(raw.header("content-type"), Some(LATIN1_CT));
    assert_eq!(raw.body.as_ref(), latin1.as_slice());

    // UTF-8 text comes back as text, byte for byte (whitespace included).
    let body = "{ \"docnum\" : \"77\",\n  \"note\": \"Grüße\" }";
    let json_msg = accepted(&app.post_json(ACME_PROD, body, &[("x-message-type", "free.event")]).await);
    let m = message(&app, json_msg["id"].as_str().unwrap()).await;
    assert_eq!((m["payload_encoding"].as_str(), m["payload"].as_str()), (Some("utf-8"), Some(body)));
    assert_eq!(m["payload_bytes"], body.len());
    let raw = app
        .get(&format!("/admin/messages/{}/payload", json_msg["id"].as_str().unwrap()), Some(&admin()))
        .await;
    assert_eq!((raw.header("content-type"), raw.body.as_ref()), (Some("application/json"), body.as_bytes()));

    // Only the admin reads messages.
    for auth in [None, Some(bearer(ACME_PROD)), Some(basic("admin", "wrong"))] {
        app.get(&format!("/admin/messages/{id}"), auth.as_deref()).await.expect_problem(401, "");
        app.get(&format!("/admin/messages/{id}/payload"), auth.as_deref()).await.expect_problem(401, "");
    }
    // Unknown id: 404; not an id: 400.
    let unknown = uuid::Uuid::new_v4();
    for suffix in ["", "/payload"] {
        let res = app.get(&format!("/admin/messages/{unknown}{suffix}"), Some(&admin())).await;
        res.expect_problem(404, &unknown.to_string());
        let res = app.get(&format!("/admin/messages/not-a-uuid{suffix}"), Some(&admin())).await;
        res.expect_problem(400, "not-a-uuid");
    }
}

async fn lookup_returns_exactly_the_matching_messages(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "lookup-k1")];
    let m1 = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await);
    let m2 = accepted(&app.post_xml(ACME_PROD, fixture("orders05-other-system.xml")).await); // same DOCNUM
    let m3 = accepted(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await);
    let m4 = accepted(&app.post_xml(ACME_QA, fixture("orders05.xml")).await);
    let packet =
        app.post_xml_with(ACME_PROD, fixture("packet-3.xml"), &[("idempotency-key", "lookup-pk")]).await;
    packet.expect(202);
    let packet = packet.json()["messages"].as_array().unwrap().clone();
    // Repeats store nothing, so lookups do not grow.
    app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await.expect(200);
    app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await.expect(200);
    let fp = m1["fingerprint"].as_str().unwrap();
    assert_eq!(m4["fingerprint"], fp, "same document, other environment");

    let docnum = "docnum=0000000000004711";
    assert_eq!(lookup(&app, docnum).await, ids(&[&m1, &m2, &m4]));
    assert_eq!(lookup(&app, &format!("{docnum}&tenant=acme&environment=prod")).await, ids(&[&m1, &m2]));
    assert_eq!(lookup(&app, &format!("{docnum}&environment=qa")).await, ids(&[&m4]));
    assert!(lookup(&app, &format!("{docnum}&tenant=globex")).await.is_empty());
    assert_eq!(lookup(&app, "docnum=0000000000004713").await, ids(&[&m3]));
    // The fingerprint drops DOCNUM's leading zeros: a lookup takes either form.
    assert_eq!(lookup(&app, "docnum=4711").await, ids(&[&m1, &m2, &m4]));
    assert_eq!(lookup(&app, "docnum=4713&tenant=acme").await, ids(&[&m3]));
    assert!(lookup(&app, "docnum=47").await.is_empty());
    // One vocabulary: a found message names its scope as the query and
    // `/admin/messages/{id}` do.
    let found = app.get("/admin/messages?docnum=4711&environment=qa", Some(&admin())).await.json();
    let listed = &found["messages"][0];
    let shown = message(&app, m4["id"].as_str().unwrap()).await;
    for (key, value) in [("tenant", "acme"), ("environment", "qa")] {
        assert_eq!((&listed[key], &shown[key]), (&json!(value), &json!(value)), "{key}");
    }
    assert!(listed.get("tenant_id").is_none() && listed.get("environment_id").is_none(), "{listed}");
    assert_eq!(lookup(&app, &format!("fingerprint={fp}")).await, ids(&[&m1, &m4]));
    assert_eq!(lookup(&app, &format!("fingerprint={fp}&environment=prod")).await, ids(&[&m1]));
    assert_eq!(lookup(&app, "idempotency_key=lookup-k1").await, ids(&[&m1]));
    let in_packet: Vec<&Value> = packet.iter().collect();
    assert_eq!(lookup(&app, "idempotency_key=lookup-pk").await, ids(&in_packet));
    let found = app.get("/admin/messages?idempotency_key=lookup-pk", Some(&admin())).await.json();
    let indexes: Vec<&Value> =
        found["messages"].as_array().unwrap().iter().map(|m| &m["packet_index"]).collect();
    assert_eq!(indexes, [2, 1, 0], "packet order, newest (highest id) first");
    assert_eq!(lookup(&app, "docnum=0000000000004711&idempotency_key=lookup-k1").await, ids(&[&m1]));
    assert!(lookup(&app, &format!("fingerprint={}", "0".repeat(64))).await.is_empty());
    assert!(lookup(&app, "idempotency_key=never-used").await.is_empty());
    assert_eq!(lookup(&app, &format!("{docnum}&limit=1")).await.len(), 1);

    // Without a lookup key (or with an empty one) nothing is listed: 400.
    for query in ["", "?tenant=acme", "?docnum=", "?environment=prod&message_type=ORDERS05"] {
        let res = app.get(&format!("/admin/messages{query}"), Some(&admin())).await;
        res.expect_problem(400, "fingerprint");
    }
    for query in ["limit=0", "limit=501", "limit=x"] {
        app.get(&format!("/admin/messages?{docnum}&{query}"), Some(&admin()))
            .await
            .expect_problem(400, "limit");
    }
    app.get(&format!("/admin/messages?{docnum}"), None).await.expect_problem(401, "");
}

/// The acme/ORDERS05 row of `GET /admin/message-types`.
async fn acme_orders05(app: &TestApp) -> Value {
    let res = app.get("/admin/message-types", Some(&admin())).await;
    res.expect(200);
    let rows = res.json()["message_types"].as_array().unwrap().clone();
    rows.into_iter().find(|r| r["tenant_id"] == "acme" && r["id"] == "ORDERS05").expect("acme ORDERS05")
}

async fn message_type_change_applies_to_the_next_decision(backend: Backend) {
    let app = TestApp::start(backend, with_acme_orders05()).await;
    let before = acme_orders05(&app).await;
    assert_eq!(before["source"], "config");
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    // The re-issued IDoc (new DOCNUM, same order numbers) is a duplicate by key fields.
    app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await.expect(200);
    accepted(&app.post_xml(GLOBEX_PROD, fixture("orders05.xml")).await);

    // Key fields off: DOCNUM decides, so the re-issued IDoc is new from the very next request.
    let res = put_type(&app, "?tenant=acme", json!({ "duplicate_key_fields": [] })).await;
    res.expect(200);
    let change = res.json();
    assert_eq!(change["old"], before, "the old row as it was");
    assert_eq!(change["new"]["duplicate_key_fields"], json!([]));
    assert_eq!(change["new"]["source"], "admin");
    let reissued = accepted(&app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await);
    duplicate_of(
        &app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await,
        reissued["id"].as_str().unwrap(),
    );
    // Another tenant keeps the global rule.
    app.post_xml(GLOBEX_PROD, fixture("orders05-reissued.xml")).await.expect(200);

    // A one-second window: a repeat after it is new.
    let res = put_type(
        &app,
        "?tenant=acme",
        json!({ "duplicate_key_fields": ORDERS05_KEYS, "duplicate_window": "1s" }),
    )
    .await;
    res.expect(200);
    assert_eq!(res.json()["old"], change["new"]);
    assert_eq!(res.json()["new"]["duplicate_window_seconds"], 1);
    let first = accepted(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await);
    let m = message(&app, first["id"].as_str().unwrap()).await;
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!(at(&m["fingerprint_expires_at"]) - at(&m["received_at"]), chrono::Duration::seconds(1));
    duplicate_of(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await, first["id"].as_str().unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let again = accepted(&app.post_xml(ACME_PROD, fixture("ordchg05.xml")).await);
    assert_ne!(again["id"], first["id"]);

    // Both changes are audited, newest first, with old and new values.
    let events = app.audit_events("action=message_type.updated").await;
    assert_eq!(events.len(), 2, "{events:?}");
    for e in &events {
        assert_eq!((e["tenant"].as_str(), e["message_type"].as_str()), (Some("acme"), Some("ORDERS05")));
    }
    assert_eq!(events[1]["details"]["old"], before);
    assert_eq!(events[1]["details"]["new"], change["new"]);
    assert_eq!(events[0]["details"]["old"], change["new"]);
    assert_eq!(events[0]["details"]["new"]["duplicate_window_seconds"], 1);

    // Listed as an admin row; the global row still follows the config, and a
    // restart (seeding from the same config) does not undo the change.
    let row = acme_orders05(&app).await;
    assert_eq!((row["source"].as_str(), &row["duplicate_window_seconds"]), (Some("admin"), &json!(1)));
    edihub_server::prepare_with(app.state.store.clone(), app.state.config.clone()).await.expect("restart");
    assert_eq!(acme_orders05(&app).await, row);
    let res = app.get("/admin/message-types", Some(&admin())).await;
    let rows = res.json()["message_types"].as_array().unwrap().clone();
    let global = rows.iter().find(|r| r["tenant_id"] == "" && r["id"] == "ORDERS05").expect("global row");
    assert_eq!(global["source"], "config");
}

async fn invalid_message_type_change_changes_nothing(backend: Backend) {
    let app = TestApp::start(backend, with_acme_orders05()).await;
    let first = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let types_before = app.get("/admin/message-types", Some(&admin())).await.json();
    for (query, body, key) in [
        (
            "?tenant=acme",
            json!({ "duplicate_key_fields": ["E1EDK02[QUALF=001.BELNR"] }),
            "duplicate_key_fields",
        ),
        ("?tenant=acme", json!({ "duplicate_key_fields": ["E1EDK01..BELNR"] }), "duplicate_key_fields"),
        ("?tenant=acme", json!({ "exclude_fields": ["$.["] }), "exclude_fields"),
        ("?tenant=acme", json!({ "duplicate_window": "10x" }), "duplicate_window"),
        ("?tenant=acme", json!({ "duplicate_window": "0s" }), "duplicate_window"),
        ("?tenant=acme", json!({ "duplicate_window_hours": 0 }), "duplicate_window_hours"),
        ("?tenant=nosuch", json!({ "duplicate_key_fields": [] }), "tenant"),
    ] {
        let res = put_type(&app, query, body.clone()).await;
        assert_eq!(res.status.as_u16(), 422, "{query} {body}: {}", res.text());
        res.expect_problem(422, key);
    }
    // An unknown member is named too; a body that is not JSON at all is 400.
    put_type(&app, "?tenant=acme", json!({ "window": "1s" })).await.expect_problem(422, "window");
    put_type(&app, "?tenant=acme", json!([])).await.expect_problem(422, "object");
    put_type_as(&app, "?tenant=acme", Some(&admin()), "{".into()).await.expect_problem(400, "JSON");
    // No credential, or a sender's: 401.
    for auth in [None, Some(bearer(ACME_PROD))] {
        let body = json!({ "duplicate_key_fields": [] }).to_string();
        put_type_as(&app, "?tenant=acme", auth.as_deref(), body).await.expect_problem(401, "");
    }

    assert_eq!(app.get("/admin/message-types", Some(&admin())).await.json(), types_before);
    assert!(app.audit_events("action=message_type.updated").await.is_empty());
    // The rule in force is unchanged: the re-issued IDoc is still a duplicate.
    duplicate_of(
        &app.post_xml(ACME_PROD, fixture("orders05-reissued.xml")).await,
        first["id"].as_str().unwrap(),
    );
}

//! Credentials and scoping on the receive endpoint: Bearer and Basic sender
//! keys, 401 with `WWW-Authenticate` for missing, wrong or misplaced
//! credentials (nothing stored); tenants and environments never see or
//! collide with each other's messages, keys or audit events.

use crate::support::*;

backend_tests!(
    bearer_and_basic_sender_keys_work,
    missing_credentials_are_401,
    wrong_credentials_are_401,
    admin_token_is_not_a_sender_key,
    sender_key_is_not_an_admin_credential,
    same_document_in_three_environments_is_three_messages,
    keys_never_replay_across_environments,
    tenant_override_changes_only_that_tenant,
);

async fn bearer_and_basic_sender_keys_work(backend: Backend) {
    let app = TestApp::new(backend).await;
    let xml = Some("application/xml");
    let first = app.post_receive(Some(&bearer(ACME_PROD)), xml, fixture("orders05.xml"), &[]).await;
    let id = accepted(&first)["id"].as_str().unwrap().to_string();
    // SAP HTTP destinations send Basic with the key as the password; any user name.
    let res = app.post_receive(Some(&basic("SAPQ01", ACME_PROD)), xml, fixture("orders05.xml"), &[]).await;
    duplicate_of(&res, &id);
    // A second key of the same environment shares its data.
    let res = app.post_receive(Some(&basic("", ACME_PROD_2)), xml, fixture("orders05.xml"), &[]).await;
    duplicate_of(&res, &id);
    // Scheme names are case-insensitive.
    let res = app.post_receive(Some(&format!("bearer {ACME_PROD}")), xml, fixture("orders05.xml"), &[]).await;
    duplicate_of(&res, &id);
    assert_eq!(app.count_prod().await, 1);
}

#[track_caller]
fn assert_401(res: &TestResponse, detail: &str) {
    res.expect_problem(401, detail);
    let challenges: Vec<&str> =
        res.headers.get_all("www-authenticate").iter().map(|v| v.to_str().unwrap()).collect();
    assert!(!challenges.is_empty(), "WWW-Authenticate is set");
    let all = challenges.join(", ");
    assert!(all.contains("Bearer") && all.contains("Basic"), "both schemes offered: {all}");
}

async fn assert_nothing_stored(app: &TestApp) {
    for (tenant, env) in [("acme", "prod"), ("acme", "qa"), ("globex", "prod")] {
        assert_eq!(app.count(tenant, env).await, 0, "{tenant}/{env}");
    }
    assert!(app.audit_events("").await.is_empty());
}

async fn missing_credentials_are_401(backend: Backend) {
    let app = TestApp::new(backend).await;
    let xml = Some("application/xml");
    assert_401(&app.post_receive(None, xml, fixture("orders05.xml"), &[]).await, "missing");
    for auth in ["Bearer", "Bearer ", "Basic", "Digest abc", "acme-prod-key"] {
        let res = app.post_receive(Some(auth), xml, fixture("orders05.xml"), &[]).await;
        assert_eq!(res.status.as_u16(), 401, "{auth:?}: {}", res.text());
        assert_401(&res, "");
    }
    // Credentials are checked before the body: a bad body still gets 401.
    assert_401(&app.post_receive(None, Some("image/png"), "x", &[]).await, "missing");
    assert_nothing_stored(&app).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
}

async fn wrong_credentials_are_401(backend: Backend) {
    let app = TestApp::new(backend).await;
    let xml = Some("application/xml");
    let cases = [
        bearer("not-a-key"),
        bearer(&ACME_PROD.to_uppercase()),
        bearer(&format!("{ACME_PROD}x")),
        basic(ACME_PROD, ""),
        basic("user", "wrong"),
        "Basic !!!not-base64!!!".to_string(),
        // The key's digest is stored, never the key: sending the digest fails.
        bearer(&sha256_hex(ACME_PROD)),
    ];
    for auth in &cases {
        let res = app.post_receive(Some(auth), xml, fixture("orders05.xml"), &[]).await;
        assert_eq!(res.status.as_u16(), 401, "{auth}: {}", res.text());
        assert_401(&res, "");
    }
    assert_401(
        &app.post_receive(Some(&bearer("nope")), xml, fixture("orders05.xml"), &[]).await,
        "not valid",
    );
    assert_nothing_stored(&app).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
}

async fn admin_token_is_not_a_sender_key(backend: Backend) {
    let app = TestApp::new(backend).await;
    let xml = Some("application/xml");
    assert_401(&app.post_receive(Some(&bearer(ADMIN_TOKEN)), xml, fixture("orders05.xml"), &[]).await, "");
    assert_401(
        &app.post_receive(Some(&basic("admin", ADMIN_TOKEN)), xml, fixture("orders05.xml"), &[]).await,
        "",
    );
    assert_nothing_stored(&app).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
}

async fn sender_key_is_not_an_admin_credential(backend: Backend) {
    let app = TestApp::new(backend).await;
    accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    app.post_xml(ACME_PROD, fixture("orders05.xml")).await.expect(200);
    for auth in [bearer(ACME_PROD), basic("x", ACME_PROD), bearer(GLOBEX_PROD)] {
        let res = app.get("/admin/audit", Some(&auth)).await;
        assert_401(&res, "admin");
        assert!(!res.text().contains("duplicate_blocked"), "no audit data leaks");
    }
    assert_401(&app.get("/admin/audit", None).await, "missing");
    assert_eq!(app.audit_events("").await.len(), 1, "the event exists; only the caller was wrong");
}

async fn same_document_in_three_environments_is_three_messages(backend: Backend) {
    let app = TestApp::new(backend).await;
    let mut ids = Vec::new();
    for key in [ACME_PROD, ACME_QA, GLOBEX_PROD] {
        let body = accepted(&app.post_xml(key, fixture("orders05.xml")).await);
        ids.push(body["id"].as_str().unwrap().to_string());
    }
    assert_eq!(app.count("acme", "prod").await, 1);
    assert_eq!(app.count("acme", "qa").await, 1);
    assert_eq!(app.count("globex", "prod").await, 1);
    // Each environment's repeat names its own original.
    for (key, id) in [ACME_PROD, ACME_QA, GLOBEX_PROD].into_iter().zip(&ids) {
        duplicate_of(&app.post_xml(key, fixture("orders05.xml")).await, id);
    }
    let globex = app.audit_events("tenant=globex").await;
    assert_eq!(globex.len(), 1);
    assert_eq!(globex[0]["original_message_id"], ids[2]);
    assert_eq!(globex[0]["environment"], "prod");
    let acme = app.audit_events("tenant=acme").await;
    assert_eq!(acme.len(), 2);
    assert!(acme.iter().all(|e| e["tenant"] == "acme"));
    let acme_qa = app.audit_events("tenant=acme&environment=qa").await;
    assert_eq!(acme_qa.len(), 1);
    assert_eq!(acme_qa[0]["original_message_id"], ids[1]);
    assert_eq!(app.audit_events("tenant=nobody").await.len(), 0);
}

async fn keys_never_replay_across_environments(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "shared-key")];
    let prod = app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await;
    let prod_id = accepted(&prod)["id"].clone();
    // The same key elsewhere is a fresh key: new messages, no replay of prod's body.
    for other in [ACME_QA, GLOBEX_PROD] {
        let res = app.post_xml_with(other, fixture("orders05.xml"), &key).await;
        let body = accepted(&res);
        assert_ne!(body["id"], prod_id);
        assert_ne!(res.body, prod.body);
    }
    // A different payload under that key in globex is not a mismatch with prod's.
    let res =
        app.post_xml_with(GLOBEX_PROD, fixture("ordchg05.xml"), &[("idempotency-key", "k-globex")]).await;
    accepted(&res);
    let res = app.post_xml_with(ACME_PROD, fixture("ordchg05.xml"), &[("idempotency-key", "k-globex")]).await;
    accepted(&res);
    assert_eq!(app.count("acme", "prod").await, 2);
    assert_eq!(app.count("acme", "qa").await, 1);
    assert_eq!(app.count("globex", "prod").await, 2);
    assert!(app.audit_events("").await.is_empty(), "nothing was a repeat");
}

async fn tenant_override_changes_only_that_tenant(backend: Backend) {
    // globex keys ORDERS05 on the PO number alone.
    let config = TestConfig::new().message_type("ORDERS05", |t| {
        t.tenant = Some("globex".into());
        t.duplicate_key_fields = strings(["E1EDK02[QUALF=001].BELNR"]);
    });
    let app = TestApp::start(backend, config).await;
    let text = String::from_utf8(fixture("orders05.xml")).unwrap();
    let other_belnr = text.replace("<BELNR>4500012345</BELNR>", "<BELNR>4500099999</BELNR>");
    for key in [ACME_PROD, GLOBEX_PROD] {
        accepted(&app.post_xml(key, fixture("orders05.xml")).await);
    }
    // Same PO, other order number: new for acme, a duplicate for globex.
    accepted(&app.post_xml(ACME_PROD, other_belnr.clone()).await);
    assert_eq!(app.post_xml(GLOBEX_PROD, other_belnr).await.status.as_u16(), 200);
    assert_eq!(app.count("acme", "prod").await, 2);
    assert_eq!(app.count("globex", "prod").await, 1);
}

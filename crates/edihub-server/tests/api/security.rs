//! Security review, as tests (RELIABILITY.md, "Security review").
//!
//! - every `/admin` route (taken from the OpenAPI document, so a new route is
//!   covered the day it is added) refuses sender keys, missing, malformed and
//!   look-alike credentials with 401, and changes nothing;
//! - tenant and environment isolation: senders never see or collide with
//!   another environment's data, and the admin filters return exactly the
//!   scope they name (admins see all tenants, by design);
//! - no internal error text in any response, also when the database is gone;
//! - the audit HTML page escapes everything a sender controls;
//! - secrets: only SHA-256 digests in the configuration, and no secret value
//!   in `Debug` output of the configuration or the application state;
//! - constant-time comparison of credentials and signatures (a source guard).
//!
//! Two of these began as failing tests of defects found in review (S1: the
//! payload download could run a sender's script; S2: `Debug` showed the
//! database password); both are fixed and the tests now guard them.

use std::collections::BTreeSet;

use crate::support::webhook::{gubee_headers, webhook_app};
use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::{Value, json};

backend_tests!(
    every_admin_route_refuses_sender_keys_and_bad_credentials,
    admin_filters_return_exactly_the_scope_they_name,
    senders_never_see_another_environments_data,
    no_internal_error_text_when_the_database_is_gone,
    no_internal_error_text_in_client_errors,
    audit_html_escapes_everything_a_sender_controls,
);

/// Strings that must never reach a client: driver and pool errors, SQL
/// states, file paths of the build, panics.
const LEAKS: &[&str] = &[
    "sqlx",
    "pool",
    "database error:",
    "error returned from database",
    "sqlstate",
    "postgres://",
    "sqlite:",
    "os error",
    "panicked",
    "backtrace",
    ".rs:",
    "/root/",
    "/home/",
    "src/",
    "thread '",
    "invariant",
];

#[track_caller]
fn assert_no_leak(what: &str, res: &TestResponse) {
    let text = res.text().to_lowercase();
    for leak in LEAKS {
        assert!(!text.contains(leak), "{what}: response leaks {leak:?}: {}", res.text());
    }
}

/// Every (method, path) of the OpenAPI document under `/admin`.
fn admin_operations() -> Vec<(Method, String)> {
    let doc = serde_json::to_value(edihub_server::routes().1).expect("OpenAPI as JSON");
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        if !path.starts_with("/admin") {
            continue;
        }
        for method in ["get", "put", "post", "delete", "patch"] {
            if item.get(method).is_some() {
                ops.push((
                    Method::from_bytes(method.to_uppercase().as_bytes()).expect("method"),
                    path.clone(),
                ));
            }
        }
    }
    ops
}

fn request(method: &Method, uri: &str, authorization: Option<&str>, body: Option<&Value>) -> Request<Body> {
    let mut b = Request::builder().method(method.clone()).uri(uri);
    if let Some(auth) = authorization {
        b = b.header(header::AUTHORIZATION, auth);
    }
    match body {
        Some(v) => b.header(header::CONTENT_TYPE, "application/json").body(Body::from(v.to_string())),
        None => b.body(Body::empty()),
    }
    .expect("request")
}

async fn every_admin_route_refuses_sender_keys_and_bad_credentials(backend: Backend) {
    let app = TestApp::new(backend).await;
    let stored = accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await);
    let id = stored["id"].as_str().unwrap().to_string();
    let ops = admin_operations();
    assert!(ops.len() >= 8, "the OpenAPI document lists only {} admin operations: {ops:?}", ops.len());
    let before_types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    let before_integrations = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await;
    let audit_before = app.audit_events("").await.len();

    let hashed_admin = sha256_hex(ADMIN_TOKEN);
    let refused: Vec<(&str, Option<String>)> = vec![
        ("sender key, Bearer", Some(bearer(ACME_PROD))),
        ("sender key, Basic", Some(basic("sap", ACME_PROD))),
        ("another environment's sender key", Some(bearer(ACME_QA))),
        ("another tenant's sender key", Some(bearer(GLOBEX_PROD))),
        ("no credentials", None),
        ("the admin token's stored SHA-256 (pass-the-hash)", Some(bearer(&hashed_admin))),
        ("admin token plus one character", Some(bearer(&format!("{ADMIN_TOKEN}x")))),
        ("admin token minus its last character", Some(bearer(&ADMIN_TOKEN[..ADMIN_TOKEN.len() - 1]))),
        ("admin token as the Basic user name", Some(basic(ADMIN_TOKEN, ""))),
        ("empty Bearer", Some("Bearer ".to_string())),
        ("unknown scheme", Some(format!("Token {ADMIN_TOKEN}"))),
        ("Basic without base64", Some(format!("Basic {ADMIN_TOKEN}"))),
        ("upper-cased admin token", Some(bearer(&ADMIN_TOKEN.to_uppercase()))),
    ];
    let mut checked = 0;
    for (method, path) in &ops {
        let target = if path.contains("message-types") {
            "ORDERS05"
        } else if path.contains("integrations") {
            "shop-orders"
        } else {
            id.as_str()
        };
        let uri = format!(
            "{}{}",
            path.replace("{id}", target),
            if path == "/admin/messages" { "?docnum=0000000000004711" } else { "" }
        );
        let body = (*method == Method::PUT).then(|| {
            if path.contains("integrations") {
                json!({"tenant":"acme","environment":"prod","message_type":"shop.order","signature":{"scheme":"none"}})
            } else {
                json!({"duplicate_key_fields":["E1EDK01.BELNR"],"duplicate_window":"1s"})
            }
        });
        for (what, auth) in &refused {
            let res = app.send(request(method, &uri, auth.as_deref(), body.as_ref())).await;
            assert_eq!(res.status.as_u16(), 401, "{method} {uri} with {what}: {}", res.text());
            assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{method} {uri} with {what}");
            assert!(
                res.headers.get(header::WWW_AUTHENTICATE).is_some(),
                "{method} {uri}: no WWW-Authenticate"
            );
            let text = res.text();
            assert!(
                !text.contains(&id) && !text.contains("E1EDK01") && !text.contains("4711"),
                "{method} {uri} leaks data: {text}"
            );
            assert_no_leak(&format!("{method} {uri}"), &res);
            checked += 1;
        }
        // The route exists and the admin gets past authentication (reads only: no change).
        if *method == Method::GET {
            let res = app.send(request(method, &uri, Some(&bearer(ADMIN_TOKEN)), None)).await;
            assert_ne!(res.status.as_u16(), 401, "{method} {uri} refuses the admin");
            let res = app.send(request(method, &uri, Some(&basic("admin", ADMIN_TOKEN)), None)).await;
            assert_ne!(res.status.as_u16(), 401, "{method} {uri} refuses the admin with Basic");
        }
    }
    assert_eq!(checked, ops.len() * refused.len());
    // Nothing changed: no type, no integration, no audit event.
    let after_types = app.get("/admin/message-types", Some(&bearer(ADMIN_TOKEN))).await;
    let after_integrations = app.get("/admin/integrations", Some(&bearer(ADMIN_TOKEN))).await;
    assert_eq!(before_types.json(), after_types.json(), "a refused request changed message types");
    assert_eq!(
        before_integrations.json(),
        after_integrations.json(),
        "a refused request changed integrations"
    );
    assert_eq!(app.audit_events("").await.len(), audit_before, "a refused request was audited as a change");
}

/// The same order in acme/prod, acme/qa and globex/prod, each sent twice.
async fn three_scopes(app: &TestApp) -> [String; 3] {
    let mut ids = Vec::new();
    for key in [ACME_PROD, ACME_QA, GLOBEX_PROD] {
        let body = accepted(&app.post_xml(key, fixture("orders05.xml")).await);
        let id = body["id"].as_str().unwrap().to_string();
        duplicate_of(&app.post_xml(key, fixture("orders05.xml")).await, &id);
        ids.push(id);
    }
    [ids[0].clone(), ids[1].clone(), ids[2].clone()]
}

async fn admin_filters_return_exactly_the_scope_they_name(backend: Backend) {
    let app = TestApp::new(backend).await;
    let [prod, qa, globex] = three_scopes(&app).await;
    let admin = bearer(ADMIN_TOKEN);
    let find = |q: &str| {
        let (app, admin, q) = (&app, admin.clone(), q.to_string());
        async move {
            let res = app.get(&format!("/admin/messages?{q}"), Some(&admin)).await;
            res.expect(200);
            let found: BTreeSet<(String, String, String)> = res.json()["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .map(|m| {
                    let s = |k: &str| m[k].as_str().map_or_else(|| m[k].to_string(), str::to_string);
                    (s("id"), s("tenant"), s("environment"))
                })
                .collect();
            found
        }
    };
    let all = find("docnum=0000000000004711").await;
    assert_eq!(all.len(), 3, "admins see every tenant (by design): {all:?}");
    let only =
        |found: &BTreeSet<(String, String, String)>| found.iter().map(|t| t.0.clone()).collect::<Vec<_>>();
    assert_eq!(only(&find("docnum=0000000000004711&tenant=globex").await), [globex.as_str()]);
    assert_eq!(only(&find("docnum=0000000000004711&tenant=acme&environment=qa").await), [qa.as_str()]);
    let mut acme = only(&find("docnum=0000000000004711&tenant=acme").await);
    acme.sort();
    let mut expected = vec![prod.clone(), qa.clone()];
    expected.sort();
    assert_eq!(acme, expected);
    assert!(find("docnum=0000000000004711&tenant=nobody").await.is_empty());
    assert!(find("docnum=0000000000004711&tenant=globex&environment=qa").await.is_empty());
    // The fingerprint is the same in all three scopes; the filter still separates them.
    let fp = app.get(&format!("/admin/messages/{prod}"), Some(&admin)).await.json()["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(find(&format!("fingerprint={fp}")).await.len(), 3);
    assert_eq!(
        only(&find(&format!("fingerprint={fp}&tenant=globex&environment=prod")).await),
        [globex.as_str()]
    );
    // Audit: each scope's duplicate is its own event, and the filters keep them apart.
    for (tenant, environment, original) in
        [("acme", "prod", &prod), ("acme", "qa", &qa), ("globex", "prod", &globex)]
    {
        let events = app.audit_events(&format!("tenant={tenant}&environment={environment}")).await;
        assert_eq!(events.len(), 1, "{tenant}/{environment}: {events:?}");
        assert_eq!(events[0]["tenant"], tenant);
        assert_eq!(events[0]["environment"], environment);
        assert_eq!(events[0]["original_message_id"], original.as_str());
    }
    // The HTML page honours the same filters.
    let html = app
        .send(
            Request::builder()
                .uri("/admin/audit?tenant=globex")
                .header(header::AUTHORIZATION, &admin)
                .header(header::ACCEPT, "text/html")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    html.expect(200);
    let page = html.text();
    assert_eq!(page.matches("<tr class=\"event\">").count(), 1, "{page}");
    assert!(page.contains(&globex) && !page.contains(&prod) && !page.contains(&qa));
}

async fn senders_never_see_another_environments_data(backend: Backend) {
    let app = TestApp::new(backend).await;
    let key = [("idempotency-key", "shared-key-1")];
    let acme = accepted(&app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &key).await);
    // Another tenant: the same document and the same key are new there, never acme's answer.
    let res = app.post_xml_with(GLOBEX_PROD, fixture("orders05.xml"), &key).await;
    let globex = accepted(&res);
    assert_ne!(globex["id"], acme["id"]);
    assert!(!res.text().contains(acme["id"].as_str().unwrap()));
    // A different payload under that key in globex is refused or new, never acme's body.
    let other =
        app.post_xml_with(GLOBEX_PROD, fixture("ordchg05.xml"), &[("idempotency-key", "shared-key-1")]).await;
    assert!(!other.text().contains(acme["id"].as_str().unwrap()), "{}", other.text());
    // Another environment of the same tenant.
    let qa = accepted(&app.post_xml_with(ACME_QA, fixture("orders05.xml"), &key).await);
    assert_ne!(qa["id"], acme["id"]);
    // Each scope's repeat names its own original.
    for (k, original) in [(ACME_PROD, &acme), (GLOBEX_PROD, &globex), (ACME_QA, &qa)] {
        let res = app.post_xml(k, fixture("orders05.xml")).await;
        duplicate_of(&res, original["id"].as_str().unwrap());
    }
    assert_eq!(
        (app.count("acme", "prod").await, app.count("acme", "qa").await, app.count("globex", "prod").await),
        (1, 1, 1)
    );
}

async fn no_internal_error_text_when_the_database_is_gone(backend: Backend) {
    let app = TestApp::new(backend).await;
    let id =
        accepted(&app.post_xml(ACME_PROD, fixture("orders05.xml")).await)["id"].as_str().unwrap().to_string();
    app.state.store.close().await;
    let admin = bearer(ADMIN_TOKEN);
    let mut cases: Vec<(String, TestResponse)> = Vec::new();
    cases.push(("receive".into(), app.post_xml(ACME_PROD, fixture("orders05-other-system.xml")).await));
    cases.push((
        "receive with a key".into(),
        app.post_xml_with(ACME_PROD, fixture("orders05.xml"), &[("idempotency-key", "k-down")]).await,
    ));
    cases.push((
        "plain JSON".into(),
        app.post_json(ACME_PROD, r#"{"docnum":"1","order":{"id":"x"}}"#, &[("x-message-type", "shop.order")])
            .await,
    ));
    for path in [
        format!("/admin/messages/{id}"),
        format!("/admin/messages/{id}/payload"),
        "/admin/messages?docnum=0000000000004711".to_string(),
        "/admin/audit".to_string(),
        "/admin/message-types".to_string(),
        "/admin/integrations".to_string(),
        "/readyz".to_string(),
    ] {
        cases.push((path.clone(), app.get(&path, Some(&admin)).await));
    }
    let html = Request::builder()
        .uri("/admin/audit")
        .header(header::AUTHORIZATION, &admin)
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .unwrap();
    cases.push(("audit HTML".into(), app.send(html).await));
    let put = request(
        &Method::PUT,
        "/admin/message-types/ORDERS05",
        Some(&admin),
        Some(&json!({"duplicate_key_fields":["E1EDK01.BELNR"]})),
    );
    cases.push(("PUT message type".into(), app.send(put).await));
    for (what, res) in &cases {
        assert_eq!(res.status.as_u16(), 503, "{what}: {}", res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}");
        assert!(res.header("retry-after").is_some(), "{what}: no Retry-After");
        assert_no_leak(what, res);
    }
    // Liveness and metrics do not need the database.
    app.get("/healthz", None).await.expect(200);
    app.get("/metrics", None).await.expect(200);
}

async fn no_internal_error_text_in_client_errors(backend: Backend) {
    let app = TestApp::new(backend).await;
    let admin = bearer(ADMIN_TOKEN);
    let xml = Some("application/xml");
    let auth = Some(bearer(ACME_PROD));
    let nested_json = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let long_key = "k".repeat(201);
    type Case<'a> = (&'a str, Option<&'a str>, Vec<u8>, Vec<(&'a str, &'a str)>);
    let bodies: Vec<Case> = vec![
        ("truncated XML", xml, b"<ORDERS05><IDOC BEGIN=\"1\"><EDI_DC40>".to_vec(), vec![]),
        ("DOCTYPE", xml, b"<!DOCTYPE x [<!ENTITY a \"b\">]><ORDERS05/>".to_vec(), vec![]),
        (
            "invalid UTF-8",
            xml,
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><ORDERS05>\xff\xfe</ORDERS05>".to_vec(),
            vec![],
        ),
        (
            "unknown encoding",
            xml,
            b"<?xml version=\"1.0\" encoding=\"EBCDIC-XYZ\"?><ORDERS05/>".to_vec(),
            vec![],
        ),
        (
            "no control record",
            xml,
            b"<ORDERS05><IDOC BEGIN=\"1\"><E1EDK01/></IDOC></ORDERS05>".to_vec(),
            vec![],
        ),
        ("bad JSON", Some("application/json"), b"{\"a\":".to_vec(), vec![]),
        ("deep JSON", Some("application/json"), nested_json.into_bytes(), vec![]),
        ("JSON without type", Some("application/json"), b"{\"docnum\":\"1\"}".to_vec(), vec![]),
        ("unsupported type", Some("image/png"), b"\x89PNG".to_vec(), vec![]),
        ("bad key", xml, fixture("orders05.xml"), vec![("idempotency-key", "")]),
        ("long key", xml, fixture("orders05.xml"), vec![("idempotency-key", long_key.as_str())]),
        ("bad message type", xml, fixture("orders05.xml"), vec![("x-message-type", "a b")]),
    ];
    for (what, ct, body, headers) in bodies {
        let res = app.post_receive(auth.as_deref(), ct, body, &headers).await;
        assert!(res.status.is_client_error(), "{what}: {} {}", res.status, res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}");
        assert_no_leak(what, &res);
    }
    for (what, uri) in [
        ("bad id", "/admin/messages/%3Cscript%3E"),
        ("unknown id", "/admin/messages/00000000-0000-0000-0000-000000000000"),
        ("no filter", "/admin/messages"),
        ("bad limit", "/admin/messages?docnum=1&limit=0"),
        ("bad cursor", "/admin/audit?cursor=abc"),
        ("bad since", "/admin/audit?since=yesterday"),
        ("bad query", "/admin/audit?limit=%FF"),
        ("no route", "/admin/nothing"),
        ("unknown integration", "/api/webhook/nope"),
    ] {
        let res = app.get(uri, Some(&admin)).await;
        assert!(res.status.is_client_error(), "{what}: {} {}", res.status, res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "{what}: {}", res.text());
        assert_no_leak(what, &res);
    }
    for (what, body) in [
        ("bad JSON", "{"),
        ("unknown field", r#"{"nope":1}"#),
        ("bad window", r#"{"duplicate_window":"-1s"}"#),
    ] {
        let req = Request::builder()
            .method(Method::PUT)
            .uri("/admin/message-types/ORDERS05")
            .header(header::AUTHORIZATION, &admin)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap();
        let res = app.send(req).await;
        assert!(res.status.is_client_error(), "PUT {what}: {} {}", res.status, res.text());
        assert_eq!(res.header("content-type"), Some(PROBLEM_JSON), "PUT {what}");
        assert_no_leak(what, &res);
    }
}

/// Tag names in an HTML text (lower-cased), `!doctype` included.
fn tag_names(html: &str) -> BTreeSet<String> {
    html.split('<')
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest
                .trim_start_matches('/')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '!')
                .collect();
            (!name.is_empty()).then(|| name.to_lowercase())
        })
        .collect()
}

async fn audit_html_escapes_everything_a_sender_controls(backend: Backend) {
    let app = TestApp::new(backend).await;
    // XML-escaped in the IDoc, so the parsed values carry the raw markup.
    let hostile_belnr = "&lt;script&gt;alert(1)&lt;/script&gt;";
    let hostile_po = "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;";
    let xml = String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace(
            "<BELNR>4500012345</BELNR>\n    </E1EDK01>",
            &format!("<BELNR>{hostile_belnr}</BELNR>\n    </E1EDK01>"),
        )
        .replace("<BELNR>PO-77881</BELNR>", &format!("<BELNR>{hostile_po}</BELNR>"))
        .replace("<DOCNUM>0000000000004711</DOCNUM>", "<DOCNUM>&lt;b onmouseover=alert(3)&gt;4711</DOCNUM>");
    assert!(xml.contains(hostile_belnr) && xml.contains(hostile_po), "fixture layout changed");
    let key = "<script>alert(4)</script>";
    let original = accepted(&app.post_xml_with(ACME_PROD, xml.clone(), &[("idempotency-key", key)]).await);
    // Blocked by the key (audit keeps the key) and by the fingerprint (audit keeps docnum and key values).
    app.post_xml_with(ACME_PROD, xml.clone(), &[("idempotency-key", key)]).await.expect(200);
    duplicate_of(&app.post_xml(ACME_PROD, xml.clone()).await, original["id"].as_str().unwrap());
    // A message type chosen by the sender cannot carry markup (refused, not
    // stored); key values of plain JSON can.
    let json_body = r#"{"docnum":"9","order":{"id":"<iframe src=javascript:alert(6)>"}}"#;
    let evil_type = [("x-message-type", "<svg/onload=alert(5)>")];
    app.post_json(ACME_PROD, json_body, &evil_type).await.expect_problem(400, "X-Message-Type");
    accepted(&app.post_json(ACME_PROD, json_body, &[("x-message-type", "shop.order")]).await);
    app.post_json(ACME_PROD, json_body, &[("x-message-type", "shop.order")]).await.expect(200);
    assert!(app.audit_events("").await.len() >= 3);

    // Filter values are reflected into the form: hostile ones too.
    let filters = "message_type=%22%3E%3Cscript%3Ealert(7)%3C%2Fscript%3E&action=%3Cimg%20src%3Dx%3E";
    for query in ["limit=500", "limit=1", filters] {
        let res = app
            .send(
                Request::builder()
                    .uri(format!("/admin/audit?{query}"))
                    .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
                    .header(header::ACCEPT, "text/html,application/xhtml+xml")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        res.expect(200);
        assert!(res.header("content-type").is_some_and(|c| c.starts_with("text/html")));
        let page = res.text();
        let allowed: BTreeSet<String> = [
            "!doctype", "html", "head", "meta", "title", "style", "body", "h1", "form", "label", "input",
            "button", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "a", "span",
            // The console layout: navigation and the details column's lists.
            "nav", "main", "div", "ul", "li",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let tags = tag_names(&page);
        assert!(
            tags.is_subset(&allowed),
            "{query}: unexpected tags {:?}",
            tags.difference(&allowed).collect::<Vec<_>>()
        );
        for raw in ["<script", "<img", "<svg", "<iframe", "<b "] {
            assert!(!page.contains(raw), "{query}: raw {raw:?} in the page");
        }
        // Attribute values stay closed: each input has exactly its three quoted attributes.
        for input in page.split("<input").skip(1) {
            let tag = &input[..input.find('>').expect("closed input")];
            assert_eq!(tag.matches('"').count(), 6, "{query}: attribute injection in <input{tag}>");
        }
        if query == "limit=500" {
            assert!(
                page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                "the key values are shown, escaped"
            );
            assert!(
                page.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"),
                "the PO number is shown, escaped"
            );
            assert!(
                page.contains("&lt;iframe src=javascript:alert(6)&gt;"),
                "JSON key values are shown, escaped"
            );
            assert!(page.contains("&lt;b onmouseover=alert(3)&gt;4711"), "the docnum is shown, escaped");
        }
        if query == filters {
            assert!(
                page.contains("&quot;&gt;&lt;script&gt;alert(7)&lt;/script&gt;"),
                "the filter is echoed, escaped"
            );
        }
    }
}

/// The configuration and the application state print no secret value: API
/// keys and the admin token exist only as SHA-256 digests, and integration
/// secrets are shown by variable name only.
#[tokio::test]
async fn debug_output_shows_no_secret() {
    let shop_secret = "shop-secret-value-9f3k";
    let toml = format!(
        r#"
listen = "127.0.0.1:0"
database_url = "sqlite::memory:"
[admin]
token_sha256 = "{admin}"
[[tenants]]
id = "acme"
  [[tenants.environments]]
  id = "prod"
  api_keys_sha256 = ["{key}"]
[[message_types]]
id = "shop.order"
duplicate_key_fields = ["$.id"]
[[integrations]]
id = "shop"
tenant = "acme"
environment = "prod"
message_type = "shop.order"
signature = {{ scheme = "shopify", secret_env = "SHOP_SECRET" }}
"#,
        admin = sha256_hex(ADMIN_TOKEN),
        key = sha256_hex(ACME_PROD),
    );
    let secrets =
        edihub_server::SecretSource::Fixed([("SHOP_SECRET".to_string(), shop_secret.to_string())].into());
    let config = edihub_server::Config::from_toml_with_secrets(&toml, secrets).expect("config");
    let db = edihub_store::testing::TestDb::new(Backend::Sqlite).await;
    let state = edihub_server::prepare_with(db.store().await, config.clone()).await.expect("prepare");
    for (what, text) in [
        ("Config", format!("{config:?}")),
        ("AppState", format!("{state:?}")),
        ("Config {:#?}", format!("{config:#?}")),
    ] {
        for secret in [shop_secret, ADMIN_TOKEN, ACME_PROD] {
            assert!(!text.contains(secret), "{what} Debug shows a secret: {secret}");
        }
        assert!(text.contains(&sha256_hex(ACME_PROD)), "{what}: keys appear as their digest");
    }
    // The plaintext of a key is refused where a digest belongs, and the error does not echo it.
    let plain = toml.replace(&sha256_hex(ACME_PROD), "my-plaintext-api-key");
    let err = edihub_server::Config::from_toml(&plain).expect_err("a plaintext key is refused").to_string();
    assert!(err.contains("api_keys_sha256") && !err.contains("my-plaintext-api-key"), "{err}");
    let plain = toml.replace(&sha256_hex(ADMIN_TOKEN), "my-plaintext-admin-token");
    let err = edihub_server::Config::from_toml(&plain).expect_err("a plaintext token is refused").to_string();
    assert!(err.contains("token_sha256") && !err.contains("my-plaintext-admin-token"), "{err}");
}

/// S2: `Config`'s derived `Debug` prints `database_url` whole, password
/// included (and `AppState`'s Debug with it). Nothing logs it today, but any
/// `?config` in a log line, panic message or error report would.
#[tokio::test]
async fn debug_output_shows_no_database_password() {
    let toml = format!(
        "database_url = \"postgres://edihub:pg-s3cret-pw@db.internal:5432/edihub\"\n[admin]\ntoken_sha256 = \"{}\"\n",
        sha256_hex(ADMIN_TOKEN)
    );
    let config = edihub_server::Config::from_toml(&toml).expect("config");
    let text = format!("{config:?}");
    assert!(!text.contains("pg-s3cret-pw"), "Config Debug shows the database password: {text}");
}

/// S1: `GET /admin/messages/{id}/payload` serves sender-controlled bytes
/// with the sender-controlled Content-Type, from the admin's origin, with no
/// `Content-Security-Policy`, `X-Content-Type-Options` or
/// `Content-Disposition`. A webhook labelled `Content-Type: text/html` (any
/// label is stored: "webhooks are JSON whatever the provider labels them")
/// whose JSON carries `<script>` is stored XSS against the admin who opens
/// the payload link; an IDoc posted as `application/xhtml+xml` (any `+xml`
/// is accepted as XML) with an XHTML-namespaced `<script>` is the same
/// through the sender API.
#[tokio::test]
async fn payload_download_cannot_run_script() {
    let app = webhook_app(Backend::Sqlite).await;
    let body = r#"{"itemId":"<script>alert(document.domain)</script>","type":"x","received":"2024-06-12"}"#;
    let mut req = Request::builder()
        .method(Method::POST)
        .uri("/api/webhook/gubee")
        .header(header::CONTENT_TYPE, "text/html");
    for (k, v) in gubee_headers(body) {
        req = req.header(k, v);
    }
    let res = app.send(req.body(Body::from(body)).unwrap()).await;
    res.expect(202);
    let webhook_id = res.json()["id"].as_str().unwrap().to_string();

    let xhtml = String::from_utf8(fixture("orders05.xml"))
        .unwrap()
        .replace("<ORDERS05>", "<ORDERS05 xmlns=\"http://www.w3.org/1999/xhtml\">")
        .replace("</IDOC>", "<script>alert(document.domain)</script></IDOC>");
    let res = app.post_receive(Some(&bearer(ACME_PROD)), Some("application/xhtml+xml"), xhtml, &[]).await;
    res.expect(202);
    let idoc_id = res.json()["id"].as_str().unwrap().to_string();

    for id in [webhook_id, idoc_id] {
        let res = app.get(&format!("/admin/messages/{id}/payload"), Some(&bearer(ADMIN_TOKEN))).await;
        res.expect(200);
        let h = |n: &str| res.header(n).unwrap_or("").to_lowercase();
        let sandboxed = h("content-security-policy").contains("sandbox")
            || h("content-security-policy").contains("default-src 'none'");
        let download = h("content-disposition").starts_with("attachment");
        assert!(
            h("x-content-type-options") == "nosniff" && (sandboxed || download),
            "payload of {id} served as {:?} with CSP {:?}, nosniff {:?}, disposition {:?}: a browser runs its script",
            res.header("content-type"),
            res.header("content-security-policy"),
            res.header("x-content-type-options"),
            res.header("content-disposition")
        );
    }
}

/// Credentials and signatures are compared in constant time. A source guard:
/// the admin digest goes through `subtle::ConstantTimeEq`, every webhook MAC
/// through `Mac::verify_slice` (in `check_body`, which every scheme uses), and no digest or signature is compared with
/// `==` (sender keys are looked up by the digest of the presented key, which
/// leaks nothing about stored keys; see src/auth.rs).
#[test]
fn credentials_and_signatures_are_compared_in_constant_time() {
    let auth = include_str!("../../src/auth.rs");
    let signature = include_str!("../../src/integrations/signature.rs");
    assert!(auth.contains("ct_eq(&self.admin)"), "the admin digest is not compared with ct_eq");
    assert!(auth.contains("self.senders.get(&digest)"), "sender keys are not looked up by digest");
    // Every scheme's MAC is checked by one function, `check_body`, with verify_slice.
    let check_body = &signature[signature.find("pub fn check_body").expect("check_body")..];
    let check_body = &check_body[..check_body.find("\n    }\n").expect("end of check_body")];
    assert!(check_body.contains(".verify_slice(sig)"), "MACs are not verified with Mac::verify_slice");
    assert!(
        signature.contains("Some(presented) => self.check_body(&presented, body)"),
        "verify bypasses check_body"
    );
    for (n, line) in signature.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let compares = code.contains("==") || code.contains("!=") || code.contains(".eq(");
        let secretish =
            ["sig", "mac", "expected", "digest", "computed"].iter().any(|w| code.to_lowercase().contains(w));
        if compares && secretish {
            assert!(code.contains("len()"), "signature.rs:{}: a signature compared with ==: {line}", n + 1);
        }
    }
}

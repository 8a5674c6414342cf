//! `GET /openapi.json` against the real router: the document parses and is
//! the one `edihub_server::routes()` builds; every (path, method) in it is
//! served (a request with credentials and dummy path parameters never hits
//! the "no such route" fallback or 405, and answers a documented status);
//! conversely the router has no method the document leaves out (the `Allow`
//! of a 405 lists exactly the documented ones) and the documented routes are
//! exactly the product's; every operation documents a response; the bearer
//! and basic security schemes exist and protected operations answer 401
//! without a credential. Runs on SQLite: nothing here depends on the backend.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::*;
use axum::body::Body;
use axum::http::{Method, Request};
use edihub_server::config::SignatureConfig;
use serde_json::Value;

/// Every route PRODUCT.md and the README promise, and nothing else.
const PRODUCT_ROUTES: [(&str, &str); 34] = [
    ("get", "/admin"),
    ("post", "/api/edi-hub/receive-message"),
    ("get", "/api/edi-hub/messages"),
    ("post", "/api/webhook/{integration_id}"),
    ("post", "/as2"),
    ("get", "/admin/as2/messages"),
    ("get", "/admin/as2/partners"),
    ("get", "/admin/audit"),
    ("get", "/admin/messages"),
    ("get", "/admin/messages/{id}"),
    ("get", "/admin/messages/{id}/payload"),
    ("get", "/admin/message-types"),
    ("put", "/admin/message-types/{id}"),
    ("get", "/admin/integrations"),
    ("put", "/admin/integrations/{id}"),
    ("get", "/admin/destinations"),
    ("get", "/admin/destinations/{id}"),
    ("put", "/admin/destinations/{id}"),
    ("post", "/admin/destinations/{id}/enable"),
    ("post", "/admin/destinations/{id}/disable"),
    ("get", "/admin/messages/{id}/deliveries"),
    ("post", "/admin/messages/{id}/redeliver"),
    ("post", "/admin/deliveries/replay"),
    ("post", "/admin/forms/redeliver/{id}"),
    ("get", "/admin/forms/message-types/{id}"),
    ("post", "/admin/forms/message-types/{id}"),
    ("get", "/admin/forms/destinations/{id}"),
    ("post", "/admin/forms/destinations/{id}"),
    ("get", "/admin/forms/integrations/{id}"),
    ("post", "/admin/forms/integrations/{id}"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/openapi.json"),
];

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// A webhook integration without signatures, so its route can be exercised.
fn probe_integration() -> TestConfig {
    TestConfig::new().integration("probe", |i| {
        i.message_type = Some("probe.event".into());
        i.signature = Some(SignatureConfig {
            scheme: "none".into(),
            secret_env: None,
            header: None,
            encoding: None,
            prefix: None,
        });
    })
}

async fn document(app: &TestApp) -> Value {
    let res = app.get("/openapi.json", None).await;
    res.expect(200);
    assert!(res.header("content-type").is_some_and(|t| t.starts_with("application/json")));
    res.json()
}

/// (method, path) → operation object.
fn operations(doc: &Value) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths object") {
        for (method, op) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                out.insert((method.clone(), path.clone()), op.clone());
            }
        }
    }
    out
}

/// The request that exercises one operation, with path parameters filled.
fn probe(method: &str, path: &str, authorization: Option<&str>) -> Request<Body> {
    let uri = path.replace("{id}", &uuid::Uuid::new_v4().to_string()).replace("{integration_id}", "probe");
    let (content_type, body): (&str, Vec<u8>) = match path {
        RECEIVE => ("application/xml", fixture("orders05.xml")),
        _ if method == "get" => ("application/json", Vec::new()),
        p if p.starts_with("/api/webhook/") => ("application/json", br#"{"id":"evt-1","n":1}"#.to_vec()),
        _ => ("application/json", b"{}".to_vec()),
    };
    let mut builder = Request::builder().method(method.to_uppercase().as_str()).uri(uri);
    if method != "get" {
        builder = builder.header("content-type", content_type);
    }
    if let Some(auth) = authorization {
        builder = builder.header("authorization", auth);
    }
    builder.body(Body::from(body)).expect("request")
}

fn is_no_such_route(res: &TestResponse) -> bool {
    res.status == 405 || (res.status == 404 && res.text().contains("no such route"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn document_matches_the_router() {
    let app = TestApp::start(Backend::Sqlite, probe_integration()).await;
    let doc = document(&app).await;
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "OpenAPI 3.1: {}", doc["openapi"]);
    assert_eq!(doc, serde_json::to_value(edihub_server::routes().1).unwrap(), "served = built");
    let ops = operations(&doc);

    // The documented routes are exactly the product's routes.
    let documented: BTreeSet<(String, String)> = ops.keys().cloned().collect();
    let promised: BTreeSet<(String, String)> =
        PRODUCT_ROUTES.iter().map(|(m, p)| ((*m).to_string(), (*p).to_string())).collect();
    assert_eq!(documented, promised);

    for ((method, path), op) in &ops {
        let responses = op["responses"].as_object().filter(|r| !r.is_empty());
        let responses = responses.unwrap_or_else(|| panic!("{method} {path}: no documented response"));
        let secured = op["security"].as_array().is_some_and(|s| !s.is_empty());
        let credential = if path == "/admin" || path.starts_with("/admin/") {
            Some(bearer(ADMIN_TOKEN))
        } else if path == RECEIVE {
            Some(bearer(ACME_PROD))
        } else if path == "/api/edi-hub/messages" {
            Some(bearer(ACME_PROD_FEED))
        } else {
            None
        };
        assert_eq!(secured, credential.is_some(), "{method} {path}: security requirement");

        // Served: never the fallback, and a documented status.
        let res = app.send(probe(method, path, credential.as_deref())).await;
        assert!(!is_no_such_route(&res), "{method} {path} is not served: {} {}", res.status, res.text());
        let status = res.status.as_str().to_string();
        assert!(
            responses.contains_key(&status),
            "{method} {path} answered undocumented {status}: {}",
            res.text()
        );
        if secured {
            let res = app.send(probe(method, path, None)).await;
            res.expect_problem(401, "");
            assert!(responses.contains_key("401"), "{method} {path}: 401 undocumented");
        }

        // Path parameters are declared.
        for name in path.split('{').skip(1).filter_map(|s| s.split_once('}')).map(|(n, _)| n) {
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            let declared =
                params.iter().any(|p| p["name"] == name && p["in"] == "path" && p["required"] == true);
            assert!(declared, "{method} {path}: path parameter {name} not declared");
        }
    }

    // Conversely: on every documented path the router allows exactly the
    // documented methods (HEAD comes with GET).
    let paths: BTreeSet<&String> = ops.keys().map(|(_, p)| p).collect();
    for path in paths {
        let want: BTreeSet<String> =
            ops.keys().filter(|(_, p)| p == path).map(|(m, _)| m.to_uppercase()).collect();
        let uri = path.replace("{id}", "x").replace("{integration_id}", "probe");
        let request = Request::builder().method(Method::PATCH).uri(&uri).body(Body::empty()).unwrap();
        let res = app.send(request).await;
        res.expect_problem(405, "");
        let allow = res.header("allow").unwrap_or_else(|| panic!("{path}: 405 without Allow"));
        let got: BTreeSet<String> = allow
            .split(',')
            .map(|m| m.trim().to_string())
            .filter(|m| !(m == "HEAD" && want.contains("GET")))
            .collect();
        assert_eq!(got, want, "{path}: methods the router serves");
    }
    // And paths outside the document are not served.
    for path in ["/", "/admin/", "/admin/messages/x/raw", "/api/webhook", "/openapi.yaml", "/metrics/x"] {
        app.get(path, Some(&bearer(ADMIN_TOKEN))).await.expect_problem(404, "no such route");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn security_schemes_and_references() {
    let app = TestApp::new(Backend::Sqlite).await;
    let doc = document(&app).await;
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["type"], "http");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["basic"]["type"], "http");
    assert_eq!(schemes["basic"]["scheme"], "basic");

    for ((method, path), op) in operations(&doc) {
        for requirement in op["security"].as_array().into_iter().flatten() {
            for name in requirement.as_object().expect("requirement").keys() {
                assert!(schemes.get(name).is_some(), "{method} {path}: unknown scheme {name}");
            }
        }
        for (status, response) in op["responses"].as_object().expect("responses") {
            assert!(
                response["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{method} {path} {status}"
            );
            let code: u16 = status.parse().unwrap_or_else(|_| panic!("{method} {path}: status {status}"));
            // A console form refused for its input answers the form again (HTML).
            let console = op["tags"].as_array().is_some_and(|t| t.contains(&Value::from("console")));
            if code >= 400 && !(console && code == 422) {
                let problem = &response["content"]["application/problem+json"];
                assert!(problem.is_object(), "{method} {path} {status}: not a problem document");
            }
        }
    }

    // Every $ref points at a schema the document defines.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.clone());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("unexpected $ref {r}"));
        assert!(doc["components"]["schemas"].get(name).is_some(), "dangling $ref {r}");
    }
}

/// The receive route's answers that can be an EDI acknowledgement (202,
/// 200, and 400/422 for a refused interchange whose header was read) list
/// both EDI media types as text with an example that reads back as an
/// interchange of its syntax (a TA1 alone holds no message), beside JSON or
/// the problem document.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn receive_documents_its_acknowledgements() {
    let app = TestApp::new(Backend::Sqlite).await;
    let doc = document(&app).await;
    let responses = &doc["paths"][RECEIVE]["post"]["responses"];
    for (status, json) in [
        ("202", "application/json"),
        ("200", "application/json"),
        ("400", PROBLEM_JSON),
        ("422", PROBLEM_JSON),
    ] {
        let content = &responses[status]["content"];
        assert!(content[json]["schema"].is_object(), "{status}: {json}");
        for (media, syntax) in [("application/EDI-X12", "X12"), ("application/EDIFACT", "EDIFACT")] {
            assert_eq!(content[media]["schema"]["type"], "string", "{status} {media}");
            let example =
                content[media]["example"].as_str().unwrap_or_else(|| panic!("{status} {media}: example"));
            match edihub_core::parse_body(example.as_bytes(), Some(media)) {
                Ok(back) => assert_eq!(back.interchange.expect("an interchange").syntax.as_str(), syntax),
                Err(e) => {
                    assert!(
                        syntax == "X12" && e.to_string().contains("holds no message"),
                        "{status} {media}: {e}"
                    );
                    assert!(example.contains("~TA1*"), "{status} {media}: a TA1 alone: {example}");
                }
            }
        }
    }
    let rejected =
        |status: &str, media: &str| responses[status]["content"][media]["example"].as_str().unwrap_or("");
    assert!(rejected("422", "application/EDI-X12").contains("AK5*R*4~"), "a set rejected for its count");
    assert!(rejected("422", "application/EDIFACT").contains("'UCM+1+ORDERS:D:96A:UN:EAN008+4+29'"));
    assert!(rejected("400", "application/EDI-X12").contains("*R*023~"), "premature end");
    assert!(rejected("400", "application/EDIFACT").contains("+4+13'"), "missing");
}

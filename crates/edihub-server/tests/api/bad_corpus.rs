//! The hostile-input corpus `fixtures/bad/` (issue #6, "Proof under
//! faults") through the real router, on SQLite and on PostgreSQL.
//!
//! Every case of `fixtures/bad/manifest.json` (written by
//! `fixtures/bad/make_bad.py`, whose docstring documents the fields) is posted
//! to the receive endpoint with the headers it describes; header bytes that
//! are not text (invalid UTF-8, tabs) are built here. A refused case must get
//! its documented status as `application/problem+json` with the documented
//! text in `detail`, never a 5xx, and must leave the message count and the
//! audit trail unchanged. An accepted case (injection in key fields of an
//! otherwise valid IDoc) must be stored byte-identical, retrievable through
//! `GET /admin/messages/{id}/payload`, with the fingerprint edihub-core
//! computes; its repeat is a duplicate, and afterwards the audit page and
//! `/metrics` still render with the injected text escaped.
//!
//! All cases run on one application and every failure is collected, so one
//! run reports the whole list rather than the first mismatch.

use std::path::PathBuf;

use crate::support::*;
use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, header};
use edihub_core::{FingerprintSpec, KeyPath, fingerprint, parse_body};
use edihub_server::config::MessageTypeConfig;
use figment::Figment;
use figment::providers::{Format, Toml};
use serde::Deserialize;
use serde_json::Value;

backend_tests!(bad_corpus);

/// `fixtures/bad/manifest.json`.
#[derive(Debug, Deserialize)]
struct Manifest {
    max_body_bytes: usize,
    /// TOML added to the test configuration (message types some cases name).
    #[serde(default)]
    extra_config: String,
    cases: Vec<Case>,
}

/// The tables the manifest's `extra_config` may hold, read as a
/// configuration file's (the corpus is data: its config stays TOML).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtraConfig {
    #[serde(default)]
    message_types: Vec<MessageTypeConfig>,
}

/// The base test configuration with the manifest's body limit and types.
fn corpus_config(manifest: &Manifest) -> TestConfig {
    let extra: ExtraConfig = Figment::from(Toml::string(&manifest.extra_config))
        .extract()
        .unwrap_or_else(|e| panic!("extra_config of the manifest: {e}"));
    let config = TestConfig::new().with(|c| c.max_body_bytes = manifest.max_body_bytes);
    extra.message_types.into_iter().fold(config, TestConfig::message_type_config)
}

/// One file of the corpus and what the hub must answer.
#[derive(Debug, Deserialize)]
struct Case {
    file: String,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    content_type_hex: Option<String>,
    #[serde(default)]
    headers: Vec<HeaderSpec>,
    #[serde(default)]
    authorization: Option<String>,
    #[serde(default)]
    query: Option<String>,
    status: u16,
    detail: String,
    why: String,
    #[serde(default)]
    accepted: Option<Accepted>,
}

/// An extra header: text, raw bytes in hex, or a text repeated.
#[derive(Debug, Deserialize)]
struct HeaderSpec {
    name: String,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    hex: Option<String>,
    #[serde(default)]
    repeat: Option<String>,
    #[serde(default)]
    count: usize,
}

/// What an accepted case must have stored.
#[derive(Debug, Deserialize)]
struct Accepted {
    message_type: String,
    key_fields: Vec<String>,
    messages: usize,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/bad")
}

fn load_manifest() -> Manifest {
    let path = corpus_dir().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl HeaderSpec {
    fn bytes(&self) -> Vec<u8> {
        match (&self.value, &self.hex, &self.repeat) {
            (Some(text), None, None) => text.clone().into_bytes(),
            (None, Some(hex), None) => {
                hex::decode(hex).unwrap_or_else(|e| panic!("header {}: {e}", self.name))
            }
            (None, None, Some(unit)) => unit.repeat(self.count).into_bytes(),
            _ => panic!("header {} needs exactly one of value, hex, repeat", self.name),
        }
    }
}

impl Case {
    /// The request the manifest describes (HTTP header bytes built here).
    fn request(&self, body: Vec<u8>) -> Request<Body> {
        let uri = match &self.query {
            Some(q) => format!("{RECEIVE}?{q}"),
            None => RECEIVE.to_string(),
        };
        let authorization = match self.authorization.as_deref() {
            None => bearer(ACME_PROD),
            Some(spec) => {
                let n: usize = spec
                    .strip_prefix("bearer-repeat:")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{}: unknown authorization {spec}", self.file));
                bearer(&"x".repeat(n))
            }
        };
        let mut builder = Request::builder().method(Method::POST).uri(uri);
        builder = builder.header(header::AUTHORIZATION, authorization);
        let content_type = match (&self.content_type_hex, &self.content_type) {
            (Some(hex), _) => Some(hex::decode(hex).expect("content_type_hex")),
            (None, Some(text)) => Some(text.clone().into_bytes()),
            (None, None) => None,
        };
        if let Some(ct) = content_type {
            builder =
                builder.header(header::CONTENT_TYPE, HeaderValue::from_bytes(&ct).expect("header bytes"));
        }
        for h in &self.headers {
            let value = HeaderValue::from_bytes(&h.bytes())
                .unwrap_or_else(|e| panic!("{}: header {} is not valid HTTP: {e}", self.file, h.name));
            builder = builder.header(h.name.as_str(), value);
        }
        builder.body(Body::from(body)).expect("request")
    }

    /// The Content-Type as the core sees it (the header as text, if it is text).
    fn content_type_text(&self) -> Option<&str> {
        if self.content_type_hex.is_some() { None } else { self.content_type.as_deref() }
    }
}

/// State a refused request must leave untouched.
async fn snapshot(app: &TestApp) -> (i64, usize) {
    (app.count_prod().await, app.audit_events("").await.len())
}

/// Checks one refused case; `Err` describes what differs.
fn check_refused(case: &Case, res: &TestResponse) -> Result<(), String> {
    let status = res.status.as_u16();
    let body = res.text();
    if status != case.status {
        return Err(format!("got {status}, expected {}; body: {}", case.status, clip(&body)));
    }
    if res.header("content-type") != Some(PROBLEM_JSON) {
        return Err(format!("content type {:?}, expected {PROBLEM_JSON}", res.header("content-type")));
    }
    let problem: Value =
        serde_json::from_slice(&res.body).map_err(|e| format!("problem is not JSON: {e}"))?;
    if problem["status"] != case.status {
        return Err(format!("problem status member {} != {}", problem["status"], case.status));
    }
    let detail = problem["detail"].as_str().ok_or_else(|| format!("no detail: {problem}"))?;
    if detail.trim().is_empty() {
        return Err("empty detail".into());
    }
    if !detail.to_lowercase().contains(&case.detail.to_lowercase()) {
        return Err(format!("detail {detail:?} does not contain {:?}", case.detail));
    }
    Ok(())
}

/// Checks one accepted case: stored verbatim, fingerprint as the core computes
/// it, and its repeat blocked. Returns the stored ids.
async fn check_accepted(
    app: &TestApp,
    case: &Case,
    want: &Accepted,
    body: &[u8],
    res: &TestResponse,
    before: i64,
) -> Result<Vec<String>, String> {
    let status = res.status.as_u16();
    if status != 202 {
        return Err(format!("got {status}, expected 202; body: {}", clip(&res.text())));
    }
    let json: Value = serde_json::from_slice(&res.body).map_err(|e| format!("answer is not JSON: {e}"))?;
    let outcomes = match json.get("messages") {
        Some(Value::Array(items)) => items.clone(),
        _ => vec![json.clone()],
    };
    if outcomes.len() != want.messages {
        return Err(format!("{} outcomes, expected {}: {json}", outcomes.len(), want.messages));
    }
    let stored = app.count_prod().await;
    if stored != before + want.messages as i64 {
        return Err(format!("{} messages stored, expected {}", stored - before, want.messages));
    }

    let parsed = parse_body(body, case.content_type_text()).map_err(|e| format!("core refuses it: {e}"))?;
    let keys: Vec<KeyPath> =
        want.key_fields.iter().map(|k| KeyPath::parse(k).expect("manifest key field")).collect();
    let mut ids = Vec::new();
    for (outcome, doc) in outcomes.iter().zip(&parsed.documents) {
        if outcome["status"] != "accepted" {
            return Err(format!("outcome is not accepted: {outcome}"));
        }
        if outcome["message_type"] != want.message_type.as_str() {
            return Err(format!(
                "message type {}, expected {:?}",
                outcome["message_type"], want.message_type
            ));
        }
        let spec = FingerprintSpec {
            message_type: &want.message_type,
            key_fields: &keys,
            exclude_fields: &[],
            scope: edihub_core::FingerprintScope::NONE,
        };
        let expected = fingerprint(doc, &spec).hex;
        if outcome["fingerprint"].as_str() != expected.as_deref() {
            return Err(format!("fingerprint {} != edihub_core's {expected:?}", outcome["fingerprint"]));
        }
        let id = outcome["id"].as_str().ok_or("no id")?.to_string();
        let payload = app.get(&format!("/admin/messages/{id}/payload"), Some(&bearer(ADMIN_TOKEN))).await;
        if payload.status.as_u16() != 200 || payload.body.as_ref() != body {
            return Err(format!(
                "payload of {id}: status {}, {} bytes, identical: {}",
                payload.status,
                payload.body.len(),
                payload.body.as_ref() == body
            ));
        }
        let shown = app.get(&format!("/admin/messages/{id}"), Some(&bearer(ADMIN_TOKEN))).await;
        if shown.status.as_u16() != 200 || shown.json()["fingerprint"] != outcome["fingerprint"] {
            return Err(format!("GET /admin/messages/{id}: {} {}", shown.status, clip(&shown.text())));
        }
        ids.push(id);
    }

    // The same request again: nothing new stored, the original named.
    let again = app.send(case.request(body.to_vec())).await;
    if again.status.as_u16() != 200 {
        return Err(format!("repeat got {}, expected 200: {}", again.status, clip(&again.text())));
    }
    let repeat: Value = again.json();
    let first = repeat.get("messages").and_then(|m| m.get(0)).unwrap_or(&repeat);
    if first["id"].as_str() != ids.first().map(String::as_str) {
        return Err(format!("repeat names {} instead of {:?}", first["id"], ids.first()));
    }
    if app.count_prod().await != stored {
        return Err("the repeat stored a message".into());
    }
    Ok(ids)
}

fn clip(text: &str) -> String {
    let mut cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// Every non-comment line of a Prometheus text exposition is `name{labels} value`
/// with properly quoted label values.
fn check_prometheus_text(text: &str) -> Result<(), String> {
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let bad = || format!("malformed metrics line {line:?}");
        let name_end = line.find(['{', ' ']).ok_or_else(bad)?;
        let name = &line[..name_end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            return Err(bad());
        }
        let mut rest = &line[name_end..];
        if let Some(labels) = rest.strip_prefix('{') {
            let mut chars = labels.char_indices();
            let mut in_quotes = false;
            let end = loop {
                let (i, c) = chars.next().ok_or_else(bad)?;
                match (c, in_quotes) {
                    ('"', _) => in_quotes = !in_quotes,
                    ('\\', true) => {
                        chars.next().ok_or_else(bad)?;
                    }
                    ('}', false) => break i,
                    _ => {}
                }
            };
            rest = &labels[end + 1..];
        }
        let value = rest.strip_prefix(' ').ok_or_else(bad)?;
        value.trim().parse::<f64>().map_err(|_| bad())?;
    }
    Ok(())
}

async fn bad_corpus(backend: Backend) {
    let manifest = load_manifest();
    assert!(manifest.cases.len() >= 60, "the corpus has {} cases", manifest.cases.len());
    let app = TestApp::start(backend, corpus_config(&manifest)).await;
    let mut failures = Vec::new();
    let mut accepted_ids = Vec::new();
    for case in &manifest.cases {
        let body = std::fs::read(corpus_dir().join(&case.file)).expect("corpus file");
        assert!(body.len() < 1_000_000, "{} is over 1 MB", case.file);
        let (messages, audit) = snapshot(&app).await;
        let started = std::time::Instant::now();
        let res = app.send(case.request(body.clone())).await;
        let elapsed = started.elapsed();
        let status = res.status.as_u16();
        let result = if status >= 500 {
            Err(format!("5xx: got {status}, expected {}; body: {}", case.status, clip(&res.text())))
        } else if let Some(want) = &case.accepted {
            check_accepted(&app, case, want, &body, &res, messages).await.map(|ids| accepted_ids.extend(ids))
        } else {
            let refused = check_refused(case, &res);
            let after = snapshot(&app).await;
            if after != (messages, audit) {
                Err(format!(
                    "state changed: messages {messages} -> {}, audit events {audit} -> {} (status {status})",
                    after.0, after.1
                ))
            } else {
                refused
            }
        };
        if let Err(why) = result {
            failures.push(format!("{} [{}]: {why}", case.file, case.why));
        }
        if elapsed > std::time::Duration::from_secs(5) {
            failures.push(format!("{}: took {elapsed:?} (over 5 s)", case.file));
        }
    }

    // The injected markup is escaped wherever it is shown.
    let html = app
        .send(
            Request::builder()
                .uri("/admin/audit?limit=500")
                .header(header::AUTHORIZATION, bearer(ADMIN_TOKEN))
                .header(header::ACCEPT, "text/html")
                .body(Body::empty())
                .expect("request"),
        )
        .await;
    if html.status.as_u16() != 200 {
        failures.push(format!("audit page: {}", html.status));
    }
    for raw in ["<script>alert", "<img src=x", "<svg/onload", "</td></tr><script>"] {
        if html.text().contains(raw) {
            failures.push(format!("audit page shows {raw:?} unescaped"));
        }
    }
    let duplicates = app.audit_events("action=message.duplicate_blocked").await.len();
    if duplicates < accepted_ids.len() {
        failures.push(format!("{duplicates} duplicate audit events for {} repeats", accepted_ids.len()));
    }
    let metrics = app.get("/metrics", None).await;
    if metrics.status.as_u16() != 200 {
        failures.push(format!("/metrics: {}", metrics.status));
    } else if let Err(e) = check_prometheus_text(&metrics.text()) {
        failures.push(format!("/metrics after the corpus: {e}"));
    }

    assert!(
        failures.is_empty(),
        "{} of {} corpus checks failed on {:?}:\n{}",
        failures.len(),
        manifest.cases.len(),
        app.backend(),
        failures.join("\n")
    );
}

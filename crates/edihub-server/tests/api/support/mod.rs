//! Shared harness of the HTTP integration tests: a real edihub application
//! (a typed [`TestConfig`], store migrated and seeded, the real axum
//! [`Router`]) on a throwaway SQLite file or PostgreSQL database, driven
//! in-process with `tower::ServiceExt::oneshot`, plus request helpers and the
//! macro that runs every test once per backend.
//!
//! Credentials are plain strings here; the config only ever sees their
//! SHA-256 digests, exactly as in production.

mod burst;
mod config;
mod http;
pub mod live;
pub mod raw;
pub mod receiver;
pub mod sap_receiver;
pub mod signing;
pub mod webhook;

use std::path::PathBuf;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, header};
use base64::Engine;
use edihub_server::AppState;
use edihub_store::Scope;
use edihub_store::testing::TestDb;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use burst::*;
pub use config::*;
pub use edihub_store::testing::Backend;
pub use http::*;
pub use signing::{openssl_b64, openssl_hex, python_sign};

/// The admin token (Bearer token or Basic password).
pub const ADMIN_TOKEN: &str = "test-admin-token";
/// Sender key of acme/prod (`on_key_reuse = "reject"`).
pub const ACME_PROD: &str = "acme-prod-key";
/// A second sender key of acme/prod.
pub const ACME_PROD_2: &str = "acme-prod-key-2";
/// Sender key of acme/qa (`on_key_reuse = "replay"`).
pub const ACME_QA: &str = "acme-qa-key";
/// Sender key of globex/prod.
pub const GLOBEX_PROD: &str = "globex-prod-key";
/// Consumer key of `acme/prod`: reads its pull feed, cannot send.
pub const ACME_PROD_FEED: &str = "acme-prod-feed-key";
/// Consumer key of `acme/qa`.
pub const ACME_QA_FEED: &str = "acme-qa-feed-key";

/// The receive endpoint.
pub const RECEIVE: &str = "/api/edi-hub/receive-message";
/// The problem document media type.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Runs each listed `async fn name(backend: Backend)` as two tests,
/// `sqlite::name` and `postgres::name`, on a multi-thread runtime.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name($crate::support::Backend::Sqlite).await })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name($crate::support::Backend::Postgres).await })*
        }
    };
}

/// SHA-256 hex of a secret, as the config stores it.
pub fn sha256_hex(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// `Authorization: Bearer <secret>`.
pub fn bearer(secret: &str) -> String {
    format!("Bearer {secret}")
}

/// `Authorization: Basic base64(user:password)`.
pub fn basic(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

/// Bytes of `fixtures/idoc/<name>` (e.g. `orders05.xml`, `real/…`).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// `fixtures/idoc` of the workspace.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idoc")
}

/// The first `<IDOC …>…</IDOC>` element of an IDoc-XML text (for building packets).
pub fn idoc_element(xml: &[u8]) -> String {
    let text = std::str::from_utf8(xml).expect("UTF-8 fixture");
    let start = text.find("<IDOC").expect("an IDOC element");
    let end = text.find("</IDOC>").expect("a closed IDOC element") + "</IDOC>".len();
    text[start..end].to_string()
}

/// One application on its own database.
pub struct TestApp {
    /// The application state (store, config, catalog).
    pub state: AppState,
    /// The real router.
    pub router: Router,
    /// Kept alive for the test; drops the database when the app drops.
    db: TestDb,
}

impl TestApp {
    /// The base test configuration ([`TestConfig::new`]).
    pub async fn new(backend: Backend) -> TestApp {
        Self::start(backend, TestConfig::new()).await
    }

    /// An application with `config` on a fresh database of `backend`.
    pub async fn start(backend: Backend, config: TestConfig) -> TestApp {
        let db = TestDb::new(backend).await;
        let config = config.build(&db.url);
        let store = db.store().await;
        let state = edihub_server::prepare_with(store, config).await.expect("prepare");
        let router = edihub_server::router(state.clone());
        TestApp { state, router, db }
    }

    /// The app's database for the test's own connections (never through
    /// the test pooler, see `TestDb::direct_url`).
    pub fn direct_database_url(&self) -> String {
        self.db.direct_url()
    }

    /// Which backend this app runs on.
    pub fn backend(&self) -> Backend {
        self.db.backend
    }

    /// Sends one request through a clone of the router.
    pub async fn send(&self, request: Request<Body>) -> TestResponse {
        send_on(self.router.clone(), request).await
    }

    /// `POST /api/edi-hub/receive-message`. `authorization` is the whole
    /// header value (see [`bearer`], [`basic`]); `None` omits the header.
    pub async fn post_receive(
        &self,
        authorization: Option<&str>,
        content_type: Option<&str>,
        body: impl Into<Vec<u8>>,
        extra_headers: &[(&str, &str)],
    ) -> TestResponse {
        self.send(receive_request(authorization, content_type, body.into(), extra_headers)).await
    }

    /// Posts an XML body with a sender key.
    pub async fn post_xml(&self, key: &str, body: impl Into<Vec<u8>>) -> TestResponse {
        self.post_receive(Some(&bearer(key)), Some("application/xml"), body, &[]).await
    }

    /// Posts an XML body with a sender key and extra headers.
    pub async fn post_xml_with(
        &self,
        key: &str,
        body: impl Into<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> TestResponse {
        self.post_receive(Some(&bearer(key)), Some("application/xml"), body, headers).await
    }

    /// Posts a JSON body with a sender key and extra headers.
    pub async fn post_json(
        &self,
        key: &str,
        body: impl Into<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> TestResponse {
        self.post_receive(Some(&bearer(key)), Some("application/json"), body, headers).await
    }

    /// `GET path` with an optional `Authorization` value.
    pub async fn get(&self, path: &str, authorization: Option<&str>) -> TestResponse {
        let mut builder = Request::builder().method(Method::GET).uri(path);
        if let Some(auth) = authorization {
            builder = builder.header(header::AUTHORIZATION, auth);
        }
        self.send(builder.body(Body::empty()).expect("request")).await
    }

    /// Messages stored in `tenant/environment`, straight from the store.
    pub async fn count(&self, tenant: &str, environment: &str) -> i64 {
        self.state.store.count_messages(&Scope::new(tenant, environment)).await.expect("count_messages")
    }

    /// Messages stored in acme/prod.
    pub async fn count_prod(&self) -> i64 {
        self.count("acme", "prod").await
    }

    /// `GET /admin/audit?<query>` with the admin token; asserts 200.
    pub async fn audit(&self, query: &str) -> Value {
        let res = self.get(&format!("/admin/audit?{query}"), Some(&bearer(ADMIN_TOKEN))).await;
        res.expect(200);
        res.json()
    }

    /// The audit events matching `query` (one page of up to 500).
    pub async fn audit_events(&self, query: &str) -> Vec<Value> {
        let sep = if query.is_empty() { "" } else { "&" };
        let page = self.audit(&format!("{query}{sep}limit=500")).await;
        page["events"].as_array().expect("events array").clone()
    }
}

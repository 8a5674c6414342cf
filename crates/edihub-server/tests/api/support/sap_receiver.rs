//! A stand-in for SAP's inbound IDoc-XML HTTP service (`/sap/bc/idoc_xml`)
//! on a loopback port: it checks each request as SAP would take it — HTTP
//! Basic credentials, the `sap-client` query parameter, and the IDoc-XML
//! with `edihub_core::sap::check` against the SAP system's profile and the
//! IDoc types it has described — answers 200 when all hold and 400 with
//! the problems otherwise, and records every request with its verdict.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use edihub_core::IdocDescriptions;
use edihub_core::sap::check::{Expected, check_idoc_xml, check_sap_client};
use edihub_core::sap::{SapIdoc, SapProfile};
use tokio_util::sync::CancellationToken;

/// One request and what the check made of it.
#[derive(Debug, Clone)]
pub struct SapCall {
    /// The query string.
    pub query: String,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// The IDocs read, or every problem found.
    pub verdict: Result<Vec<SapIdoc>, Vec<String>>,
}

struct Setup {
    profile: SapProfile,
    descriptions: IdocDescriptions,
    authorization: String,
    calls: Mutex<Vec<SapCall>>,
}

/// The receiver; stops when dropped.
pub struct SapReceiver {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    setup: Arc<Setup>,
    stop: CancellationToken,
}

async fn handle(
    State(setup): State<Arc<Setup>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let query = query.unwrap_or_default();
    let mut problems = Vec::new();
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if auth != setup.authorization {
        problems.push("wrong or missing Basic credentials".to_string());
    }
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !content_type.starts_with("application/xml") && !content_type.starts_with("text/xml") {
        problems.push(format!("Content-Type {content_type} is not XML"));
    }
    if let Err(p) = check_sap_client(&query, &setup.profile) {
        problems.push(p);
    }
    let expected = Expected { profile: &setup.profile, descriptions: &setup.descriptions };
    let verdict = match check_idoc_xml(&body, &expected) {
        Ok(idocs) if problems.is_empty() => Ok(idocs),
        Ok(_) => Err(problems),
        Err(more) => Err(problems.into_iter().chain(more).collect()),
    };
    let answer = match &verdict {
        Ok(_) => (StatusCode::OK, String::new()),
        Err(problems) => (StatusCode::BAD_REQUEST, problems.join("; ")),
    };
    setup.calls.lock().expect("calls").push(SapCall { query, headers, body, verdict });
    answer
}

impl SapReceiver {
    /// Starts a receiver for `profile`'s SAP system, which knows the IDoc
    /// types of `descriptions` and takes `authorization`.
    pub async fn start(
        profile: SapProfile,
        descriptions: IdocDescriptions,
        authorization: String,
    ) -> SapReceiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let setup = Arc::new(Setup { profile, descriptions, authorization, calls: Mutex::default() });
        let stop = CancellationToken::new();
        let app =
            Router::new().route("/sap/bc/idoc_xml", axum::routing::post(handle)).with_state(setup.clone());
        let token = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(token.cancelled_owned()).await;
        });
        SapReceiver { addr, setup, stop }
    }

    /// The service's URL.
    pub fn url(&self) -> String {
        format!("http://{}/sap/bc/idoc_xml", self.addr)
    }

    /// Every request so far.
    pub fn calls(&self) -> Vec<SapCall> {
        self.setup.calls.lock().expect("calls").clone()
    }
}

impl Drop for SapReceiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

//! A webhook receiver on a loopback port, for delivery tests: it records
//! every request (path, headers, body) and answers each path by a script
//! (status codes in turn, then 200), or always the same (a status with a
//! body of the test's choosing), and can hold requests open until the test
//! ends, to play a receiver that never answers.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use tokio_util::sync::CancellationToken;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// The path segment after `/`.
    pub path: String,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

impl Received {
    /// A header as text.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("no {name} header"))
    }
}

/// What the receiver does with the next request of a path.
#[derive(Debug, Clone, Copy)]
pub enum Reply {
    /// Answer with this status.
    Status(u16),
    /// Answer with this status and body.
    Answer(u16, &'static [u8]),
    /// Never answer (until the receiver is dropped).
    Hang,
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    script: HashMap<String, VecDeque<Reply>>,
    /// The reply of a path once its script is done (else 200).
    always: HashMap<String, Reply>,
}

/// The receiver; stops when dropped.
pub struct Receiver {
    /// Where it listens.
    pub addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
    stop: CancellationToken,
}

async fn handle(
    State((inner, stop)): State<(Arc<Mutex<Inner>>, CancellationToken)>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static [u8]) {
    let reply = {
        let mut inner = inner.lock().expect("receiver state");
        inner.received.push(Received { path: path.clone(), headers, body });
        let scripted = inner.script.get_mut(&path).and_then(VecDeque::pop_front);
        scripted.or_else(|| inner.always.get(&path).copied()).unwrap_or(Reply::Status(200))
    };
    match reply {
        Reply::Status(code) => (StatusCode::from_u16(code).expect("status"), b"receiver says hello"),
        Reply::Answer(code, body) => (StatusCode::from_u16(code).expect("status"), body),
        Reply::Hang => {
            stop.cancelled().await;
            (StatusCode::SERVICE_UNAVAILABLE, b"stopped")
        }
    }
}

impl Receiver {
    /// Starts a receiver on 127.0.0.1 and a free port.
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let inner = Arc::new(Mutex::new(Inner::default()));
        let stop = CancellationToken::new();
        let app = Router::new()
            .route("/{path}", axum::routing::post(handle))
            .with_state((inner.clone(), stop.clone()));
        let token = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(token.cancelled_owned()).await;
        });
        Receiver { addr, inner, stop }
    }

    /// The URL of `path` on this receiver.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// Answers the next requests of `path` with `replies`, in turn.
    pub fn script(&self, path: &str, replies: &[Reply]) {
        let mut inner = self.inner.lock().expect("receiver state");
        inner.script.entry(path.into()).or_default().extend(replies.iter().copied());
    }

    /// Answers every request of `path` with `reply` once its script is done.
    pub fn always(&self, path: &str, reply: Reply) {
        self.inner.lock().expect("receiver state").always.insert(path.into(), reply);
    }

    /// The requests `path` got so far, oldest first.
    pub fn received(&self, path: &str) -> Vec<Received> {
        let inner = self.inner.lock().expect("receiver state");
        inner.received.iter().filter(|r| r.path == path).cloned().collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

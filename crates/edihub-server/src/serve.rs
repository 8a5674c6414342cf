//! The HTTP server loop: accept, limit, time out, drain.
//!
//! `axum::serve` gives no header-read timeout (hyper needs a timer for it)
//! and no connection limit, so a client that never finishes its headers, or
//! thousands of idle sockets, would hold resources forever. This loop:
//! - caps open connections at `max_connections` (a semaphore; further
//!   connections wait in the kernel's accept queue, and the cap is logged);
//! - caps them per client address at `max_connections_per_address`: one
//!   client cannot fill the global cap and make everyone wait behind it
//!   (see `serve/per_address.rs`; refusals are counted and logged once a second);
//! - gives every request its client's address (`ConnectInfo<SocketAddr>`);
//! - closes a connection whose request headers are not complete within
//!   `header_read_timeout_secs` (slow-header clients);
//! - bounds each request's total time with the `request_timeout_secs`
//!   middleware (a trickled body ends in 503, see [`crate::telemetry`]);
//! - on shutdown stops accepting (new connections are refused), lets
//!   in-flight requests finish, and closes idle keep-alive connections, for at
//!   most `shutdown_grace_secs`.

mod per_address;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub use per_address::PerAddress;

/// Limits of the server loop.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most connections open at once from one client address.
    pub max_connections_per_address: usize,
    /// Time a client has to send complete request headers.
    pub header_read_timeout: Duration,
    /// Time in-flight requests get to finish after shutdown starts.
    pub shutdown_grace: Duration,
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then drains.
pub async fn run(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let max = effective_max_connections(limits.max_connections);
    let permits = Arc::new(Semaphore::new(max));
    // Connections closed for slow headers are counted and reported once a
    // second: an attacker must not control log volume, yet the log accounts
    // for every one of them.
    let cut_off = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let reporter = tokio::spawn(report_counts(cut_off.clone(), refused.clone()));
    let per_address = PerAddress::new(limits.max_connections_per_address);
    let accept_errors = RateLimitedLog::default();
    let graceful = GracefulShutdown::new();
    let mut warned_full = false;
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        if permits.available_permits() == 0 && !warned_full {
            tracing::warn!(max_connections = max, "connection limit reached; new connections wait");
            warned_full = true;
        } else if permits.available_permits() > max / 10 {
            warned_full = false;
        }
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    if let Some(n) = accept_errors.due() {
                        tracing::warn!(error = %e, failures = n, "accept failed");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(slot) = per_address.try_open(peer.ip()) else {
            // Best effort, never waiting: the client is told why, then closed.
            let _ = stream.try_write(per_address::REFUSAL);
            refused.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        serve_connection(stream, peer, &app, &limits, &graceful, &cut_off, (slot, permit));
    }
    drop(listener);
    tracing::info!("stopped accepting; draining in-flight requests");
    reporter.abort();
    flush_counts(&cut_off, &refused);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await.is_err() {
        tracing::warn!(
            grace_secs = limits.shutdown_grace.as_secs(),
            "shutdown grace period ended with requests in flight"
        );
    }
    Ok(())
}

/// Serves one accepted connection on a task of its own, with its client's
/// address in every request; `held` (its per-address slot and its permit
/// of the global cap) is released when the connection ends.
fn serve_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    app: &Router,
    limits: &ServeLimits,
    graceful: &GracefulShutdown,
    cut_off: &Arc<AtomicU64>,
    held: (per_address::Slot, OwnedSemaphorePermit),
) {
    let _ = stream.set_nodelay(true);
    let service = TowerToHyperService::new(app.clone().map_request(
        move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            req
        },
    ));
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(stream), service);
    let conn = graceful.watch(conn);
    let cut_off = cut_off.clone();
    tokio::spawn(async move {
        match conn.await {
            Err(e) if e.is_timeout() => {
                cut_off.fetch_add(1, Ordering::Relaxed);
            }
            // Resets and protocol errors are the client's doing.
            Err(e) => tracing::debug!(%peer, error = %e, "connection ended with an error"),
            Ok(()) => {}
        }
        drop(held);
    });
}

const CUT_OFF: &str = "closed connections that did not send their headers in time";
const REFUSED: &str = "refused connections over max_connections_per_address";

fn flush_counts(cut_off: &AtomicU64, refused: &AtomicU64) {
    let n = cut_off.swap(0, Ordering::Relaxed);
    if n > 0 {
        tracing::info!(closed = n, header_read_timeout = true, "{CUT_OFF}");
    }
    let n = refused.swap(0, Ordering::Relaxed);
    if n > 0 {
        tracing::warn!(refused = n, "{REFUSED}");
    }
}

async fn report_counts(cut_off: Arc<AtomicU64>, refused: Arc<AtomicU64>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        flush_counts(&cut_off, &refused);
    }
}

/// Counts events and says when a log line is due: at most one per 10 s,
/// carrying how many happened since the last one.
#[derive(Debug, Default)]
struct RateLimitedLog {
    count: std::sync::atomic::AtomicU64,
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl RateLimitedLog {
    fn due(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < Duration::from_secs(10)) {
            return None;
        }
        *last = Some(std::time::Instant::now());
        Some(self.count.swap(0, Ordering::Relaxed))
    }
}

/// The configured cap, lowered to fit the process's open-file limit (less a
/// reserve for the database pool and logs): past that limit `accept` fails
/// with EMFILE instead of the cap queueing connections in the kernel.
fn effective_max_connections(configured: usize) -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits").ok().and_then(|text| {
        text.lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse::<usize>().ok())
    });
    match soft {
        Some(limit) if limit.saturating_sub(reserve(limit)) < configured => {
            let capped = limit.saturating_sub(reserve(limit)).max(16);
            tracing::warn!(
                configured,
                capped,
                open_file_limit = limit,
                "max_connections lowered to fit the open-file limit"
            );
            capped
        }
        _ => configured.max(1),
    }
}

/// Descriptors kept free for the database pool, log files and the listener.
fn reserve(limit: usize) -> usize {
    (limit / 4).clamp(32, 128)
}

/// Listen backlog: connections beyond `max_connections` wait here, so it is
/// larger than the standard library's 128 (the kernel caps it at somaxconn).
pub const LISTEN_BACKLOG: u32 = 1024;

/// Binds `addr` (`host:port`) with [`LISTEN_BACKLOG`].
pub async fn bind(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket =
            if a.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        match socket.bind(a).and_then(|()| socket.listen(LISTEN_BACKLOG)) {
            Ok(listener) => return Ok(listener),
            // "Address already in use" alone does not say which address.
            Err(e) => last = Some(std::io::Error::new(e.kind(), format!("cannot listen on {a}: {e}"))),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("`{addr}` resolves to no address"))
    }))
}

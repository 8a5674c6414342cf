//! The HTTP server loop: accept, limit, time out, drain.
//!
//! `axum::serve` gives no header-read timeout (hyper needs a timer for it)
//! and no connection limit, so a client that never finishes its headers, or
//! thousands of idle sockets, would hold resources forever. This loop:
//! - caps open connections at `max_connections` (a semaphore; further
//!   connections wait in the kernel's accept queue, and the cap is logged);
//! - closes a connection whose request headers are not complete within
//!   `header_read_timeout_secs` (slow-header clients);
//! - bounds each request's total time with the `request_timeout_secs`
//!   middleware (a trickled body ends in 503, see [`crate::telemetry`]);
//! - on shutdown stops accepting (new connections are refused), lets
//!   in-flight requests finish, and closes idle keep-alive connections, for at
//!   most `shutdown_grace_secs`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Limits of the server loop.
#[derive(Debug, Clone)]
pub struct ServeLimits {
    /// Most connections open at once.
    pub max_connections: usize,
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
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
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
            tracing::warn!(
                max_connections = limits.max_connections,
                "connection limit reached; new connections wait"
            );
            warned_full = true;
        } else if permits.available_permits() > limits.max_connections / 10 {
            warned_full = false;
        }
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            match conn.await {
                Err(e) if e.is_timeout() => {
                    tracing::info!(%peer, "closed a connection that did not send its headers in time");
                }
                // Resets and protocol errors are the client's doing.
                Err(e) => tracing::debug!(%peer, error = %e, "connection ended with an error"),
                Ok(()) => {}
            }
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("stopped accepting; draining in-flight requests");
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await.is_err() {
        tracing::warn!(
            grace_secs = limits.shutdown_grace.as_secs(),
            "shutdown grace period ended with requests in flight"
        );
    }
    Ok(())
}

//! `edihub listen`: a tiny webhook receiver for trying delivery out (and
//! for the delivery benchmark). It answers every `POST` with `200`, prints
//! each delivery's `webhook-id` and body, and, given the destination's
//! secret, verifies the Standard Webhooks signature first (a bad or stale
//! one is printed and answered `401`, so edihub retries it).
//!
//! It needs no configuration file. It is a demo and test tool: it keeps
//! nothing, so a repeated `webhook-id` is printed again (edihub delivers at
//! least once; a real receiver drops repeats by id).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use edihub_server::signing::{Verifier, standard_webhooks_key};
use tokio_util::sync::CancellationToken;

/// Arguments of `edihub listen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Loopback port to listen on (the demo destination of config/edihub.toml uses 9999).
    #[arg(long, default_value_t = 9999)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Environment variable holding the destination's `whsec_` secret: verify every signature.
    #[arg(long)]
    secret_env: Option<String>,
    /// Print nothing per delivery; on exit, print how many were received.
    #[arg(long)]
    quiet: bool,
}

/// What every request shares.
struct Listener {
    verifier: Verifier,
    quiet: bool,
    received: AtomicU64,
}

/// Runs the receiver until SIGINT or SIGTERM.
pub async fn run(args: Args, shutdown: CancellationToken) -> ExitCode {
    let verifier = match &args.secret_env {
        None => Verifier::None,
        Some(var) => match std::env::var(var).ok().as_deref().and_then(standard_webhooks_key) {
            Some(key) => Verifier::StandardWebhooks { key },
            None => {
                eprintln!("edihub listen: {var} must hold a whsec_<base64> secret");
                return ExitCode::from(2);
            }
        },
    };
    let address = format!("{}:{}", args.bind, args.port);
    let socket = match tokio::net::TcpListener::bind(&address).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("edihub listen: cannot listen on {address}: {e}");
            return ExitCode::from(2);
        }
    };
    let signed = if args.secret_env.is_some() { ", verifying Standard Webhooks signatures" } else { "" };
    println!("listening on http://{address}/{signed}");
    let state = Arc::new(Listener { verifier, quiet: args.quiet, received: AtomicU64::new(0) });
    let app = axum::Router::new().fallback(axum::routing::post(receive)).with_state(state.clone());
    let served = axum::serve(socket, app).with_graceful_shutdown(shutdown.cancelled_owned()).await;
    if args.quiet {
        println!("received {}", state.received.load(Ordering::Relaxed));
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("edihub listen: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One delivery: verify, print, answer.
async fn receive(State(l): State<Arc<Listener>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or("(no webhook-id)");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    if let Err(e) = l.verifier.verify(&headers, &body, now) {
        println!("REFUSED {id}: {e}");
        return StatusCode::UNAUTHORIZED;
    }
    l.received.fetch_add(1, Ordering::Relaxed);
    if !l.quiet {
        let verified = if matches!(l.verifier, Verifier::None) { "" } else { " (signature verified)" };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "webhook-id {id}{verified}\n{}", String::from_utf8_lossy(&body));
        let _ = out.flush();
    }
    StatusCode::OK
}

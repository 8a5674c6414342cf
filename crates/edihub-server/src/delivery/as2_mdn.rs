//! The sender of asynchronous AS2 MDNs: a partner that asks for its MDN at
//! a URL (`Receipt-Delivery-Option`) gets an empty 200 at once, and the MDN,
//! kept with the message's claim in the store, is posted to that URL here.
//!
//! The loop leases the due MDNs (`Store::claim_as2_mdns`, so replicas never
//! post one twice at once), posts each with the delivery client (the
//! destination address policy applies: the URL comes from the partner) and
//! records the attempt: a 2xx answer is `sent`; anything else is retried on
//! the delivery retry schedule (`delivery.retry_delays`, with its jitter)
//! and `failed` once it is exhausted. It runs every
//! `delivery.poll_interval_ms` and when a new MDN is due, until shutdown;
//! an attempt cut off by the shutdown keeps its lease and is made again.

use std::time::Duration;

use chrono::Utc;
use edihub_store::{As2MdnAttempt, As2MessageRow, MDN_FAILED, MDN_PENDING, MDN_SENT};
use tokio_util::sync::CancellationToken;

use super::{AddressPolicy, client, describe, jitter_factor};
use crate::state::AppState;

/// How long one post may take.
const POST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a lease outlasts the post.
const LEASE: Duration = Duration::from_secs(60);
/// MDNs leased per round.
const BATCH: i64 = 16;

/// Posts due MDNs until `shutdown`; without an AS2 station there are none,
/// and the database is not asked.
pub async fn run(state: AppState, shutdown: CancellationToken) {
    if state.config.as2.stations.is_empty() {
        return;
    }
    let policy = crate::delivery::AddressPolicy::of(&state.config.delivery);
    let http = match client(policy) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "asynchronous AS2 MDNs disabled: cannot build the HTTP client");
            return;
        }
    };
    let delays = state.config.delivery.delays();
    let poll = Duration::from_millis(state.config.delivery.poll_interval_ms);
    loop {
        let now = Utc::now();
        let lease = now + chrono::Duration::from_std(LEASE).unwrap_or_default();
        match state.store.claim_as2_mdns(now, lease, BATCH).await {
            Ok(rows) => {
                for row in rows {
                    let attempt = tokio::select! {
                        () = shutdown.cancelled() => return,
                        a = post(&http, policy, &row, &delays) => a,
                    };
                    if let Err(e) = state.store.finish_as2_mdn(&attempt).await {
                        tracing::warn!(error = %e, "recording an AS2 MDN attempt failed; its lease expires");
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "claiming asynchronous AS2 MDNs failed"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(poll) => {}
            () = state.as2_mdns.notified() => {}
        }
    }
}

/// One post of `row`'s MDN and what it came to.
async fn post(
    http: &reqwest::Client,
    policy: AddressPolicy,
    row: &As2MessageRow,
    delays: &[Duration],
) -> As2MdnAttempt {
    let error = match send(http, policy, row).await {
        Ok(()) => return As2MdnAttempt { key: row.key(), status: MDN_SENT, due_at: None, error: None },
        Err(e) => e,
    };
    tracing::warn!(partner = %row.partner, message_id = %row.message_id, error = %error,
        "posting an asynchronous AS2 MDN failed");
    let next = usize::try_from(row.mdn_attempts - 1).ok().and_then(|i| delays.get(i));
    match next {
        Some(delay) => As2MdnAttempt {
            key: row.key(),
            status: MDN_PENDING,
            due_at: Some(
                Utc::now() + chrono::Duration::from_std(delay.mul_f64(jitter_factor())).unwrap_or_default(),
            ),
            error: Some(error),
        },
        None => As2MdnAttempt { key: row.key(), status: MDN_FAILED, due_at: None, error: Some(error) },
    }
}

/// POSTs the MDN as kept; an error says why it did not arrive.
async fn send(http: &reqwest::Client, policy: AddressPolicy, row: &As2MessageRow) -> Result<(), String> {
    let url = row.mdn_url.as_deref().ok_or("no Receipt-Delivery-Option URL")?;
    policy.check_url(url).map_err(|e| e.to_string())?;
    let (headers, body) = row.mdn().ok_or("no MDN kept")?;
    let mut request = http.post(url).timeout(POST_TIMEOUT).body(body);
    for (name, value) in &headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.map_err(describe)?;
    let status = response.status();
    if status.is_success() { Ok(()) } else { Err(format!("the partner answered {status}")) }
}

//! One HTTP attempt of a delivery: the body (envelope or raw), the
//! Standard Webhooks headers, and what the receiver answered.
//!
//! The `webhook-id` is the message id on every attempt and every replay, so
//! a receiver drops repeats by id. Redirects are not followed (a receiver
//! that moved answers 3xx, which is retried like any non-2xx until an
//! operator fixes the URL), and at most [`PREFIX_BYTES`] of an answer are
//! read, so a receiver cannot make a worker buffer a large body. Only the
//! addresses [`AddressPolicy`] admits are connected to; a refused one is
//! recorded as the attempt's error and retried like a connection error
//! (DNS or the configuration may change).

use std::time::{Duration, Instant};

use chrono::Utc;
use edihub_store::AttemptRow;
use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};

use super::address_policy::AddressPolicy;
use super::bodies::Outgoing;
use super::destination::Destination;
use super::handoff::Handed;
use super::http::describe;
use super::render::{Held, Renderer};
use super::schedule::retry_after;
use crate::config::DeliveryFormat;

/// Bytes of a receiver's answer kept with the attempt.
pub const PREFIX_BYTES: usize = 512;

/// What an attempt came to.
#[derive(Debug)]
pub struct Answer {
    /// The attempt as recorded.
    pub record: AttemptRow,
    /// The receiver's `Retry-After`, if it sent one.
    pub retry_after: Option<Duration>,
    /// No attempt can succeed: the message is gone (purged), or belongs
    /// to another tenant or environment than the destination now does.
    pub gone: bool,
    /// The receiver answered, but the answer refuses the message whatever
    /// its HTTP status: an AS2 MDN that is negative, reports another MIC
    /// or is missing. Such an attempt is retried as a failed one.
    pub refused: bool,
}

impl Answer {
    /// An attempt with no answer to judge: not sent, or no connection.
    fn unanswered(record: AttemptRow, gone: bool) -> Answer {
        Answer { record, retry_after: None, gone, refused: false }
    }
}

/// When an attempt began, for its record.
struct Clock {
    attempted_at: chrono::DateTime<Utc>,
    started: Instant,
}

impl Clock {
    fn start() -> Clock {
        Clock { attempted_at: Utc::now(), started: Instant::now() }
    }

    /// The attempt as recorded, its latency taken now.
    fn record(
        &self,
        status_code: Option<i32>,
        error: Option<String>,
        response_prefix: Option<String>,
    ) -> AttemptRow {
        AttemptRow {
            attempted_at: self.attempted_at,
            status_code,
            latency_ms: i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX),
            error,
            response_prefix,
        }
    }
}

/// POSTs `message` to `destination` if `policy` admits its address; never
/// fails, the answer says what happened.
pub async fn send(
    client: &reqwest::Client,
    policy: AddressPolicy,
    renderer: &Renderer,
    destination: &Destination,
    message: Option<&Outgoing>,
) -> Answer {
    let clock = Clock::start();
    let Some(m) = message else {
        let record = clock.record(None, Some("the message is no longer stored".into()), None);
        return Answer::unanswered(record, true);
    };
    if let Some(refused) = refuse(&clock, policy, destination, (&m.meta.tenant_id, &m.meta.environment_id)) {
        return refused;
    }
    if let Some(as2) = &destination.as2 {
        let timeout = Duration::from_secs(destination.def.timeout_secs);
        let a = as2.attempt(client, &destination.url, m, timeout).await;
        let record = clock.record(a.status.map(i32::from), a.error, a.text);
        return Answer { record, retry_after: None, gone: a.gone, refused: !a.confirmed };
    }
    // The envelope stays held (shared, and counted) until the answer is read.
    let (body, content_type, _held) = match body_of(destination, m, renderer).await {
        Ok(body) => body,
        // The same message and configuration give the same refusal: no attempt can succeed.
        Err(why) => return Answer::unanswered(clock.record(None, Some(why), None), true),
    };
    post(client, destination, &clock, &m.meta.id.to_string(), body, &content_type).await
}

/// POSTs the envelope the intake handed over for message `id` (see
/// `handoff.rs`) to `destination`, an envelope destination, as [`send`]
/// would post the one it renders.
pub async fn send_handed(
    client: &reqwest::Client,
    policy: AddressPolicy,
    destination: &Destination,
    id: uuid::Uuid,
    handed: &Handed,
) -> Answer {
    let clock = Clock::start();
    if let Some(refused) = refuse(&clock, policy, destination, (&handed.tenant, &handed.environment)) {
        return refused;
    }
    post(client, destination, &clock, &id.to_string(), handed.envelope.clone(), "application/json").await
}

/// Why a message of `owner` (tenant, environment) is not sent to
/// `destination` at all: the destination moved to another owner, or
/// `policy` refuses its address.
fn refuse(
    clock: &Clock,
    policy: AddressPolicy,
    destination: &Destination,
    owner: (&String, &String),
) -> Option<Answer> {
    let def = &destination.def;
    if owner != (&def.tenant, &def.environment) {
        // The destination moved to another owner since the delivery was
        // written (see `edihub_store`'s `destinations` module): never send
        // one owner's message to another's receiver.
        let why = format!(
            "not sent: the message belongs to {}/{}, the destination now to {}/{}",
            owner.0, owner.1, def.tenant, def.environment
        );
        return Some(Answer::unanswered(clock.record(None, Some(why), None), true));
    }
    let refused = policy.check_url(&destination.url).err()?;
    Some(Answer::unanswered(clock.record(None, Some(refused.0), None), false))
}

/// The POST of `body` with the Standard Webhooks headers of message `id`,
/// and what the receiver answered.
async fn post(
    client: &reqwest::Client,
    destination: &Destination,
    clock: &Clock,
    id: &str,
    body: bytes::Bytes,
    content_type: &str,
) -> Answer {
    let def = &destination.def;
    let timestamp = clock.attempted_at.timestamp();
    let mut request = client
        .post(&destination.url)
        .timeout(Duration::from_secs(def.timeout_secs))
        .header(
            CONTENT_TYPE,
            HeaderValue::from_str(content_type)
                .unwrap_or(HeaderValue::from_static("application/octet-stream")),
        )
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string());
    if let Some((user, password)) = &destination.basic {
        request = request.basic_auth(user, Some(password));
    }
    if let Some(key) = &destination.key {
        let signature = crate::signing::standard_webhooks_sign(key, id, timestamp, &body);
        request = request.header("webhook-signature", signature);
    }
    let mut response = match request.body(body).send().await {
        Ok(r) => r,
        Err(e) => return Answer::unanswered(clock.record(None, Some(describe(e)), None), false),
    };
    let status = response.status();
    let wait = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| retry_after(v, Utc::now()));
    let (prefix, read_error) = read_prefix(&mut response).await;
    let error = match (status.is_success(), read_error) {
        (true, _) => None,
        (false, Some(e)) => Some(format!("HTTP {status}; {e}")),
        (false, None) => Some(format!("HTTP {status}")),
    };
    let text = (!prefix.is_empty()).then(|| String::from_utf8_lossy(&prefix).into_owned());
    Answer {
        record: clock.record(Some(i32::from(status.as_u16())), error, text),
        retry_after: wait,
        gone: false,
        refused: false,
    }
}

/// The body sent and its Content-Type: the message as received (`raw`),
/// its IDoc as IDoc-XML (`sap-idoc-xml`), or its envelope, with the
/// rendering to hold while it is sent; why not when the message cannot be
/// written in the destination's format.
async fn body_of(
    destination: &Destination,
    m: &Outgoing,
    renderer: &Renderer,
) -> Result<(bytes::Bytes, String, Option<Held>), String> {
    if let Some(sap) = &destination.sap {
        let xml = sap.body(m).map_err(|e| format!("not sent: cannot be written as IDoc-XML: {e}"))?;
        return Ok((xml, "application/xml; charset=utf-8".into(), None));
    }
    if destination.def.format == DeliveryFormat::Raw {
        let ct = m.meta.content_type.clone().unwrap_or_else(|| "application/octet-stream".into());
        Ok((m.body.bytes.clone(), ct, None))
    } else {
        let held = renderer.envelope(m).await;
        Ok((held.bytes(), "application/json".into(), Some(held)))
    }
}

/// The first `PREFIX_BYTES` of the response body (the rest is never read,
/// so a receiver cannot make an attempt buffer much), and the error that
/// cut the read short, if any.
async fn read_prefix(response: &mut reqwest::Response) -> (Vec<u8>, Option<String>) {
    let mut prefix = Vec::new();
    let mut read_error = None;
    while prefix.len() < PREFIX_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                prefix.extend_from_slice(&chunk[..chunk.len().min(PREFIX_BYTES - prefix.len())])
            }
            Ok(None) => break,
            Err(e) => {
                read_error = Some(describe(e));
                break;
            }
        }
    }
    (prefix, read_error)
}

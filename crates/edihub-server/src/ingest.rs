//! Pieces every ingest route shares: bounded body reading, header checks,
//! and the response format of stored and duplicate messages.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use chrono::{DateTime, SecondsFormat, Utc};

use std::sync::Arc;

use edihub_core::{Document, FingerprintSpec, ParsedBody, parse_body};
use edihub_store::{IngestOutcome, MessageOutcome, MessageSummary, NewMessage, Scope, StoredResponse};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::producers::Producer;
use crate::state::AppState;

/// Longest accepted Idempotency-Key.
pub const MAX_KEY_LEN: usize = 200;

/// Now, at the microsecond precision both databases keep, so the time in a
/// response equals the time stored.
pub fn now() -> DateTime<Utc> {
    let t = Utc::now();
    DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap_or(t)
}

/// Bodies up to this size are not counted against a [`BodyBudget`]:
/// their total is already bounded by the connection limit, and a burst of
/// small messages must never queue behind one large IDoc.
const UNCOUNTED_BODY: usize = 64 * 1024;
/// Bodies over this size are parsed on the blocking pool: a 10 MB IDoc takes
/// tens of milliseconds to parse, which must not stall the runtime's few
/// worker threads and every small request they serve.
const PARSE_OFF_THREAD: usize = 1024 * 1024;

/// A request's share of a [`BodyBudget`], held until the response is built
/// and released on drop.
#[derive(Debug)]
#[must_use = "the share is released when the permit is dropped"]
pub struct BodyPermit {
    _held: Option<OwnedSemaphorePermit>,
}

/// A budget of body bytes being processed at once, in KiB permits:
/// `max_inflight_body_bytes` for authenticated senders, and
/// `max_inflight_webhook_body_bytes` for webhook bodies, whose sender is
/// unknown until the signature over the whole body is checked. Separate
/// budgets, so unauthenticated bodies can never take memory senders wait for.
#[derive(Debug)]
pub struct BodyBudget {
    permits: Arc<Semaphore>,
    total_kib: usize,
}

impl BodyBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Self {
        let total_kib = bytes.div_ceil(1024).max(1);
        Self { permits: Arc::new(Semaphore::new(total_kib)), total_kib }
    }

    /// Waits until a body of `len` bytes fits. A body larger than the whole
    /// budget takes all of it, i.e. it is processed alone.
    async fn admit(&self, len: usize) -> BodyPermit {
        if len <= UNCOUNTED_BODY {
            return BodyPermit { _held: None };
        }
        let kib = u32::try_from(len.div_ceil(1024).min(self.total_kib)).unwrap_or(u32::MAX);
        // The semaphore is never closed, so acquiring only fails if it were.
        BodyPermit { _held: Arc::clone(&self.permits).acquire_many_owned(kib).await.ok() }
    }
}

/// Refuses, from the headers alone, a body that could not be read: a
/// compressed one (415) or one whose Content-Length is over `max_body_bytes`
/// (413). Returns the declared length.
pub fn check_body_headers(state: &AppState, headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let limit = state.config.max_body_bytes;
    // A compressed body would be read as garbage: say so (RFC 9110, 15.5.16).
    if let Some(coding) = headers.get(header::CONTENT_ENCODING) {
        let coding = coding.to_str().unwrap_or("?").trim();
        if !coding.eq_ignore_ascii_case("identity") {
            return Err(ApiError::UnsupportedMediaType(format!(
                "Content-Encoding `{coding}` is not supported; send the body uncompressed"
            )));
        }
    }
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::TooLarge(limit));
    }
    Ok(declared)
}

/// Reads the whole body, refusing more than `max_body_bytes` with 413 before
/// buffering it. Large bodies wait for room in `budget` first (see
/// [`BodyBudget`]), so many large uploads at once queue instead of
/// exhausting memory.
pub async fn read_body(
    state: &AppState,
    budget: &BodyBudget,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit), ApiError> {
    let limit = state.config.max_body_bytes;
    let declared = check_body_headers(state, headers)?;
    // With a Content-Length the wait comes before buffering; a chunked body
    // is counted once read, before it is parsed.
    let early = match declared {
        Some(n) => Some(budget.admit(usize::try_from(n).unwrap_or(limit)).await),
        None => None,
    };
    let bytes = collect(body, limit, declared).await?;
    let permit = match early {
        Some(permit) => permit,
        None => budget.admit(bytes.len()).await,
    };
    Ok((bytes, permit))
}

/// Buffers the body into one allocation sized from its Content-Length, so a
/// large body is held once (collecting chunks and joining them would hold it
/// twice at the end).
async fn collect(body: Body, limit: usize, declared: Option<u64>) -> Result<Bytes, ApiError> {
    let capacity = declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit));
    let mut buf = BytesMut::with_capacity(capacity);
    let mut body = Limited::new(body, limit);
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data);
                }
            }
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                return Err(ApiError::TooLarge(limit));
            }
            Err(e) => return Err(ApiError::BadRequest(format!("the body could not be read: {e}"))),
        }
    }
    Ok(buf.freeze())
}

/// [`edihub_core::parse_body`], on the blocking pool for large bodies.
pub async fn parse(bytes: &Bytes, content_type: Option<&str>) -> Result<ParsedBody, ApiError> {
    if bytes.len() <= PARSE_OFF_THREAD {
        return Ok(parse_body(bytes, content_type)?);
    }
    let (bytes, content_type) = (bytes.clone(), content_type.map(str::to_string));
    let parsed = tokio::task::spawn_blocking(move || parse_body(&bytes, content_type.as_deref()))
        .await
        // A panic in the parser is a bug: it ends this request's task, as it
        // would have inline.
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    Ok(parsed?)
}

/// An Idempotency-Key must be 1–200 printable ASCII characters.
pub fn validate_key(key: &str) -> Result<String, ApiError> {
    let ok = !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|b| (0x20..0x7f).contains(&b));
    if ok {
        Ok(key.to_string())
    } else {
        Err(ApiError::BadRequest(format!(
            "Idempotency-Key must be 1–{MAX_KEY_LEN} printable ASCII characters (got {} bytes)",
            key.len()
        )))
    }
}

/// An explicit message type (header, query) must pass [`crate::producers::check_type`].
pub fn validate_type<'a>(t: &'a str, source: &str) -> Result<&'a str, ApiError> {
    crate::producers::check_type(t).map_err(|reason| ApiError::BadRequest(format!("{source}: {reason}")))
}

/// Longest document number kept (a SAP DOCNUM has 16 digits; a plain JSON
/// `docnum` is any business number): it is stored, indexed and copied into
/// every duplicate's audit event, so it must stay small.
pub const MAX_DOCNUM_LEN: usize = 100;

/// A document number must be at most [`MAX_DOCNUM_LEN`] characters without
/// control characters; a longer one is refused, never cut (two numbers
/// sharing a prefix would collide).
fn check_docnum(docnum: Option<&str>, index: usize, packet: bool) -> Result<(), ApiError> {
    let Some(d) = docnum else { return Ok(()) };
    if d.chars().count() <= MAX_DOCNUM_LEN && !d.chars().any(char::is_control) {
        return Ok(());
    }
    let at = if packet { format!(" of IDoc {index} in the packet") } else { String::new() };
    Err(ApiError::Unprocessable(format!(
        "the docnum{at} must be at most {MAX_DOCNUM_LEN} characters without control characters (got {} bytes)",
        d.len()
    )))
}

fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn summary_json(s: &MessageSummary, status: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("id".into(), json!(s.id));
    m.insert("status".into(), json!(status));
    m.insert("message_type".into(), json!(s.message_type));
    m.insert("mestyp".into(), json!(s.mestyp));
    m.insert("docnum".into(), json!(s.docnum));
    m.insert("fingerprint".into(), json!(s.fingerprint));
    m.insert("received_at".into(), json!(timestamp(&s.received_at)));
    m.insert("deduplicated".into(), json!(s.fingerprint.is_some()));
    m
}

/// The JSON of one message outcome.
pub fn outcome_json(o: &MessageOutcome) -> Value {
    match o {
        MessageOutcome::Accepted(s) => {
            let mut m = summary_json(s, "accepted");
            if s.fingerprint.is_none() {
                m.insert(
                    "warning".into(),
                    json!("no key field and no DOCNUM found: stored without a fingerprint, not deduplicated"),
                );
            }
            Value::Object(m)
        }
        MessageOutcome::Duplicate { existing, detected_by } => {
            let mut m = summary_json(existing, "duplicate");
            m.insert("detected_by".into(), json!(detected_by.as_str()));
            Value::Object(m)
        }
    }
}

/// 202 when any message was new, else 200; a packet answers `{"messages":[…]}`.
pub fn render_outcomes(outcomes: &[MessageOutcome], packet: bool) -> StoredResponse {
    let any_new = outcomes.iter().any(|o| matches!(o, MessageOutcome::Accepted(_)));
    let body = if packet {
        json!({ "messages": outcomes.iter().map(outcome_json).collect::<Vec<_>>() })
    } else {
        outcomes.first().map(outcome_json).unwrap_or(Value::Null)
    };
    StoredResponse { status: if any_new { 202 } else { 200 }, body: body.to_string() }
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut res = (status, body).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// The HTTP answer to a committed ingest.
pub fn outcome_response(outcome: IngestOutcome) -> Result<Response, ApiError> {
    match outcome {
        IngestOutcome::Processed { response, .. } => {
            let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::OK);
            Ok(json_response(status, response.body))
        }
        IngestOutcome::Replayed { response } => {
            let mut res = json_response(StatusCode::OK, response.body);
            res.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
            Ok(res)
        }
        IngestOutcome::KeyMismatch => Err(ApiError::Unprocessable(
            "this Idempotency-Key was already used with a different payload; use a new key for a new message"
                .into(),
        )),
    }
}

/// 400 when any of `names` occurs more than once: which copy counts would
/// change what the request means (who sent it, its key, its type), so a
/// repeated header is refused like an ambiguous body.
pub fn refuse_repeated(headers: &HeaderMap, names: &[&str]) -> Result<(), ApiError> {
    match names.iter().find(|n| headers.get_all(**n).iter().nth(1).is_some()) {
        Some(name) => Err(ApiError::BadRequest(format!("the {name} header is repeated; send it once"))),
        None => Ok(()),
    }
}

/// A header as text; 400 when it is not visible ASCII or is repeated.
pub fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    refuse_repeated(headers, &[name])?;
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(Some)
            .map_err(|_| ApiError::BadRequest(format!("the {name} header must be printable ASCII"))),
    }
}

/// What a request says about all of its messages.
#[derive(Debug, Clone)]
pub struct MessageSource<'a> {
    /// Message type named by the request (header, query or integration).
    pub explicit_type: Option<&'a str>,
    /// Who sends it, which decides the types it may produce.
    pub producer: Producer<'a>,
    /// The request's Idempotency-Key.
    pub idempotency_key: Option<String>,
    /// The webhook provider's event id.
    pub provider_event_id: Option<String>,
    /// The Content-Type as received.
    pub content_type: Option<String>,
    /// The raw body, shared by all messages of a packet.
    pub payload: bytes::Bytes,
}

/// Resolves each document's type and rules and computes its fingerprint.
pub fn build_messages(
    state: &AppState,
    scope: &Scope,
    documents: &[Document],
    source: &MessageSource<'_>,
) -> Result<Vec<NewMessage>, ApiError> {
    let tenant = scope.tenant_id.as_str();
    let is_configured = |t: &str| state.catalog.is_configured(tenant, t);
    let mut messages = Vec::with_capacity(documents.len());
    let packet = documents.len() > 1;
    // A packet's IDocs mostly share one type: ask once per type in a row.
    let mut permitted: Option<String> = None;
    for (index, doc) in documents.iter().enumerate() {
        let message_type = doc.message_type(source.explicit_type, &is_configured)?;
        if permitted.as_deref() != Some(message_type.as_str()) {
            state.integrations.may_produce(scope, &source.producer, &message_type)?;
            permitted = Some(message_type.clone());
        }
        check_docnum(doc.docnum(), index, packet)?;
        let rule = state.catalog.rule(tenant, &message_type);
        let spec = FingerprintSpec {
            message_type: &message_type,
            key_fields: &rule.key_fields,
            exclude_fields: &rule.exclude_fields,
        };
        let fp = edihub_core::fingerprint(doc, &spec);
        messages.push(NewMessage {
            id: uuid::Uuid::now_v7(),
            // EDIFACT and X12 have no logical message: their version
            // (`D96A`, `004010`) is kept in its place.
            mestyp: doc.mestyp().or(doc.edi_header().map(|h| h.version.as_str())).map(str::to_string),
            docnum: doc.docnum().map(str::to_string),
            sender: doc
                .control()
                .and_then(|c| c.sndprn.clone())
                .or_else(|| doc.edi_header().map(|h| h.interchange.sender.id.clone())),
            fingerprint: fp.hex.clone(),
            fingerprint_basis: fp.basis.as_str().to_string(),
            window_seconds: rule.window_seconds,
            key_values: serde_json::to_value(&fp.key_values).unwrap_or_default(),
            idempotency_key: source.idempotency_key.clone(),
            provider_event_id: source.provider_event_id.clone(),
            packet_index: i32::try_from(index).unwrap_or(i32::MAX),
            content_type: source.content_type.clone(),
            payload: source.payload.clone(),
            message_type,
        });
    }
    Ok(messages)
}

/// Counts what an ingest did. A replay has no per-message outcomes: it is
/// counted once for `replay_type` under the key's detector.
pub fn record_outcome(
    state: &AppState,
    tenant: &str,
    outcome: &IngestOutcome,
    replay_type: &str,
    replay: edihub_store::DetectedBy,
) {
    let metrics = &state.metrics;
    // Senders choose message types freely (X-Message-Type); only configured
    // types become label values, so a sender cannot create unbounded series.
    let label =
        |t: &str| if state.catalog.is_configured(tenant, t) { t.to_string() } else { "other".to_string() };
    match outcome {
        IngestOutcome::Processed { outcomes, .. } => {
            for o in outcomes {
                match o {
                    MessageOutcome::Accepted(s) => metrics.accepted(&label(&s.message_type)),
                    MessageOutcome::Duplicate { existing, detected_by } => {
                        metrics.duplicate(&label(&existing.message_type), detected_by.as_str());
                    }
                }
            }
        }
        IngestOutcome::Replayed { .. } => {
            metrics.duplicate(&label(replay_type), replay.as_str());
        }
        IngestOutcome::KeyMismatch => {}
    }
}

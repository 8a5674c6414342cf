//! Reading a request body within bounds: refused from the headers when it
//! cannot fit (413) or is compressed (415), counted against a memory budget
//! while it is processed, and parsed off the runtime's threads when large.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use bytes::BytesMut;
use edihub_core::{ParsedBody, parse_body};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::state::AppState;

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

//! Reading a request body within bounds: refused from the headers when it
//! cannot fit (413) or is compressed (415), counted against a memory budget
//! (`budget`) while it is processed, cut off when it arrives too slowly
//! (408, see [`Pace`]), and parsed off the runtime's threads when large.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::budget::{BodyBudget, BodyPermit};
use crate::config::Config;
use crate::error::ApiError;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use bytes::BytesMut;
use edihub_core::{IdocDescriptions, ParsedBody, parse_bytes_with};
use http_body_util::{BodyExt, LengthLimitError, Limited};

/// Bodies over this size are parsed on the blocking pool: a 10 MB IDoc takes
/// tens of milliseconds to parse, which must not stall the runtime's few
/// worker threads and every small request they serve.
const PARSE_OFF_THREAD: usize = 1024 * 1024;

/// How fast a body must arrive once reading it has begun: after
/// `body_read_grace_secs`, at `body_read_min_bytes_per_sec` on average.
/// Every byte received buys time: the next must arrive before the start
/// plus the grace plus the bytes so far at the minimum rate (the rule of
/// Apache's `mod_reqtimeout`), so a slow but steady link passes and a
/// client that trickles a byte a second is cut off soon after the grace,
/// releasing its share of the body budget.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    grace: Duration,
    min_bytes_per_sec: u64,
}

impl Pace {
    /// The pace of `config`.
    pub fn of(config: &Config) -> Pace {
        Pace {
            grace: Duration::from_secs(config.body_read_grace_secs),
            min_bytes_per_sec: config.body_read_min_bytes_per_sec,
        }
    }

    /// When the next frame of a body whose reading began at `started` must
    /// have arrived, `received` bytes in; `None` when no rate is required.
    fn deadline(&self, started: Instant, received: usize) -> Option<Instant> {
        let rate = self.min_bytes_per_sec;
        (rate > 0).then(|| started + self.grace + Duration::from_secs_f64(received as f64 / rate as f64))
    }

    /// The 408 of a body that fell behind the pace.
    fn too_slow(&self, received: usize, declared: Option<u64>, started: Instant) -> ApiError {
        let of = declared.map_or(String::new(), |n| format!(" of {n}"));
        tracing::warn!(received, declared, "request body arrived too slowly; cut off");
        ApiError::BodyTooSlow(format!(
            "the body arrived too slowly: {received}{of} bytes in {:.0} s; after the first {} s a body must \
             arrive at {} bytes per second or more",
            started.elapsed().as_secs_f64(),
            self.grace.as_secs(),
            self.min_bytes_per_sec
        ))
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

/// Reads the whole body of an authenticated sender (see [`read_body_from`]).
pub async fn read_body(
    state: &AppState,
    budget: &BodyBudget,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit), ApiError> {
    read_body_from(state, budget, None, headers, body).await
}

/// Reads the whole body sent from `peer`, refusing more than
/// `max_body_bytes` with 413 before buffering it, and one that arrives
/// slower than its [`Pace`] with 408. Large bodies wait for room in
/// `budget` (and in `peer`'s share of it, if it has shares) first, so many
/// large uploads at once queue instead of exhausting memory.
pub async fn read_body_from(
    state: &AppState,
    budget: &BodyBudget,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit), ApiError> {
    let limit = state.config.max_body_bytes;
    let declared = check_body_headers(state, headers)?;
    // With a Content-Length the wait comes before buffering; a chunked body
    // is counted once read, before it is parsed.
    let early = match declared {
        Some(n) => Some(budget.admit(usize::try_from(n).unwrap_or(limit), peer).await),
        None => None,
    };
    let bytes = collect(body, limit, declared, Pace::of(&state.config)).await?;
    let permit = match early {
        Some(permit) => permit,
        None => budget.admit(bytes.len(), peer).await,
    };
    Ok((bytes, permit))
}

/// Buffers the body into one buffer sized from its Content-Length, so a
/// large body is held once (collecting chunks and joining them would hold it
/// twice at the end), at `pace` or faster.
async fn collect(body: Body, limit: usize, declared: Option<u64>, pace: Pace) -> Result<Bytes, ApiError> {
    let capacity = declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit));
    let mut buf = Buffer::with_capacity(capacity)?;
    let mut body = Limited::new(body, limit);
    let started = Instant::now();
    loop {
        let next = body.frame();
        let frame = match pace.deadline(started, buf.len()) {
            Some(deadline) => tokio::time::timeout_at(deadline.into(), next)
                .await
                .map_err(|_| pace.too_slow(buf.len(), declared, started))?,
            None => next.await,
        };
        let Some(frame) = frame else { break };
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data)?;
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

/// Bodies that declare this size or more are buffered in an anonymous
/// memory mapping of their own.
const MAPPED_FROM: usize = 1024 * 1024;

/// Where a body is buffered while it is read: memory from the allocator,
/// or for a large body a mapping of its own, which goes back to the
/// operating system as soon as the last part of the request that shares
/// the body lets it go. The allocator keeps freed memory for reuse a while
/// (mimalloc about a second): a hub taking twenty 10 MB IDocs a second
/// would hold tens of megabytes of bodies already answered.
enum Buffer {
    Heap(BytesMut),
    Mapped { map: memmap2::MmapMut, len: usize },
}

impl Buffer {
    fn with_capacity(capacity: usize) -> Result<Buffer, ApiError> {
        if capacity < MAPPED_FROM {
            return Ok(Buffer::Heap(BytesMut::with_capacity(capacity)));
        }
        let map = memmap2::MmapMut::map_anon(capacity)
            .map_err(|e| ApiError::internal(format!("mapping {capacity} bytes for a request body: {e}")))?;
        Ok(Buffer::Mapped { map, len: 0 })
    }

    fn len(&self) -> usize {
        match self {
            Buffer::Heap(buf) => buf.len(),
            Buffer::Mapped { len, .. } => *len,
        }
    }

    /// Appends `data`. A mapping holds what the Content-Length declared,
    /// which is all a body may carry (HTTP refuses a longer one first).
    fn extend_from_slice(&mut self, data: &[u8]) -> Result<(), ApiError> {
        match self {
            Buffer::Heap(buf) => buf.extend_from_slice(data),
            Buffer::Mapped { map, len } => {
                let end = *len + data.len();
                let room = map.get_mut(*len..end).ok_or_else(|| {
                    ApiError::BadRequest("the body is longer than its Content-Length".into())
                })?;
                room.copy_from_slice(data);
                *len = end;
            }
        }
        Ok(())
    }

    fn freeze(self) -> Bytes {
        match self {
            Buffer::Heap(buf) => buf.freeze(),
            Buffer::Mapped { map, len } => Bytes::from_owner(map).slice(..len),
        }
    }
}

/// [`edihub_core::parse_bytes_with`] the configured IDoc type descriptions,
/// on the blocking pool for large bodies; a body of more than
/// `max_messages` messages (`max_idocs_per_packet`) is refused (413, see
/// [`parse_bytes_with`] for where its reader stops).
pub async fn parse(
    descriptions: &Arc<IdocDescriptions>,
    bytes: &Bytes,
    content_type: Option<&str>,
    max_messages: usize,
) -> Result<ParsedBody, ApiError> {
    if bytes.len() <= PARSE_OFF_THREAD {
        return Ok(parse_bytes_with(bytes, content_type, descriptions, max_messages)?);
    }
    let (bytes, content_type) = (bytes.clone(), content_type.map(str::to_string));
    let descriptions = Arc::clone(descriptions);
    let parse = move || parse_bytes_with(&bytes, content_type.as_deref(), &descriptions, max_messages);
    let parsed = tokio::task::spawn_blocking(parse)
        .await
        // A panic in the parser is a bug: it ends this request's task, as it
        // would have inline.
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    Ok(parsed?)
}

//! A feed page rendered within bounds: its envelopes stay within
//! `feed.page_bytes`, and the pages being rendered at once share one memory
//! budget, `feed.render_budget_bytes`.
//!
//! Rendering is where a page's memory goes: each stored body is parsed into
//! its documents' JSON trees, which take several times the body's size
//! (millions of small EDI elements each become a JSON string in an array).
//! So a read first learns its bodies' sizes from the store, waits until
//! its estimate fits the shared budget (one larger than the whole budget
//! waits until it has all of it, i.e. renders alone), then reads the
//! bodies and parses one at a time, dropping each once its last message is
//! written. Its share is held until the answer has been handed to the
//! connection, since the written page is memory too.
//!
//! The page ends early, at a message boundary, once the next envelope would
//! take it past `page_bytes`; its first message is always written, so a
//! message larger than the budget comes alone, bounded by its own size,
//! and the cursor always moves.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use edihub_store::{FeedMessage, FeedPage, FeedPosition, Store};
use hyper::body::{Frame, SizeHint};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::delivery::envelope::{documents, envelope_of};
use crate::error::ApiError;

/// How many times its stored size a body takes while it is parsed: the
/// documents' JSON trees (measured at 14–16 times for EDI of short
/// elements, the worst common shape; an IDoc takes less).
pub const PARSE_FACTOR: u64 = 16;

/// The size of the chunks the answer is handed to the connection in.
const CHUNK: usize = 64 * 1024;

/// The memory the feed's pages being rendered at once may take together,
/// in KiB permits.
#[derive(Debug)]
pub struct RenderBudget {
    permits: Arc<Semaphore>,
    total_kib: usize,
}

impl RenderBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Self {
        let total_kib = bytes.div_ceil(1024).max(1);
        Self { permits: Arc::new(Semaphore::new(total_kib)), total_kib }
    }

    /// Waits until `estimate` bytes fit; an estimate larger than the whole
    /// budget takes all of it.
    async fn admit(&self, estimate: u64) -> Option<OwnedSemaphorePermit> {
        let kib = usize::try_from(estimate.div_ceil(1024)).unwrap_or(usize::MAX).clamp(1, self.total_kib);
        let kib = u32::try_from(kib).unwrap_or(u32::MAX);
        // The semaphore is never closed, so acquiring only fails if it were.
        Arc::clone(&self.permits).acquire_many_owned(kib).await.ok()
    }

    /// KiB not held by any read (for tests: every share is given back).
    pub fn available_kib(&self) -> usize {
        self.permits.available_permits()
    }
}

/// What rendering `page` is estimated to take: its bodies (each once) held
/// at once, the envelopes written from them (about as large), and the
/// largest body parsed ([`PARSE_FACTOR`]; one is parsed at a time).
pub fn estimate(page: &FeedPage) -> u64 {
    let mut seen = HashSet::new();
    let (mut total, mut largest) = (0u64, 0u64);
    for m in &page.messages {
        if seen.insert(m.body_id) {
            total = total.saturating_add(m.body_bytes);
            largest = largest.max(m.body_bytes);
        }
    }
    total.saturating_mul(2).saturating_add(largest.saturating_mul(PARSE_FACTOR))
}

/// A page written: the JSON array of its envelopes, and where the next
/// page starts.
#[derive(Debug)]
pub struct Rendered {
    /// `[envelope,…]`.
    pub envelopes: Vec<u8>,
    /// How many envelopes were written.
    pub written: usize,
    /// The next page's start: the last written message's when the page
    /// ended early, else the store's.
    pub next: Option<FeedPosition>,
    /// The page's share of the budget, released with the answer.
    pub share: Option<OwnedSemaphorePermit>,
}

/// Renders `page` within `page_bytes`, under `budget` (see the module docs).
pub async fn render(
    store: &dyn Store,
    budget: &RenderBudget,
    page: FeedPage,
    page_bytes: usize,
) -> Result<Rendered, ApiError> {
    if page.messages.is_empty() {
        return Ok(Rendered { envelopes: b"[]".to_vec(), written: 0, next: page.next, share: None });
    }
    let share = budget.admit(estimate(&page)).await;
    let ids: Vec<Uuid> =
        page.messages.iter().map(|m| m.body_id).collect::<HashSet<_>>().into_iter().collect();
    let bodies: HashMap<Uuid, Bytes> = store.message_bodies(&ids).await?.into_iter().collect();
    let FeedPage { messages, next, .. } = page;
    // Parsing a large body takes long enough to stall the runtime's few
    // threads: off them, as a large upload's parse.
    let (envelopes, written, messages) = tokio::task::spawn_blocking(move || {
        write_envelopes(&messages, bodies, page_bytes)
            .map(|(envelopes, written)| (envelopes, written, messages))
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
    // At least one is written: a shorter page ended early, after it.
    let next = if written < messages.len() { Some(messages[written - 1].position) } else { next };
    Ok(Rendered { envelopes, written, next, share })
}

/// Writes the envelopes of `messages` as a JSON array, stopping before the
/// first that would take it past `page_bytes` (the first is always
/// written); each body is parsed once and dropped after its last message.
fn write_envelopes(
    messages: &[FeedMessage],
    mut bodies: HashMap<Uuid, Bytes>,
    page_bytes: usize,
) -> Result<(Vec<u8>, usize), ApiError> {
    let last_use: HashMap<Uuid, usize> = messages.iter().enumerate().map(|(i, m)| (m.body_id, i)).collect();
    let mut parsed: HashMap<Uuid, Vec<Value>> = HashMap::new();
    let mut out = vec![b'['];
    let mut written = 0;
    for (i, m) in messages.iter().enumerate() {
        let documents = parsed.entry(m.body_id).or_insert_with(|| {
            let body = bodies.get(&m.body_id).map_or(&[][..], |b| b.as_ref());
            documents(body, m.meta.content_type.as_deref())
        });
        let mark = out.len();
        if written > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, &envelope_of(&m.meta, documents)).map_err(ApiError::internal)?;
        // `]` still follows.
        if written > 0 && out.len() + 1 > page_bytes {
            out.truncate(mark);
            break;
        }
        written += 1;
        if last_use.get(&m.body_id) == Some(&i) {
            parsed.remove(&m.body_id);
            bodies.remove(&m.body_id);
        }
    }
    out.push(b']');
    out.shrink_to_fit();
    Ok((out, written))
}

/// An answer's body that holds its page's share of the render budget until
/// the connection has taken the last chunk (or drops it).
#[derive(Debug)]
pub struct HeldBody {
    chunks: VecDeque<Bytes>,
    len: u64,
    share: Option<OwnedSemaphorePermit>,
}

impl HeldBody {
    /// `parts`, one after the other, in chunks, with `share` held until the
    /// last one is taken.
    pub fn new(parts: Vec<Bytes>, share: Option<OwnedSemaphorePermit>) -> Self {
        let len = parts.iter().map(|p| p.len() as u64).sum();
        let mut chunks = VecDeque::new();
        for mut part in parts {
            while !part.is_empty() {
                chunks.push_back(part.split_to(CHUNK.min(part.len())));
            }
        }
        HeldBody { chunks, len, share }
    }
}

impl hyper::body::Body for HeldBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let chunk = self.chunks.pop_front();
        if self.chunks.is_empty() {
            self.share = None;
        }
        Poll::Ready(chunk.map(|c| Ok(Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

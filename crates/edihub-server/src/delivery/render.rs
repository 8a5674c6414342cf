//! Envelope bodies, rendered under a shared memory budget and once per
//! message for all its destinations.
//!
//! Rendering an envelope parses the stored body and writes its JSON. The
//! bytes of a message are bounded by `max_body_bytes`, but what a parse
//! makes of them is not: an EDI element of millions of components is
//! millions of parts, and a message of many is as many again. Attempts
//! running at once (up to `max_in_flight` per destination) each rendering
//! such a message would hold several times the bodies at once. So:
//!
//! - a render first takes its share of `delivery.render_budget_bytes`: an
//!   estimate of what parsing and writing take ([`PARSE_FACTOR`] times the
//!   body, for a body that is parsed for it; twice the body for a packet's
//!   body already parsed), all of the budget at most, so a message larger
//!   than the budget renders alone. Bodies up to [`UNCOUNTED_BODY`] are not
//!   counted (their total is bounded by the attempts in flight, and a
//!   burst of small messages must not queue behind a large one). Once the
//!   envelope is written its share shrinks to the envelope's size, held
//!   until the last attempt sending it ends;
//! - an EDI message's payload is written segment by segment
//!   ([`edihub_core::Document::json`]), never built as a JSON value;
//! - a message's envelope is rendered once for all its destinations whose
//!   attempts overlap: the rendering is shared while an attempt holds it;
//! - a message's own body is parsed for its render and dropped with it (a
//!   packet's shared body keeps its parse, see `bodies.rs`); a large body
//!   is parsed on the blocking pool, off the runtime's threads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use super::bodies::Outgoing;
use super::envelope::envelope_of_document;

/// Bodies up to this size render without counting against the budget.
pub const UNCOUNTED_BODY: usize = 64 * 1024;
/// What parsing a body and writing its envelope may take, in multiples of
/// the body's size: the parse of an EDI body is 16 bytes per value (two
/// bytes of text at the least) and a copy of the text, the envelope about
/// twice the text, and growing vectors may hold twice what they use.
pub const PARSE_FACTOR: usize = 20;
/// Bodies over this size are parsed and written on the blocking pool.
const RENDER_OFF_THREAD: usize = 1024 * 1024;

/// A rendered envelope and its share of the budget.
#[derive(Debug)]
pub struct Rendered {
    /// The envelope's bytes.
    pub bytes: Bytes,
    _held: Option<OwnedSemaphorePermit>,
}

/// An envelope being rendered (or rendered) for the attempts that share it.
type Slot = OnceCell<Rendered>;

/// The renderer all attempts of a process share.
#[derive(Debug)]
pub struct Renderer {
    permits: Arc<Semaphore>,
    total_kib: usize,
    /// Envelopes some attempt still holds, by message id.
    shared: Mutex<HashMap<Uuid, Weak<Slot>>>,
}

impl Renderer {
    /// A renderer with a budget of `bytes`.
    pub fn new(bytes: usize) -> Renderer {
        let total_kib = bytes.div_ceil(1024).max(1);
        Renderer { permits: Arc::new(Semaphore::new(total_kib)), total_kib, shared: Mutex::default() }
    }

    /// The envelope of `m`: the one an overlapping attempt holds, or
    /// rendered now within the budget. Hold it until it is sent.
    pub async fn envelope(&self, m: &Outgoing) -> Held {
        let slot = {
            let mut shared = self.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match shared.get(&m.meta.id).and_then(Weak::upgrade) {
                Some(slot) => slot,
                None => {
                    shared.retain(|_, w| w.strong_count() > 0);
                    let slot = Arc::new(Slot::new());
                    shared.insert(m.meta.id, Arc::downgrade(&slot));
                    slot
                }
            }
        };
        slot.get_or_init(|| self.render(m)).await;
        Held(slot)
    }

    /// Renders `m` within the budget (see the module docs).
    async fn render(&self, m: &Outgoing) -> Rendered {
        let body = m.body.bytes.len();
        let estimate =
            if m.body.is_parsed() { body.saturating_mul(2) } else { body.saturating_mul(PARSE_FACTOR) };
        let mut held = if body <= UNCOUNTED_BODY {
            None
        } else {
            let kib = u32::try_from(estimate.div_ceil(1024).min(self.total_kib)).unwrap_or(u32::MAX);
            // The semaphore is never closed.
            Arc::clone(&self.permits).acquire_many_owned(kib).await.ok()
        };
        let bytes = if body > RENDER_OFF_THREAD {
            let (meta, shared) = (m.meta.clone(), m.body.clone());
            tokio::task::spawn_blocking(move || write(&Outgoing { meta, body: shared }))
                .await
                .unwrap_or_default()
        } else {
            write(m)
        };
        // Keep the share of what is held from now on: the envelope.
        if let Some(permit) = held.as_mut() {
            let keep = bytes.len().div_ceil(1024).min(permit.num_permits());
            let _released = permit.split(permit.num_permits() - keep);
        }
        Rendered { bytes, _held: held }
    }
}

/// The envelope's bytes (serializing borrowed fields of plain types and a
/// document cannot fail).
fn write(m: &Outgoing) -> Bytes {
    let bytes = m.body.with_document(m.meta.packet_index, |document| {
        serde_json::to_vec(&envelope_of_document(&m.meta, document.map(edihub_core::Document::json)))
    });
    Bytes::from(bytes.unwrap_or_default())
}

/// A rendered envelope an attempt holds: shared with the overlapping
/// attempts of the same message, and counted against the budget until the
/// last of them lets go.
#[derive(Debug)]
pub struct Held(Arc<Slot>);

impl Held {
    /// The envelope's bytes (they share the rendering's buffer).
    pub fn bytes(&self) -> Bytes {
        self.0.get().map(|r| r.bytes.clone()).unwrap_or_default()
    }
}

//! Message bodies for attempts: a packet's shared body read and parsed once.
//!
//! A packet's messages (an IDoc packet, the messages of an EDI interchange)
//! share one stored body, and each has its own delivery. Reading the whole
//! body and parsing it for every one of them would cost a packet of n
//! messages n reads and n parses of everything (quadratic: hours of CPU for
//! a 20,000-IDoc packet). [`Bodies`] keeps the few shared bodies used last,
//! each parsed at most once, for all attempts of this process. A message
//! that holds its own body (a single message, or a packet's first) is read
//! with its row, parsed only while its envelope is rendered, and not kept:
//! a packet then costs two reads and two parses. What the parses and the
//! envelopes take is bounded by the renderer's budget (`render.rs`).
//! The rows themselves are read a claimed batch at a time, by the worker.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use edihub_core::{Document, IdocDescriptions};
use edihub_store::{MessageMeta, Store, StoreError, StoredMessage};
use tokio::sync::OnceCell;
use uuid::Uuid;

/// Shared bodies kept: enough for the packets whose deliveries are in
/// flight at once, few enough that large packets do not pile up in memory.
pub const KEPT: usize = 4;

/// A stored body and, for a packet's shared body once an envelope needs
/// them, its documents.
#[derive(Debug)]
pub struct Body {
    /// The bytes as received.
    pub bytes: Bytes,
    /// Their Content-Type as received.
    content_type: Option<String>,
    /// Whether the body is a packet's, shared by its messages: its
    /// documents are then parsed once and kept with it.
    shared: bool,
    /// A shared body's documents, parsed on first use.
    documents: OnceLock<Vec<Document>>,
    /// The IDoc type descriptions flat files are read with, as at intake.
    descriptions: Arc<IdocDescriptions>,
}

impl Body {
    fn new(
        bytes: Bytes,
        content_type: Option<String>,
        shared: bool,
        descriptions: Arc<IdocDescriptions>,
    ) -> Self {
        Body { bytes, content_type, shared, documents: OnceLock::new(), descriptions }
    }

    /// Whether the body's documents are parsed already.
    pub fn is_parsed(&self) -> bool {
        self.documents.get().is_some()
    }

    /// Calls `f` with the document at `index` (`None` if the body cannot be
    /// read or has none there): a shared body's documents are parsed once
    /// and kept, a message's own body is parsed for the call only.
    pub fn with_document<R>(&self, index: i32, f: impl FnOnce(Option<&Document>) -> R) -> R {
        let i = usize::try_from(index).ok();
        if self.shared {
            return f(i.and_then(|i| self.documents.get_or_init(|| self.parse()).get(i)));
        }
        let own = self.parse();
        f(i.and_then(|i| own.get(i)))
    }

    fn parse(&self) -> Vec<Document> {
        // A stored body was accepted: however many messages it holds.
        edihub_core::parse_bytes_with(
            &self.bytes,
            self.content_type.as_deref(),
            &self.descriptions,
            usize::MAX,
        )
        .map(|p| p.documents)
        .unwrap_or_default()
    }
}

/// A message to send: its metadata and the body it arrived in.
#[derive(Debug)]
pub struct Outgoing {
    /// Its metadata (its position in the body is `packet_index`).
    pub meta: MessageMeta,
    /// The body, perhaps shared with the other messages of its packet.
    pub body: Arc<Body>,
}

/// A body being read (or read) by one attempt while others wait for it.
type Slot = Arc<OnceCell<Arc<Body>>>;

/// The shared bodies used last, newest at the back.
#[derive(Debug)]
pub struct Bodies {
    kept: Mutex<VecDeque<(Uuid, Slot)>>,
    /// The configured IDoc type descriptions, for flat-file bodies.
    descriptions: Arc<IdocDescriptions>,
}

impl Bodies {
    /// No body kept yet; flat files are read with `descriptions`.
    pub fn new(descriptions: Arc<IdocDescriptions>) -> Bodies {
        Bodies { kept: Mutex::default(), descriptions }
    }

    /// The message `m` read (see [`Store::stored_messages`]) with its body;
    /// `None` if the message is gone.
    pub async fn message(
        &self,
        store: &dyn Store,
        m: Option<StoredMessage>,
    ) -> Result<Option<Outgoing>, StoreError> {
        let Some(m) = m else { return Ok(None) };
        let content_type = m.meta.content_type.clone();
        let body = match m.own_body {
            Some(bytes) => Arc::new(Body::new(bytes, content_type, false, self.descriptions.clone())),
            None => {
                let slot = self.slot(m.body_id);
                let read = slot.get_or_try_init(|| async {
                    // A purged body reads as empty: the envelope's payload is then null.
                    let bytes = store.message_body(m.body_id).await?.unwrap_or_default();
                    let descriptions = self.descriptions.clone();
                    Ok::<_, StoreError>(Arc::new(Body::new(bytes, content_type, true, descriptions)))
                });
                read.await?.clone()
            }
        };
        Ok(Some(Outgoing { meta: m.meta, body }))
    }

    /// The slot of `body_id`, made the newest; the oldest beyond [`KEPT`] goes.
    fn slot(&self, body_id: Uuid) -> Slot {
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let slot = match kept.iter().position(|(id, _)| *id == body_id) {
            Some(i) => kept.remove(i).map(|(_, s)| s).unwrap_or_default(),
            None => Slot::default(),
        };
        kept.push_back((body_id, slot.clone()));
        if kept.len() > KEPT {
            kept.pop_front();
        }
        slot
    }
}

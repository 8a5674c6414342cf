//! Message bodies for attempts: a packet's shared body read and parsed once.
//!
//! A packet's messages (an IDoc packet, the messages of an EDI interchange)
//! share one stored body, and each has its own delivery. Reading the whole
//! body and parsing it for every one of them would cost a packet of n
//! messages n reads and n parses of everything (quadratic: hours of CPU for
//! a 20,000-IDoc packet). [`Bodies`] keeps the few shared bodies used last,
//! each parsed at most once, for all attempts of this process. A message
//! that holds its own body (a single message, or a packet's first) is read
//! with its row and not kept: a packet then costs two reads and two parses.
//! The rows themselves are read a claimed batch at a time, by the worker.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use edihub_store::{MessageMeta, Store, StoreError, StoredMessage};
use serde_json::Value;
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::envelope::documents;

/// Shared bodies kept: enough for the packets whose deliveries are in
/// flight at once, few enough that large packets do not pile up in memory.
pub const KEPT: usize = 4;

/// A stored body and, once an envelope needs them, its documents.
#[derive(Debug)]
pub struct Body {
    /// The bytes as received.
    pub bytes: Bytes,
    /// Their Content-Type as received.
    content_type: Option<String>,
    /// The JSON renderings of the documents, parsed on first use.
    documents: OnceLock<Vec<Value>>,
}

impl Body {
    fn new(bytes: Bytes, content_type: Option<String>) -> Self {
        Body { bytes, content_type, documents: OnceLock::new() }
    }

    /// The documents the body holds (empty if it cannot be read).
    pub fn documents(&self) -> &[Value] {
        self.documents.get_or_init(|| documents(&self.bytes, self.content_type.as_deref()))
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
#[derive(Debug, Default)]
pub struct Bodies {
    kept: Mutex<VecDeque<(Uuid, Slot)>>,
}

impl Bodies {
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
            Some(bytes) => Arc::new(Body::new(bytes, content_type)),
            None => {
                let slot = self.slot(m.body_id);
                let read = slot.get_or_try_init(|| async {
                    // A purged body reads as empty: the envelope's payload is then null.
                    let bytes = store.message_body(m.body_id).await?.unwrap_or_default();
                    Ok::<_, StoreError>(Arc::new(Body::new(bytes, content_type)))
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

//! The envelope: a message's metadata with its JSON rendering, the body a
//! destination with `format = "envelope"` receives and the pull feed lists.
//!
//! A packet's messages share the body they arrived in; [`Envelopes`] parses
//! each shared body once for all the messages of a feed page.

use std::collections::HashMap;

use edihub_store::{FeedMessage, MessageMeta};
use serde_json::{Value, json};

/// The JSON renderings of the documents a body holds (empty if it cannot
/// be read, e.g. a purged packet body).
pub(crate) fn documents(payload: &[u8], content_type: Option<&str>) -> Vec<Value> {
    edihub_core::parse_body(payload, content_type)
        .map(|p| p.documents.into_iter().map(|d| d.value().clone()).collect())
        .unwrap_or_default()
}

/// The envelope of `meta`, whose body holds `documents`: its metadata and
/// its JSON rendering (the document at its position in the body it arrived
/// in; `null` if that cannot be read).
pub(crate) fn envelope_of(meta: &MessageMeta, documents: &[Value]) -> Value {
    let payload = usize::try_from(meta.packet_index).ok().and_then(|i| documents.get(i)).cloned();
    json!({
        "id": meta.id,
        "tenant": meta.tenant_id,
        "environment": meta.environment_id,
        "message_type": meta.message_type,
        "mestyp": meta.mestyp,
        "docnum": meta.docnum,
        "fingerprint": meta.fingerprint,
        "received_at": meta.received_at,
        "payload": payload.unwrap_or(Value::Null),
    })
}

/// Envelopes of the messages of one feed page, each shared body parsed once.
#[derive(Debug, Default)]
pub struct Envelopes {
    /// Parsed bodies by the address of their bytes (a packet's messages
    /// share one buffer).
    parsed: HashMap<usize, Vec<Value>>,
}

impl Envelopes {
    /// The envelope of `m`.
    pub fn of(&mut self, m: &FeedMessage) -> Value {
        let content_type = m.meta.content_type.as_deref();
        let documents = self
            .parsed
            .entry(m.payload.as_ptr() as usize)
            .or_insert_with(|| documents(&m.payload, content_type));
        envelope_of(&m.meta, documents)
    }
}

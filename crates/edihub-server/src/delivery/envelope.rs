//! The envelope: a message's metadata with its JSON rendering, the body a
//! destination with `format = "envelope"` receives and the pull feed lists.
//!
//! An envelope borrows the message's metadata and its parsed document and
//! is serialized straight to the bytes sent: building it as a
//! `serde_json::Value` copied the whole document twice more (`json!`
//! serializes a `Value` member into a new `Value`), which was a fifth of
//! the worker's CPU per delivery. The members are declared in the order a
//! `Value` object sorts them (`serde_json` without `preserve_order`), so
//! the bytes are what an envelope has always been.
//!
//! A packet's messages share the body they arrived in; the feed parses each
//! shared body once for all the messages of a page (`feed::render`).

use chrono::{DateTime, Utc};
use edihub_store::{MessageMeta, MessageSummary, Scope};
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

/// The JSON renderings of the documents a body holds (empty if it cannot
/// be read, e.g. a purged packet body).
pub(crate) fn documents(payload: &[u8], content_type: Option<&str>) -> Vec<Value> {
    edihub_core::parse_body(payload, content_type)
        .map(|p| p.documents.into_iter().map(edihub_core::Document::into_value).collect())
        .unwrap_or_default()
}

/// A message's envelope, members in sorted order (see the module docs);
/// the payload is a rendered value, or a document written as it is
/// serialized ([`edihub_core::Document::json`]).
#[derive(Debug, Serialize)]
pub(crate) struct Envelope<'a, P = &'a Value> {
    docnum: Option<&'a str>,
    environment: &'a str,
    fingerprint: Option<&'a str>,
    id: Uuid,
    message_type: &'a str,
    mestyp: Option<&'a str>,
    /// `null` when the document cannot be read.
    payload: Option<P>,
    received_at: DateTime<Utc>,
    tenant: &'a str,
}

/// The envelope of `meta`, whose body holds `documents`: its metadata and
/// its JSON rendering (the document at its position in the body it arrived
/// in; `null` if that cannot be read).
pub(crate) fn envelope_of<'a>(meta: &'a MessageMeta, documents: &'a [Value]) -> Envelope<'a> {
    let payload = usize::try_from(meta.packet_index).ok().and_then(|i| documents.get(i));
    envelope_of_document(meta, payload)
}

/// The envelope of `meta` with `payload` (`null` if `None`).
pub(crate) fn envelope_of_document<'a, P: Serialize>(
    meta: &'a MessageMeta,
    payload: Option<P>,
) -> Envelope<'a, P> {
    Envelope {
        docnum: meta.docnum.as_deref(),
        environment: &meta.environment_id,
        fingerprint: meta.fingerprint.as_deref(),
        id: meta.id,
        message_type: &meta.message_type,
        mestyp: meta.mestyp.as_deref(),
        payload,
        received_at: meta.received_at,
        tenant: &meta.tenant_id,
    }
}

/// The envelope of a message just stored in `scope` (what the store
/// keeps of it is `stored`), with `payload`: the same members as
/// [`envelope_of_document`] gives once the message is read back.
pub(crate) fn envelope_of_summary<'a, P: Serialize>(
    scope: &'a Scope,
    stored: &'a MessageSummary,
    payload: Option<P>,
) -> Envelope<'a, P> {
    Envelope {
        docnum: stored.docnum.as_deref(),
        environment: &scope.environment_id,
        fingerprint: stored.fingerprint.as_deref(),
        id: stored.id,
        message_type: &stored.message_type,
        mestyp: stored.mestyp.as_deref(),
        payload,
        received_at: stored.received_at,
        tenant: &scope.tenant_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes an envelope always had: those of the same members built as
    /// a `serde_json::Value`.
    #[test]
    fn envelope_bytes_are_those_of_the_value_it_replaced() {
        let meta = MessageMeta {
            id: Uuid::now_v7(),
            tenant_id: "acme".into(),
            environment_id: "prod".into(),
            message_type: "ORDERS05".into(),
            mestyp: Some("ORDERS".into()),
            docnum: None,
            sender: None,
            fingerprint: Some("ab\"c".into()),
            fingerprint_basis: "key_fields".into(),
            fingerprint_expires_at: None,
            fingerprint_active: true,
            idempotency_key: None,
            provider_event_id: None,
            packet_index: 1,
            content_type: Some("application/xml".into()),
            received_at: Utc::now(),
        };
        let documents = vec![Value::Null, serde_json::json!({"E1EDK01": {"BELNR": "4711", "Z": [1, "ü"]}})];
        let before = serde_json::json!({
            "id": meta.id,
            "tenant": meta.tenant_id,
            "environment": meta.environment_id,
            "message_type": meta.message_type,
            "mestyp": meta.mestyp,
            "docnum": meta.docnum,
            "fingerprint": meta.fingerprint,
            "received_at": meta.received_at,
            "payload": documents[1].clone(),
        });
        let now = serde_json::to_string(&envelope_of(&meta, &documents)).unwrap();
        assert_eq!(now, before.to_string());
        let unreadable = serde_json::to_value(envelope_of(&meta, &[])).unwrap();
        assert_eq!(unreadable["payload"], Value::Null);
    }
}

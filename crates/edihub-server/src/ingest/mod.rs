//! Pieces every ingest route shares: bounded body reading (`body`, within a
//! memory budget: `budget`), header
//! and identifier checks, building the messages of a request, handing them
//! to the store (`submit`), and the response format of stored and duplicate
//! messages (`response`); the AS2 intake (`as2`), which stores an opened
//! AS2 message's payload the same way.

pub mod as2;
mod body;
mod budget;
mod identifiers;
mod response;
mod submit;

pub use body::{Pace, check_body_headers, parse, read_body, read_body_from};
pub use budget::{BodyBudget, BodyPermit};
pub use response::{outcome_json, outcome_response, render_answer};
pub use submit::{Submission, store, submit};

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use edihub_core::Document;
use edihub_store::{NewMessage, Scope};

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
        let (message_type, field) = doc.message_type_and_field(source.explicit_type, &is_configured)?;
        // A configured type (a CIMTYP is taken only then) passed the
        // configuration's rules already.
        if let Some(field) = field.filter(|_| !is_configured(&message_type)) {
            identifiers::check_derived_type(&message_type, field, index, packet)?;
        }
        identifiers::check_identifiers(doc, index, packet)?;
        if permitted.as_deref() != Some(message_type.as_str()) {
            state.integrations.may_produce(scope, &source.producer, &message_type)?;
            permitted = Some(message_type.clone());
        }
        let rule = state.catalog.rule(tenant, &message_type);
        let fp = edihub_core::fingerprint(doc, &rule.spec(&message_type));
        messages.push(NewMessage {
            id: uuid::Uuid::now_v7(),
            // EDIFACT and X12 have no logical message: their version
            // (`D96A`, `004010`) is kept in its place.
            mestyp: doc.mestyp().or(doc.edi_header().map(|h| h.version.as_str())).map(str::to_string),
            docnum: doc.docnum().map(str::to_string),
            sender: identifiers::sender(doc).map(str::to_string),
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

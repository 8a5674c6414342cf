//! A request's documents made into the messages the store is handed: each
//! document's type (permitted to its producer), the rule of that type and
//! the fingerprint it gives. A document refused here refuses the request;
//! the IDocs of it from the environment's SAP system are told so (see
//! [`crate::sap_status::refused`]).

use edihub_core::Document;
use edihub_store::{NewMessage, Scope};

use super::identifiers;
use crate::error::ApiError;
use crate::producers::Producer;
use crate::state::AppState;

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
/// A refusal records the status its SAP sender is owed, then refuses.
pub async fn build_messages(
    state: &AppState,
    scope: &Scope,
    documents: &[Document],
    source: &MessageSource<'_>,
) -> Result<Vec<NewMessage>, ApiError> {
    match messages_of(state, scope, documents, source) {
        Ok(messages) => Ok(messages),
        Err(e) => Err(crate::sap_status::refused(state, scope, documents, e).await),
    }
}

/// [`build_messages`] without the refusal's status.
fn messages_of(
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

//! The OpenAPI document, generated from the handlers' `#[utoipa::path]`
//! annotations: every route is registered through `utoipa_axum::routes!`, so
//! a route cannot exist without appearing in `/openapi.json`.
//!
//! The schema types below describe the JSON the handlers write; the
//! integration tests compare real responses against them.

pub mod acks;
pub mod errors;

use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// The document's fixed parts; paths are added by the routers.
#[derive(OpenApi)]
#[openapi(
    info(title = "edihub", description = "EDI message ingestion hub: every business message stored exactly once."),
    modifiers(&Security),
    // The error answers (`errors`) reference `Problem` without registering
    // it, unlike a `body = …` in a path: it is listed here once.
    components(schemas(Problem)),
    tags(
        (name = "receive", description = "SAP IDocs and JSON messages"),
        (name = "webhooks", description = "Partner webhooks"),
        (name = "as2", description = "AS2 messages from trading partners, answered with MDNs"),
        (name = "feed", description = "The pull feed of an environment's messages (consumer key)"),
        (name = "admin", description = "Audit, lookups and configuration (admin credential)"),
        (name = "console", description = "The console's HTML forms (admin credential and an anti-forgery token)"),
        (name = "operations", description = "Health, readiness, metrics")
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
        components.add_security_scheme("basic", SecurityScheme::Http(Http::new(HttpAuthScheme::Basic)));
    }
}

/// One message's result (also the body of a single-document response).
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageResult {
    /// The stored message (for a duplicate: the original).
    pub id: uuid::Uuid,
    /// `accepted` or `duplicate`.
    pub status: String,
    /// Resolved message type.
    pub message_type: String,
    /// SAP logical message.
    pub mestyp: Option<String>,
    /// Document number.
    pub docnum: Option<String>,
    /// The fingerprint, or null when the message could not be deduplicated.
    pub fingerprint: Option<String>,
    /// When the (original) message was stored, RFC 3339.
    pub received_at: String,
    /// False when stored without a fingerprint.
    pub deduplicated: bool,
    /// For duplicates: `fingerprint`.
    pub detected_by: Option<String>,
    /// Present when the message was not deduplicated.
    pub warning: Option<String>,
}

/// The body for a packet of several IDocs.
#[derive(Debug, Serialize, ToSchema)]
pub struct PacketResult {
    /// One result per IDoc, in packet order.
    pub messages: Vec<MessageResult>,
}

/// RFC 9457 problem details.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Always `about:blank`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What is wrong, for the sender.
    pub detail: String,
}

/// A page of audit events.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// Events, newest first.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<serde_json::Value>,
    /// Pass back as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A page of the pull feed.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedPage {
    /// Envelopes (`id`, `tenant`, `environment`, `message_type`, `mestyp`,
    /// `docnum`, `fingerprint`, `received_at`, `payload`), oldest first:
    /// the body a destination with `format = "envelope"` receives.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<serde_json::Value>,
    /// Pass back as `after`; the same cursor when the page is empty.
    pub next_cursor: String,
}

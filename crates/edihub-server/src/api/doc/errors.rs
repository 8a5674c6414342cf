//! The error answers the OpenAPI document lists, each defined once.
//!
//! Every error leaves as a [`Problem`] (`application/problem+json`, see
//! [`crate::error`]); what differs between routes is which statuses they can
//! answer and, for a few statuses, why. Each type here is one such answer
//! (status, description, body), and a route names the ones it can give in its
//! `#[utoipa::path(responses(…))]`, e.g.
//! `responses((status = 200, …), BadInput, Unauthenticated, Unavailable)`.
//! The types are never built: they exist for their [`IntoResponses`] derive.

use utoipa::IntoResponses;

use super::Problem;

/// 400 ([`crate::error::ApiError::BadRequest`]).
#[derive(Debug, IntoResponses)]
#[response(
    status = 400,
    description = "Malformed body, header or query",
    content_type = "application/problem+json"
)]
pub struct BadInput(pub Problem);

/// 401 for senders and admins ([`crate::error::ApiError::Unauthorized`]).
#[derive(Debug, IntoResponses)]
#[response(
    status = 401,
    description = "Missing or wrong credentials",
    content_type = "application/problem+json"
)]
pub struct Unauthenticated(pub Problem);

/// 401 for webhooks, whose credential is the provider's signature.
#[derive(Debug, IntoResponses)]
#[response(
    status = 401,
    description = "Bad, missing or stale signature",
    content_type = "application/problem+json"
)]
pub struct BadSignature(pub Problem);

/// 406 when `Accept` allows only an acknowledgement the body cannot have
/// ([`crate::error::ApiError::NotAcceptable`]).
#[derive(Debug, IntoResponses)]
#[response(
    status = 406,
    description = "Accept allows only an acknowledgement this body cannot have",
    content_type = "application/problem+json"
)]
pub struct NotAcceptable(pub Problem);

/// 403 when a sender's environment may not send the message type, or the
/// key is a consumer key.
#[derive(Debug, IntoResponses)]
#[response(
    status = 403,
    description = "The environment may not send this message type, or the key is a consumer key (it only reads the feed)",
    content_type = "application/problem+json"
)]
pub struct SenderTypeForbidden(pub Problem);

/// 403 on the feed for a sender key (a consumer key reads the feed).
#[derive(Debug, IntoResponses)]
#[response(
    status = 403,
    description = "A sender key: the feed is read with a consumer key",
    content_type = "application/problem+json"
)]
pub struct SenderKeyOnFeed(pub Problem);

/// 403 when a webhook's payload names a type its integration may not send.
#[derive(Debug, IntoResponses)]
#[response(
    status = 403,
    description = "The payload names a message type this integration may not send",
    content_type = "application/problem+json"
)]
pub struct IntegrationTypeForbidden(pub Problem);

/// 403 for an admin change sent from a page of another origin.
#[derive(Debug, IntoResponses)]
#[response(
    status = 403,
    description = "Sent from a page of another origin",
    content_type = "application/problem+json"
)]
pub struct CrossOrigin(pub Problem);

/// 403 for a console form without a valid token, or sent from a page of
/// another origin (`crate::console::forms::token`).
#[derive(Debug, IntoResponses)]
#[response(
    status = 403,
    description = "No valid token, or sent from another site: nothing changed",
    content_type = "application/problem+json"
)]
pub struct FormForged(pub Problem);

/// 422 for a console edit form: the form again, naming the field.
#[derive(Debug, IntoResponses)]
#[response(
    status = 422,
    description = "Refused: the form again, naming the field",
    content_type = "text/html"
)]
pub struct FormRefused(pub String);

/// 404 ([`crate::error::ApiError::NotFound`]).
#[derive(Debug, IntoResponses)]
#[response(status = 404, description = "Not found", content_type = "application/problem+json")]
pub struct NotFound(pub Problem);

/// 408: the body arrived slower than `body_read_min_bytes_per_sec`.
#[derive(Debug, IntoResponses)]
#[response(
    status = 408,
    description = "The body arrived too slowly (body_read_min_bytes_per_sec after body_read_grace_secs); the connection is closed",
    content_type = "application/problem+json"
)]
pub struct BodyTooSlow(pub Problem);

/// 413: the body (or a packet's message count) is over its limit.
#[derive(Debug, IntoResponses)]
#[response(status = 413, description = "Body over max_body_bytes", content_type = "application/problem+json")]
pub struct TooLarge(pub Problem);

/// 415 on the receive route, which reads several content types.
#[derive(Debug, IntoResponses)]
#[response(status = 415, description = "Unsupported content type", content_type = "application/problem+json")]
pub struct UnsupportedType(pub Problem);

/// 415 on the admin changes, which read JSON only.
#[derive(Debug, IntoResponses)]
#[response(status = 415, description = "Not application/json", content_type = "application/problem+json")]
pub struct NotJson(pub Problem);

/// 422 ([`crate::error::ApiError::Unprocessable`]).
#[derive(Debug, IntoResponses)]
#[response(status = 422, description = "Well-formed but unusable", content_type = "application/problem+json")]
pub struct Unusable(pub Problem);

/// 503 ([`crate::error::ApiError::Unavailable`]): the sender should retry.
#[derive(Debug, IntoResponses)]
#[response(
    status = 503,
    description = "Database unavailable; retry later",
    content_type = "application/problem+json"
)]
pub struct Unavailable(pub Problem);

//! The single mapping from failures to HTTP responses.
//!
//! Every error leaves as RFC 9457 `application/problem+json` with a `detail`
//! a sender can act on. Client errors say exactly what is wrong; server
//! errors say only that something failed, and the cause goes to the log with
//! the request id, never to the client.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use edihub_core::{CoreError, ErrorClass};
use edihub_store::StoreError;
use serde_json::json;

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: malformed body or header.
    #[error("{0}")]
    BadRequest(String),
    /// 401: missing or wrong credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: not allowed, whoever asks: an admin change from another origin,
    /// or a sender sending a message type another integration claims.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such resource.
    #[error("{0}")]
    NotFound(String),
    /// 406: the answer asked for (an EDI acknowledgement) cannot be given
    /// for this body.
    #[error("{0}")]
    NotAcceptable(String),
    /// 408: a body that arrived slower than `body_read_min_bytes_per_sec`
    /// (see [`crate::ingest::Pace`]); the connection is closed.
    #[error("{0}")]
    BodyTooSlow(String),
    /// 409: the request repeats one still being processed; send it again later.
    #[error("{0}")]
    Conflict(String),
    /// 413: body over `max_body_bytes`.
    #[error("the body is larger than the limit of {0} bytes")]
    TooLarge(usize),
    /// 413: a packet (or interchange) with more messages than `max_idocs_per_packet`.
    #[error(
        "the request holds more than max_idocs_per_packet ({limit}) messages (IDocs, or an interchange's messages); send them in smaller packets or interchanges"
    )]
    PacketTooLarge {
        /// The configured maximum.
        limit: usize,
    },
    /// 415: a content type edihub does not read.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422: well-formed but unusable.
    #[error("{0}")]
    Unprocessable(String),
    /// 503: the database is unreachable; the sender should retry.
    #[error("the database is unavailable")]
    Unavailable(#[source] StoreError),
    /// 500: a bug or an unexpected failure (the database's, or one of
    /// edihub's own invariants); its cause goes to the log only.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        if let CoreError::TooManyMessages { limit } = e {
            return ApiError::PacketTooLarge { limit };
        }
        match e.class() {
            ErrorClass::Malformed => ApiError::BadRequest(e.to_string()),
            ErrorClass::Unsupported => ApiError::UnsupportedMediaType(format!(
                "{e}; send the document itself as the body with Content-Type application/xml, \
                 application/json, application/EDIFACT, application/EDI-X12 or \
                 application/x-sap-idoc-flat (text/plain and \
                 application/octet-stream are sniffed; with curl: --data-binary @FILE -H 'Content-Type: application/xml')"
            )),
            ErrorClass::Unusable => ApiError::Unprocessable(e.to_string()),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        if e.is_unavailable() { ApiError::Unavailable(e) } else { ApiError::internal(e) }
    }
}

impl ApiError {
    /// A 500 caused by `cause`: a bug or an unexpected failure, logged with
    /// the request and never shown to the client.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ApiError::Internal(cause.into())
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::BodyTooSlow(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) | ApiError::PacketTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// Builds a problem+json response.
pub fn problem(status: StatusCode, detail: &str) -> Response {
    let body = json!({
        "type": "about:blank",
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
        "detail": detail,
    });
    let mut res = (status, body.to_string()).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    res
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            ApiError::Internal(source) => tracing::error!(error = %source, "request failed"),
            ApiError::Unavailable(source) => tracing::warn!(error = %source, "database unavailable"),
            _ => {}
        }
        let mut res = problem(status, &self.to_string());
        let headers = res.headers_mut();
        match self {
            ApiError::Unauthorized(_) => {
                // Basic first: a browser then shows its login prompt.
                headers.append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"edihub\""));
                headers.append(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"edihub\""));
            }
            ApiError::Unavailable(_) | ApiError::Conflict(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            // The rest of the body is not read: the connection cannot carry
            // another request.
            ApiError::BodyTooSlow(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        res
    }
}

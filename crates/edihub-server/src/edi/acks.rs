//! Acknowledgements on the receive endpoint: which one a request asks for
//! (`?ack=997|999|contrl`, or `Accept: application/EDI-X12` /
//! `application/EDIFACT`), its control number, and the answer carrying it.
//!
//! The request is checked against its body before anything is stored: an
//! acknowledgement exists only for an EDIFACT or X12 interchange, in the
//! interchange's own syntax, so `?ack=` on another body or of the other
//! syntax is a 400, and an `Accept` that allows nothing but an EDI type the
//! body cannot have is a 406. An `Accept` that also allows JSON gets JSON,
//! as content negotiation goes. The control number is taken from the
//! store's per-partner counter before the ingest (a failure there stores
//! nothing; a number taken by a request that then fails is skipped, never
//! reused). The status code and headers stay those of the JSON answer
//! (202, 200 with `Idempotency-Replayed` for a repeated interchange); only
//! the body and its content type change. An interchange refused while it is
//! read (400, 422; nothing stored) is answered with the acknowledgement of
//! its refusal when its header could be read and its sender can key a
//! counter (see [`refused`]); other errors stay problem+json.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use chrono::{Datelike, Timelike, Utc};
use edihub_core::{
    AckKind, AckTime, BodyFormat, EdiSyntax, Envelope, acknowledge, acknowledge_refusal, refusal,
};
use edihub_store::{IngestOutcome, Scope};

use crate::error::ApiError;
use crate::ingest::{MAX_KEY_LEN, outcome_response};
use crate::state::AppState;

/// RFC 1767's media type of X12 (997, 999, TA1).
pub const X12_MEDIA: &str = "application/EDI-X12";
/// RFC 1767's media type of EDIFACT (CONTRL).
pub const EDIFACT_MEDIA: &str = "application/EDIFACT";

fn media(syntax: EdiSyntax) -> &'static str {
    match syntax {
        EdiSyntax::X12 => X12_MEDIA,
        EdiSyntax::Edifact => EDIFACT_MEDIA,
    }
}

fn syntax_of(format: BodyFormat) -> Option<EdiSyntax> {
    match format {
        BodyFormat::X12 => Some(EdiSyntax::X12),
        BodyFormat::Edifact => Some(EdiSyntax::Edifact),
        _ => None,
    }
}

/// The acknowledgement the request asks for, if any. `?ack=` wins over
/// `Accept`.
pub fn requested(
    query_ack: Option<&str>,
    headers: &HeaderMap,
    format: BodyFormat,
) -> Result<Option<AckKind>, ApiError> {
    let body_syntax = syntax_of(format);
    if let Some(name) = query_ack {
        let kind = AckKind::parse(name).ok_or_else(|| {
            ApiError::BadRequest(format!("ack must be 997, 999 or contrl (got `{}`)", name.escape_default()))
        })?;
        return match body_syntax {
            Some(s) if s == kind.syntax() => Ok(Some(kind)),
            Some(s) => Err(ApiError::BadRequest(format!(
                "ack={name} is an {} acknowledgement, but this interchange is {}: ask for {}",
                kind.syntax().as_str(),
                s.as_str(),
                if s == EdiSyntax::X12 { "ack=997 or ack=999" } else { "ack=contrl" }
            ))),
            None => Err(ApiError::BadRequest(format!(
                "ack={name} asks for an acknowledgement, which only EDIFACT and X12 interchanges have; this body is {format}"
            ))),
        };
    }
    let ranges = accept_ranges(headers)?;
    let q = |wanted: &[&str]| {
        ranges.iter().filter(|(t, _)| wanted.contains(&t.as_str())).map(|(_, q)| *q).fold(0.0_f32, f32::max)
    };
    let json_q = q(&["application/json", "application/*", "*/*"]);
    let edi_asked = ranges.iter().any(|(t, q)| *q > 0.0 && is_edi(t));
    if let Some(s) = body_syntax {
        let own = q(&[media(s).to_ascii_lowercase().as_str()]);
        if own > 0.0 && own >= json_q {
            return Ok(Some(AckKind::default_for(s)));
        }
    }
    if edi_asked && json_q <= 0.0 {
        let what = match body_syntax {
            Some(s) => format!("an {} interchange is acknowledged as {}", s.as_str(), media(s)),
            None => format!("{format} has no acknowledgement and is answered as application/json"),
        };
        return Err(ApiError::NotAcceptable(format!(
            "Accept allows only an EDI acknowledgement this body cannot be answered with: {what}"
        )));
    }
    Ok(None)
}

fn is_edi(media_type: &str) -> bool {
    media_type == "application/edi-x12" || media_type == "application/edifact"
}

/// The media ranges of every `Accept` header, lower-cased, with their q.
fn accept_ranges(headers: &HeaderMap) -> Result<Vec<(String, f32)>, ApiError> {
    let mut out = Vec::new();
    for value in headers.get_all(header::ACCEPT) {
        let text = value
            .to_str()
            .map_err(|_| ApiError::BadRequest("the accept header must be printable ASCII".into()))?;
        for range in text.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media_type = parts.next().unwrap_or("").to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")))
                .find_map(|v| v.parse::<f32>().ok())
                .unwrap_or(1.0);
            if !media_type.is_empty() {
                out.push((media_type, q));
            }
        }
    }
    Ok(out)
}

/// Whom the counter counts for: the interchange's sender, who receives
/// the acknowledgement (`X12|ZZ:TPASCX12`).
fn partner(envelope: &Envelope) -> String {
    let ic = &envelope.interchange;
    format!("{}|{}:{}", ic.syntax.as_str(), ic.sender.qualifier.as_deref().unwrap_or(""), ic.sender.id)
}

/// Whether a partner can key a counter: the rule of request keys (the
/// interchange's claim refuses the same sender before an accepted
/// interchange takes a number).
fn keyable(partner: &str) -> bool {
    partner.len() <= MAX_KEY_LEN && !partner.chars().any(char::is_control)
}

/// An acknowledgement with its control number, waiting for the ingest's outcome.
#[derive(Debug)]
pub struct PendingAck {
    kind: AckKind,
    number: i64,
    envelope: Envelope,
}

impl PendingAck {
    /// Takes the partner's next control number.
    pub async fn take(
        state: &AppState,
        scope: &Scope,
        kind: AckKind,
        envelope: Envelope,
    ) -> Result<Self, ApiError> {
        let number = state.store.next_ack_number(scope, &partner(&envelope)).await?;
        Ok(PendingAck { kind, number, envelope })
    }

    /// The answer to a committed ingest: the JSON answer's status and
    /// headers, the acknowledgement as its body. A control number claimed
    /// by other content is refused with 422 and the duplicate's rejection
    /// (TA1 `025`, UCI `26`): the copy is not processed.
    pub fn respond(self, outcome: IngestOutcome) -> Result<Response, ApiError> {
        let duplicate = matches!(outcome, IngestOutcome::Replayed { .. } | IngestOutcome::KeyMismatch);
        let bytes = acknowledge(&self.envelope, self.kind, duplicate, self.number, ack_time())
            .ok_or_else(other_syntax)?;
        let media = media(self.kind.syntax());
        if outcome == IngestOutcome::KeyMismatch {
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
            return Ok(response);
        }
        let (mut parts, _) = outcome_response(outcome)?.into_parts();
        parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
        Ok(Response::from_parts(parts, Body::from(bytes)))
    }
}

/// Now, as an acknowledgement's envelope dates it.
fn ack_time() -> AckTime {
    let now = Utc::now();
    AckTime {
        year: u16::try_from(now.year()).unwrap_or(0),
        month: now.month() as u8,
        day: now.day() as u8,
        hour: now.hour() as u8,
        minute: now.minute() as u8,
    }
}

/// `requested` only lets through acknowledgements of the body's syntax:
/// another would be a bug (500).
fn other_syntax() -> ApiError {
    ApiError::internal("acknowledgement of the other syntax")
}

/// The answer to an interchange refused while it was read (`error`, a 400
/// or 422): its acknowledgement, with that status, when the sender asked
/// for one (as [`requested`] reads the request) and the interchange's
/// header could be read (with a sender that can key the counter, see
/// `keyable`); otherwise `error` itself, a problem document.
/// Nothing was stored. The control number is taken only once the
/// acknowledgement is certain to be written, so a refusal wastes none; an
/// `?ack=` of the other syntax gets the refusal's problem document, which
/// says what is wrong with the interchange.
pub async fn refused(
    state: &AppState,
    scope: &Scope,
    query_ack: Option<&str>,
    headers: &HeaderMap,
    body: (&Bytes, Option<&str>),
    error: ApiError,
) -> Result<Response, ApiError> {
    let status = error.status();
    let asks = query_ack.is_some() || accept_ranges(headers)?.iter().any(|(t, q)| *q > 0.0 && is_edi(t));
    if !asks || !matches!(status, StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY) {
        return Err(error);
    }
    let (bytes, content_type) = (body.0.clone(), body.1.map(str::to_string));
    // The body is read again, off the async threads as a large body's parse is.
    let refusal = tokio::task::spawn_blocking(move || refusal(&bytes, content_type.as_deref()))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let Some(refusal) = refusal.filter(|r| keyable(&partner(r.envelope()))) else { return Err(error) };
    let Ok(Some(kind)) = requested(query_ack, headers, refusal.format()) else { return Err(error) };
    let number = state.store.next_ack_number(scope, &partner(refusal.envelope())).await?;
    let bytes = acknowledge_refusal(&refusal, kind, number, ack_time()).ok_or_else(other_syntax)?;
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(media(kind.syntax())));
    Ok(response)
}

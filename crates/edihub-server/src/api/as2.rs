//! `POST /as2`: AS2 messages from trading partners (RFC 4130), one URL for
//! every partner, answered with an MDN.
//!
//! Order of checks: the AS2 headers are there and well-formed (400), the
//! `AS2-To` is one of our stations (404) and the `AS2-From` one of its
//! partners (403): all before a byte of the body is read, and answered with
//! a problem document, since nothing says the sender speaks AS2. Then the
//! body is read within `max_body_bytes` and the webhook body budget (the
//! route has no credential but the partner's signature) and opened with
//! the partner's profile ([`crate::as2::inbound`]). From here on every
//! answer is an MDN when one was asked for:
//!
//! - a message that cannot be opened (decryption, signature, integrity,
//!   missing protection, malformed MIME, a decompression past the limit) or
//!   whose payload the intake refuses is answered with the failure MDN
//!   (`processed/Error: <modifier>`), in the HTTP response whatever it
//!   asked for, and nothing of it is stored;
//! - the Message-ID is claimed in the store ([`edihub_store::As2Claim`]): a
//!   re-send of the same payload gets the MDN first answered, byte for
//!   byte, with nothing processed again; another payload under a
//!   Message-ID seen before is refused (422); a re-send that arrives while
//!   the first is still processed waits for its MDN (409 if it does not
//!   come in time);
//! - the payload takes the intake pipeline ([`crate::ingest::as2`]) and
//!   the MDN (`processed`, with the MIC, signed when asked) is kept with
//!   the claim, then answered, or posted to `Receipt-Delivery-Option` by
//!   the background sender ([`crate::delivery::as2_mdn`]) after an empty 200.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Extension;
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use edihub_store::{As2Claim, As2Key, As2MessageRow, As2Settlement, MDN_PROCESSING, NewAs2Message, Scope};
use sha2::{Digest, Sha256};

use crate::api::doc::errors::{BadInput, BodyTooSlow, NotFound, TooLarge, Unavailable, Unusable};
use crate::as2::As2Error;
use crate::as2::headers::Envelope;
use crate::as2::inbound::{self, Opened};
use crate::as2::mdn::Mdn;
use crate::as2::mime::Headers;
use crate::as2::partner::{PartnerProfile, Station};
use crate::error::ApiError;
use crate::ingest::{now, read_body_from};
use crate::state::AppState;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// How long a re-send waits for the MDN of its first copy, still processed.
const WAIT_FOR_FIRST: Duration = Duration::from_secs(10);
/// A claim without an MDN this old is one whose processing died (the
/// process stopped mid-request): a re-send takes it over.
const ABANDONED_AFTER: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(receive))
}

/// Receive an AS2 message from a configured trading partner.
#[utoipa::path(post, path = "/as2", tag = "as2",
    request_body(description = "An AS2 message: S/MIME signed, encrypted and/or compressed, or plain", content(
        (String = "application/pkcs7-mime"), (String = "multipart/signed"), (String = "application/EDI-X12"),
        (String = "application/EDIFACT"), (String = "application/xml"))),
    params(
        ("AS2-From" = String, Header, description = "The partner's AS2 id"),
        ("AS2-To" = String, Header, description = "Our station's AS2 id"),
        ("Message-ID" = String, Header, description = "The message's id; a re-send repeats it"),
        ("Disposition-Notification-To" = Option<String>, Header, description = "Asks for an MDN"),
        ("Disposition-Notification-Options" = Option<String>, Header, description = "Asks for a signed MDN and its MIC algorithm"),
        ("Receipt-Delivery-Option" = Option<String>, Header, description = "The URL of an asynchronous MDN")
    ),
    responses(
        (status = 200, description = "The MDN (multipart/report, or multipart/signed around it): processed with the MIC, or processed/Error with the failure's modifier; a re-sent Message-ID gets the first MDN byte for byte; empty when the MDN is asynchronous or none was asked for", content(
            (String = "multipart/report"), (String = "multipart/signed"))),
        (status = 403, description = "AS2-From is not a partner of the station", content_type = "application/problem+json"),
        (status = 409, description = "The same Message-ID is still being processed; send it again later", content_type = "application/problem+json"),
        BadInput, NotFound, BodyTooSlow, TooLarge, Unusable, Unavailable
    )
)]
async fn receive(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let http = as2_headers(&headers);
    let envelope = Envelope::read(&http)
        .map_err(|e| ApiError::BadRequest(format!("not an AS2 message: {}", reason(&e))))?;
    let station = state.as2.station(&envelope.to).ok_or_else(|| {
        ApiError::NotFound(format!("AS2-To `{}` is not an AS2 station of this hub", envelope.to))
    })?;
    let partner = state.as2.partner(&envelope.to, &envelope.from).ok_or_else(|| {
        ApiError::Forbidden(format!(
            "AS2-From `{}` is not a partner of station `{}`",
            envelope.from, envelope.to
        ))
    })?;
    let peer = peer.map(|Extension(ConnectInfo(addr))| addr.ip());
    let (bytes, _permit) = read_body_from(&state, &state.webhook_body_budget, peer, &headers, body).await?;
    let opened = open(&state, &http, bytes, &envelope, station, partner).await;
    let opened = match receipt_failure(&envelope).map_or(opened, Err) {
        Ok(opened) => opened,
        Err(e) => return failure(&envelope, e, station, partner),
    };
    let new = NewAs2Message {
        key: As2Key {
            station: envelope.to.as_str().to_string(),
            partner: envelope.from.as_str().to_string(),
            message_id: envelope.message_id.as_str().to_string(),
        },
        scope: Scope::new(&station.tenant, &station.environment),
        payload_sha256: hex::encode(Sha256::digest(&opened.payload)),
        mdn_mode: mdn_mode(&envelope).to_string(),
        received_at: now(),
    };
    match claim(&state, &new).await? {
        As2Claim::New => process(&state, &new.key, &envelope, opened, station, partner).await,
        As2Claim::Duplicate(row) => repeat(&state, row, &envelope).await,
        As2Claim::Reused(_) => Err(ApiError::Unprocessable(format!(
            "Message-ID {} from {} was received before with another payload; nothing was stored: \
             send new content under a new Message-ID",
            envelope.message_id.header_value(),
            envelope.from
        ))),
    }
}

/// The request's header fields as the AS2 reader takes them.
fn as2_headers(headers: &HeaderMap) -> Headers {
    headers.iter().map(|(n, v)| (n.as_str(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

/// An AS2 failure's text without the variant's prefix.
fn reason(e: &As2Error) -> String {
    match e {
        As2Error::Malformed(r) => r.clone(),
        other => other.to_string(),
    }
}

/// `sync`, `async` or `none`.
fn mdn_mode(envelope: &Envelope) -> &'static str {
    match &envelope.receipt {
        None => "none",
        Some(r) if r.async_url.is_some() => "async",
        Some(_) => "sync",
    }
}

/// A receipt request edihub cannot honour (a required protocol or MIC
/// algorithm it lacks): the message is answered `failed` and not stored.
fn receipt_failure(envelope: &Envelope) -> Option<As2Error> {
    let options = &envelope.receipt.as_ref()?.options;
    options.wants_signed().err().or_else(|| options.mic_algorithm().err())
}

/// Opens the message off the runtime's threads (decryption, signature and
/// decompression take a while for large messages).
async fn open(
    state: &AppState,
    http: &Headers,
    bytes: bytes::Bytes,
    envelope: &Envelope,
    station: &Station,
    partner: &PartnerProfile,
) -> Result<Opened, As2Error> {
    let mic = envelope.receipt.as_ref().and_then(|r| r.options.mic_algorithm().ok().flatten());
    let (http, station, partner) = (http.clone(), station.clone(), partner.clone());
    let limit = state.config.max_body_bytes;
    tokio::task::spawn_blocking(move || {
        inbound::open(&http, &bytes, &station, &partner, mic, limit, chrono::Utc::now())
    })
    .await
    .unwrap_or_else(|e| Err(As2Error::Processing(format!("opening the message stopped: {e}"))))
}

/// Claims the Message-ID; a claim abandoned by a process that stopped
/// mid-request is released and claimed again.
async fn claim(state: &AppState, new: &NewAs2Message) -> Result<As2Claim, ApiError> {
    let claim = state.store.claim_as2_message(new).await?;
    if let As2Claim::Duplicate(row) = &claim
        && row.mdn_status == MDN_PROCESSING
        && row.received_at < new.received_at - ABANDONED_AFTER
    {
        state.store.release_as2_message(&new.key).await?;
        return Ok(state.store.claim_as2_message(new).await?);
    }
    Ok(claim)
}

/// Stores the payload and answers with the MDN, kept with the claim; a
/// payload the intake refuses releases the claim and is answered with the
/// failure MDN (a database failure with its HTTP error, for a retry).
async fn process(
    state: &AppState,
    key: &As2Key,
    envelope: &Envelope,
    mut opened: Opened,
    station: &Station,
    partner: &PartnerProfile,
) -> Result<Response, ApiError> {
    // The payload moves to the intake (the MDN needs only the MIC).
    let payload = bytes::Bytes::from(std::mem::take(&mut opened.payload));
    let stored = match crate::ingest::as2::intake(state, station, payload, &opened.content_type).await {
        Ok(stored) => stored,
        Err(e) => {
            state.store.release_as2_message(key).await?;
            if e.status().is_server_error() {
                return Err(e);
            }
            let error = As2Error::Processing(format!("the payload was refused: {e}"));
            return failure(envelope, error, station, partner);
        }
    };
    let mdn = match inbound::receipt(envelope, &Ok(opened), station, partner) {
        Ok(mdn) => mdn,
        Err(e) => {
            state.store.release_as2_message(key).await?;
            tracing::error!(error = %e, "building an AS2 MDN failed");
            return Err(ApiError::Unprocessable("the MDN could not be built".into()));
        }
    };
    let async_url = envelope.receipt.as_ref().and_then(|r| r.async_url.clone());
    let (mdn_headers, mdn_body) = mdn.map(parts).unwrap_or_default();
    let settlement = As2Settlement {
        mdn_headers,
        mdn_body,
        stored_message_id: stored,
        async_url: async_url.clone(),
        now: now(),
    };
    state.store.settle_as2_message(key, &settlement).await?;
    if async_url.is_some() {
        state.as2_mdns.notify_one();
        return Ok(StatusCode::OK.into_response());
    }
    Ok(mdn_response(&settlement.mdn_headers, settlement.mdn_body))
}

/// A re-send of a message received before: its first MDN, once there is
/// one, byte for byte; asked asynchronously, posted again.
async fn repeat(state: &AppState, row: As2MessageRow, envelope: &Envelope) -> Result<Response, ApiError> {
    let row = wait_for_mdn(state, row).await?;
    let Some((headers, body)) = row.mdn() else {
        return Err(ApiError::Conflict(format!(
            "Message-ID {} is still being processed; send it again later for its MDN",
            envelope.message_id.header_value()
        )));
    };
    tracing::info!(partner = %row.partner, message_id = %row.message_id, "AS2 re-send answered with its first MDN");
    let async_url = envelope.receipt.as_ref().and_then(|r| r.async_url.clone());
    if async_url.is_some() && !body.is_empty() {
        let settlement = As2Settlement {
            mdn_headers: headers,
            mdn_body: body,
            stored_message_id: row.stored_message_id,
            async_url,
            now: now(),
        };
        state.store.settle_as2_message(&row.key(), &settlement).await?;
        state.as2_mdns.notify_one();
        return Ok(StatusCode::OK.into_response());
    }
    Ok(mdn_response(&headers, body))
}

/// `row` once its MDN is kept, or as it is after [`WAIT_FOR_FIRST`].
async fn wait_for_mdn(state: &AppState, mut row: As2MessageRow) -> Result<As2MessageRow, ApiError> {
    let until = tokio::time::Instant::now() + WAIT_FOR_FIRST;
    while row.mdn_status == MDN_PROCESSING && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
        match state.store.as2_message(&row.key()).await? {
            Some(now) => row = now,
            // The first copy failed and left nothing: this one is not stored either.
            None => break,
        }
    }
    Ok(row)
}

/// The failure MDN of a message that is not stored; without an MDN asked
/// for, a 422 naming the disposition.
fn failure(
    envelope: &Envelope,
    error: As2Error,
    station: &Station,
    partner: &PartnerProfile,
) -> Result<Response, ApiError> {
    tracing::warn!(partner = %envelope.from, message_id = %envelope.message_id, error = %error,
        "AS2 message refused");
    let disposition = error.disposition();
    match inbound::receipt(envelope, &Err(error), station, partner) {
        Ok(Some(mdn)) => {
            let (headers, body) = parts(mdn);
            Ok(mdn_response(&headers, body))
        }
        _ => Err(ApiError::Unprocessable(format!(
            "the AS2 message was not stored: {disposition}; no MDN was asked for (Disposition-Notification-To)"
        ))),
    }
}

/// An MDN's header fields and body.
fn parts(mdn: Mdn) -> (Vec<(String, String)>, Vec<u8>) {
    let headers = mdn.headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    (headers, mdn.body)
}

/// The 200 carrying an MDN.
fn mdn_response(headers: &[(String, String)], body: Vec<u8>) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let map = response.headers_mut();
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            map.insert(n, v);
        }
    }
    response
}

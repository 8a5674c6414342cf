//! Webhook signatures, both ways: the schemes partners' webhooks are
//! checked with ([`Verifier`]) and the Standard Webhooks signature
//! deliveries carry ([`standard_webhooks_sign`]). A leaf: the integrations'
//! checks, the delivery worker and the configuration's key checks all read
//! it, and it reads none of them.
//!
//! Each scheme is an HMAC-SHA256 over the raw body (plus, for Standard
//! Webhooks and Stripe, the event id and/or a timestamp), differing only in
//! where the signature travels and how it is encoded. Signatures are checked
//! with `Mac::verify_slice`, which compares in constant time; timestamps must
//! lie within ±5 minutes of now (both ways: a far-future timestamp is as
//! suspicious as a stale one).
//!
//! Verification has two steps so that a request is refused before its body
//! is read whenever its headers alone rule it out:
//! [`Verifier::check_headers`] (presence, syntax, timestamp), then
//! [`Verifier::check_body`] (the MAC over the body).

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// How far a signed timestamp may be from now, in seconds.
pub const TOLERANCE_SECS: i64 = 300;

type HmacSha256 = Hmac<Sha256>;

/// Digest encoding of the generic HMAC scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Lower- or upper-case hex.
    Hex,
    /// Standard base64.
    Base64,
}

/// A configured verifier.
#[derive(Clone)]
pub enum Verifier {
    /// No signature (the endpoint is open; use only behind another check).
    None,
    /// Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    StandardWebhooks {
        /// The decoded `whsec_` key.
        key: Vec<u8>,
    },
    /// GitHub: `X-Hub-Signature-256: sha256=<hex>`.
    GitHub {
        /// The webhook secret.
        secret: Vec<u8>,
    },
    /// Shopify: `X-Shopify-Hmac-Sha256: <base64>`.
    Shopify {
        /// The app secret.
        secret: Vec<u8>,
    },
    /// Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`.
    Stripe {
        /// The endpoint secret (`whsec_…`, used as-is).
        secret: Vec<u8>,
    },
    /// Any header carrying an HMAC-SHA256 of the body.
    Hmac {
        /// The secret.
        secret: Vec<u8>,
        /// Header name (lower case).
        header: String,
        /// Digest encoding.
        encoding: Encoding,
        /// Text before the digest, e.g. `sha256=`.
        prefix: String,
    },
}

impl std::fmt::Debug for Verifier {
    // Never print secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Verifier::None => "none",
            Verifier::StandardWebhooks { .. } => "standard-webhooks",
            Verifier::GitHub { .. } => "github",
            Verifier::Shopify { .. } => "shopify",
            Verifier::Stripe { .. } => "stripe",
            Verifier::Hmac { .. } => "hmac",
        };
        write!(f, "Verifier({name})")
    }
}

/// Why a signature was refused (shown to the sender and audited).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A required header is absent.
    #[error("the {0} header is missing")]
    Missing(&'static str),
    /// A header could not be parsed.
    #[error("the {0} header is malformed")]
    Malformed(&'static str),
    /// The generic scheme's configured header is absent.
    #[error("the {0} header is missing")]
    HeaderMissing(String),
    /// The generic scheme's configured header could not be parsed.
    #[error("the {0} header is malformed")]
    HeaderMalformed(String),
    /// The timestamp is outside the tolerance.
    #[error("the signature timestamp is more than {TOLERANCE_SECS} s away from now")]
    Stale,
    /// No signature matched.
    #[error("the signature does not match the body")]
    Mismatch,
}

impl SignatureError {
    /// A short, fixed name of the kind of refusal (a metric label).
    pub fn kind(&self) -> &'static str {
        match self {
            SignatureError::Missing(_) | SignatureError::HeaderMissing(_) => "missing",
            SignatureError::Malformed(_) | SignatureError::HeaderMalformed(_) => "malformed",
            SignatureError::Stale => "stale",
            SignatureError::Mismatch => "mismatch",
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &'static str) -> Result<&'a str, SignatureError> {
    headers
        .get(name)
        .ok_or(SignatureError::Missing(name))?
        .to_str()
        .map(str::trim)
        .map_err(|_| SignatureError::Malformed(name))
}

fn mac(key: &[u8], parts: &[&[u8]]) -> HmacSha256 {
    // HMAC takes keys of any length; new_from_slice cannot fail for it.
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    for p in parts {
        m.update(p);
    }
    m
}

/// A decoded digest of the wrong length (e.g. hex sent where base64 is
/// expected) is malformed, not merely a mismatch: the sender learns what to fix.
fn sha256_len(decoded: Option<Vec<u8>>) -> Option<Vec<u8>> {
    decoded.filter(|d| d.len() == 32)
}

fn check_time(ts: &str, now: i64, name: &'static str) -> Result<(), SignatureError> {
    let t: i64 = ts.parse().map_err(|_| SignatureError::Malformed(name))?;
    // abs_diff: no overflow on extreme timestamps a sender may choose.
    if now.abs_diff(t) > TOLERANCE_SECS.unsigned_abs() { Err(SignatureError::Stale) } else { Ok(()) }
}

/// Decodes a Standard Webhooks secret (`whsec_<base64>`, the prefix optional,
/// padding optional as in the reference library); an empty key is refused.
pub fn standard_webhooks_key(secret: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let lenient = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    lenient.decode(secret.strip_prefix("whsec_").unwrap_or(secret)).ok().filter(|k| !k.is_empty())
}

/// The `webhook-signature` value for `body` sent as Standard Webhooks
/// message `id` at `timestamp` (Unix seconds): `v1,` and the base64
/// HMAC-SHA256 over `{id}.{timestamp}.{body}`; what [`Verifier::check_body`]
/// checks on the way in, used by delivery on the way out.
pub fn standard_webhooks_sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let prefix = format!("{id}.{timestamp}.");
    let digest = mac(key, &[prefix.as_bytes(), body]).finalize().into_bytes();
    format!("v1,{}", STANDARD.encode(digest))
}

/// What a request's headers present: everything the MAC needs except the
/// body. Checked before the body is read, so a request whose headers cannot
/// carry a valid signature is refused without reading (or budgeting) it.
#[derive(Debug, Clone)]
pub struct Presented {
    /// Bytes signed before the body (Standard Webhooks `{id}.{ts}.`, Stripe `{ts}.`).
    signed_prefix: Vec<u8>,
    /// The decoded signatures offered (several during a key rotation).
    candidates: Vec<Vec<u8>>,
}

/// A signature header that says two things at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {header} header carries `{item}` more than once; send it once")]
pub struct Ambiguous {
    /// The header.
    pub header: &'static str,
    /// The repeated item, e.g. `t=`.
    pub item: &'static str,
}

impl Verifier {
    /// The headers this scheme reads (lower case); each must occur once.
    pub fn header_names(&self) -> Vec<&str> {
        match self {
            Verifier::None => vec![],
            Verifier::StandardWebhooks { .. } => vec!["webhook-id", "webhook-timestamp", "webhook-signature"],
            Verifier::GitHub { .. } => vec!["x-hub-signature-256"],
            Verifier::Shopify { .. } => vec!["x-shopify-hmac-sha256"],
            Verifier::Stripe { .. } => vec!["stripe-signature"],
            Verifier::Hmac { header, .. } => vec![header.as_str()],
        }
    }

    /// Refuses a signature header whose meaning depends on which of its
    /// parts counts: two timestamps in `Stripe-Signature` (several `v1=`
    /// stay allowed, they are how Stripe rotates secrets).
    pub fn check_unambiguous(&self, headers: &HeaderMap) -> Result<(), Ambiguous> {
        if let Verifier::Stripe { .. } = self
            && let Some(value) = headers.get("stripe-signature").and_then(|v| v.to_str().ok())
            && value.split(',').filter(|item| item.trim().starts_with("t=")).nth(1).is_some()
        {
            return Err(Ambiguous { header: "stripe-signature", item: "t=" });
        }
        Ok(())
    }

    /// Checks `body` against the request's headers at unix time `now`.
    pub fn verify(&self, headers: &HeaderMap, body: &[u8], now: i64) -> Result<(), SignatureError> {
        match self.check_headers(headers, now)? {
            None => Ok(()),
            Some(presented) => self.check_body(&presented, body),
        }
    }

    /// Checks what needs no body: the signature headers are present and
    /// well-formed, a signed timestamp is fresh, and at least one signature
    /// of a known version is offered. `None` for an unsigned endpoint.
    pub fn check_headers(&self, headers: &HeaderMap, now: i64) -> Result<Option<Presented>, SignatureError> {
        let presented = match self {
            Verifier::None => return Ok(None),
            Verifier::StandardWebhooks { .. } => {
                let id = header(headers, "webhook-id")?;
                let ts = header(headers, "webhook-timestamp")?;
                let sigs = header(headers, "webhook-signature")?;
                check_time(ts, now, "webhook-timestamp")?;
                // Several space-separated `v1,<base64>` entries during key rotation.
                let candidates = sigs
                    .split(' ')
                    .filter_map(|s| s.strip_prefix("v1,"))
                    .filter_map(|s| STANDARD.decode(s).ok());
                Presented {
                    signed_prefix: format!("{id}.{ts}.").into_bytes(),
                    candidates: candidates.collect(),
                }
            }
            Verifier::GitHub { .. } => {
                let sig = header(headers, "x-hub-signature-256")?;
                let hex_sig =
                    sig.strip_prefix("sha256=").ok_or(SignatureError::Malformed("x-hub-signature-256"))?;
                let sig = sha256_len(hex::decode(hex_sig).ok())
                    .ok_or(SignatureError::Malformed("x-hub-signature-256"))?;
                Presented { signed_prefix: Vec::new(), candidates: vec![sig] }
            }
            Verifier::Shopify { .. } => {
                let sig = header(headers, "x-shopify-hmac-sha256")?;
                let sig = sha256_len(STANDARD.decode(sig).ok())
                    .ok_or(SignatureError::Malformed("x-shopify-hmac-sha256"))?;
                Presented { signed_prefix: Vec::new(), candidates: vec![sig] }
            }
            Verifier::Stripe { .. } => stripe_headers(headers, now)?,
            Verifier::Hmac { header: name, encoding, prefix, .. } => {
                let malformed = || SignatureError::HeaderMalformed(name.clone());
                let value = headers
                    .get(name.as_str())
                    .ok_or_else(|| SignatureError::HeaderMissing(name.clone()))?
                    .to_str()
                    .map_err(|_| malformed())?
                    .trim();
                let digest = value.strip_prefix(prefix.as_str()).ok_or_else(malformed)?;
                let sig = match encoding {
                    Encoding::Hex => sha256_len(hex::decode(digest).ok()),
                    Encoding::Base64 => sha256_len(STANDARD.decode(digest).ok()),
                }
                .ok_or_else(malformed)?;
                Presented { signed_prefix: Vec::new(), candidates: vec![sig] }
            }
        };
        // No signature of a known version can ever match, whatever the body.
        if presented.candidates.is_empty() {
            return Err(SignatureError::Mismatch);
        }
        Ok(Some(presented))
    }

    /// Checks `body` against signatures accepted by [`Verifier::check_headers`].
    pub fn check_body(&self, presented: &Presented, body: &[u8]) -> Result<(), SignatureError> {
        let key = match self {
            Verifier::None => return Ok(()),
            Verifier::StandardWebhooks { key } => key,
            Verifier::GitHub { secret }
            | Verifier::Shopify { secret }
            | Verifier::Stripe { secret }
            | Verifier::Hmac { secret, .. } => secret,
        };
        let m = mac(key, &[&presented.signed_prefix, body]);
        let matched = presented.candidates.iter().any(|sig| m.clone().verify_slice(sig).is_ok());
        if matched { Ok(()) } else { Err(SignatureError::Mismatch) }
    }
}

/// `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`.
fn stripe_headers(headers: &HeaderMap, now: i64) -> Result<Presented, SignatureError> {
    let value = header(headers, "stripe-signature")?;
    let mut ts = None;
    let mut v1 = Vec::new();
    for item in value.split(',') {
        match item.trim().split_once('=') {
            // A second timestamp is never "the last one wins".
            Some(("t", _)) if ts.is_some() => return Err(SignatureError::Malformed("stripe-signature")),
            Some(("t", t)) => ts = Some(t),
            Some(("v1", s)) => v1.push(s),
            _ => {}
        }
    }
    let ts = ts.ok_or(SignatureError::Malformed("stripe-signature"))?;
    if v1.is_empty() {
        return Err(SignatureError::Malformed("stripe-signature"));
    }
    check_time(ts, now, "stripe-signature")?;
    let candidates = v1.iter().filter_map(|s| hex::decode(s).ok()).collect();
    Ok(Presented { signed_prefix: format!("{ts}.").into_bytes(), candidates })
}

//! Cross-site request forgery protection of the console's forms.
//!
//! A browser sends its cached Basic credentials with any request to the
//! hub, also one a page of another site makes it send. Every state-changing
//! console form is therefore a `POST` under `/admin/forms/` that carries a
//! token, and [`ConsoleForm`] (the only way a handler can read such a form)
//! refuses it with 403 before anything changes unless the token is valid:
//!
//! - the token is `v1.<issued unix seconds>.<HMAC-SHA256>` over the form's
//!   action path and the time, keyed with the admin credential the request
//!   itself presents. A forging page knows neither the credential nor a
//!   token, and a token is good for one action only and for
//!   [`TOKEN_LIFETIME_SECS`]. No server secret is kept: any replica verifies
//!   what another rendered, also after a restart, and changing the admin
//!   credential voids every token issued under the old one.
//! - on top of it, `admin_http` refuses any admin write whose `Origin` is
//!   another origin or whose `Sec-Fetch-Site` says cross-site.
//!
//! The JSON admin API is unaffected: it takes JSON bodies (which an HTML
//! form cannot send) with an `Authorization` header, and no token.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::auth::presented_secret;
use crate::error::ApiError;
use crate::state::AppState;

/// How long a rendered form can be submitted: a working day.
pub const TOKEN_LIFETIME_SECS: i64 = 12 * 3600;
/// How far in the future an issue time may lie (clocks of replicas differ).
const CLOCK_SKEW_SECS: i64 = 300;
/// The largest form body read (edit forms are small).
const MAX_FORM_BYTES: usize = 64 * 1024;
/// The name of the token's hidden field.
pub const TOKEN_FIELD: &str = "csrf";

fn mac(secret: &str, action: &str, issued: i64) -> [u8; 32] {
    // HMAC takes keys of any length; this cannot fail.
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("HMAC key");
    m.update(format!("edihub console form\n{action}\n{issued}").as_bytes());
    m.finalize().into_bytes().into()
}

/// The token for a form posting to `action`, issued at `now` (unix seconds).
pub fn token(secret: &str, action: &str, now: i64) -> String {
    format!("v1.{now}.{}", hex::encode(mac(secret, action, now)))
}

/// Whether `presented` is a token for `action` under `secret` that is still good at `now`.
pub fn verify(secret: &str, action: &str, presented: &str, now: i64) -> bool {
    verify_within(secret, action, presented, now, TOKEN_LIFETIME_SECS)
}

/// How long the link a form's redirect writes shows its notice: long
/// enough for the redirect, short enough that an old link says nothing.
pub const NOTICE_LIFETIME_SECS: i64 = 600;

/// What a notice's signature covers: the page and the notice's text. It
/// starts with `notice`, so no form action (a path, `/…`) signs the same.
fn notice_subject(path: &str, text: &str) -> String {
    format!("notice\n{path}\n{text}")
}

/// [`verify`] with its own lifetime.
fn verify_within(secret: &str, action: &str, presented: &str, now: i64, lifetime: i64) -> bool {
    let mut parts = presented.splitn(3, '.');
    let (Some("v1"), Some(issued), Some(sig)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(issued), Ok(sig)) = (issued.parse::<i64>(), hex::decode(sig)) else { return false };
    let fresh = issued <= now + CLOCK_SKEW_SECS && now - issued <= lifetime;
    fresh && bool::from(mac(secret, action, issued).as_slice().ct_eq(&sig))
}

/// An admin request that can sign forms: authenticated like
/// [`crate::auth::Admin`], keeping the credential it presented.
#[derive(Clone)]
pub struct FormSigner {
    secret: String,
}

impl std::fmt::Debug for FormSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FormSigner")
    }
}

impl FormSigner {
    /// A token for a form posting to `action`. The token covers the path
    /// only: the check compares it with the path the form was posted to, and
    /// a query (a message type's `?tenant=`) is not part of that.
    pub fn token(&self, action: &str) -> String {
        let path = action.split('?').next().unwrap_or(action);
        token(&self.secret, path, chrono::Utc::now().timestamp())
    }
}

impl FormSigner {
    /// A signature of the status notice `text` shown on the page at `path`
    /// (a form's redirect writes it into the link back), so that the page
    /// shows only notices its own forms wrote, never text a link made up.
    pub fn notice(&self, path: &str, text: &str) -> String {
        token(&self.secret, &notice_subject(path, text), chrono::Utc::now().timestamp())
    }

    /// Whether `presented` is [`FormSigner::notice`]'s signature of `text`
    /// on `path`, made by this credential within [`NOTICE_LIFETIME_SECS`].
    pub fn is_notice(&self, path: &str, text: &str, presented: &str) -> bool {
        let now = chrono::Utc::now().timestamp();
        verify_within(&self.secret, &notice_subject(path, text), presented, now, NOTICE_LIFETIME_SECS)
    }
}

impl FromRequestParts<AppState> for FormSigner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let secret = presented_secret(parts)?;
        if !state.credentials.is_admin(&secret) {
            return Err(ApiError::Unauthorized("the admin credential is not valid".into()));
        }
        Ok(FormSigner { secret })
    }
}

/// A console form that passed the checks: its fields (in order; a name may repeat).
#[derive(Debug)]
pub struct ConsoleForm {
    /// The fields, token excluded.
    pub fields: Vec<(String, String)>,
    /// The submitter, to sign the form again when it is shown with errors.
    pub signer: FormSigner,
}

impl ConsoleForm {
    /// The first value of field `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of field `name`.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.fields.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str()).collect()
    }

    /// The fields as a map (the last value of a repeated name wins).
    pub fn map(&self) -> HashMap<&str, &str> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }
}

fn forbidden(why: &str) -> ApiError {
    ApiError::Forbidden(format!("{why}: reload the console page and submit the form again"))
}

impl FromRequest<AppState> for ConsoleForm {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let signer = FormSigner::from_request_parts(&mut parts, state).await?;
        let is_form =
            parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| {
                t.trim().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded")
            });
        if !is_form {
            return Err(forbidden(
                "a console form is sent as application/x-www-form-urlencoded with its token",
            ));
        }
        let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
            .await
            .map_err(|_| ApiError::TooLarge(MAX_FORM_BYTES))?;
        let request = Request::from_parts(parts.clone(), Body::from(bytes));
        let axum::Form(mut fields) = axum::Form::<Vec<(String, String)>>::from_request(request, &())
            .await
            .map_err(|e| ApiError::BadRequest(format!("the form cannot be read: {e}")))?;
        let presented = fields.iter().find(|(k, _)| k == TOKEN_FIELD).map(|(_, v)| v.clone());
        let Some(presented) = presented else { return Err(forbidden("the form carries no token")) };
        let now = chrono::Utc::now().timestamp();
        if !verify(&signer.secret, parts.uri.path(), &presented, now) {
            return Err(forbidden("the form's token is not valid for this action, or has expired"));
        }
        fields.retain(|(k, _)| k != TOKEN_FIELD);
        crate::extract::refuse_nul(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())), "form field")?;
        Ok(ConsoleForm { fields, signer })
    }
}

#[cfg(test)]
mod tests {
    use super::{TOKEN_LIFETIME_SECS, token, verify};

    const NOW: i64 = 1_750_000_000;

    #[test]
    fn a_token_is_good_for_its_action_credential_and_time_only() {
        let t = token("admin-secret", "/admin/forms/redeliver/1", NOW);
        assert!(verify("admin-secret", "/admin/forms/redeliver/1", &t, NOW + 60));
        assert!(!verify("admin-secret", "/admin/forms/redeliver/2", &t, NOW), "another action");
        assert!(!verify("other-secret", "/admin/forms/redeliver/1", &t, NOW), "another credential");
        assert!(!verify("admin-secret", "/admin/forms/redeliver/1", &t, NOW + TOKEN_LIFETIME_SECS + 1));
        assert!(!verify("admin-secret", "/admin/forms/redeliver/1", &t, NOW - 3600), "issued in the future");
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let t = token("s", "/a", NOW);
        let forged_time = t.replacen(&NOW.to_string(), &(NOW + 1).to_string(), 1);
        for bad in ["", "v1", "v1.x.y", "v2.1.00", &forged_time, &t[..t.len() - 2]] {
            assert!(!verify("s", "/a", bad, NOW), "{bad}");
        }
    }
}

//! HTTP rules of every `/admin` route, applied in one place so a new admin
//! route cannot forget them:
//! - answers are never cached (`Cache-Control: no-store`: they carry
//!   payloads and audit data) and say they vary by `Accept` (the audit log
//!   is JSON or HTML by `Accept`);
//! - HTML cannot be framed by another site (`X-Frame-Options: DENY` and a
//!   Content-Security-Policy with `frame-ancestors 'none'`, unless the
//!   route set a stricter policy of its own);
//! - a write (PUT, POST, PATCH, DELETE) from a browser page of another
//!   origin is refused with 403, before the credentials are looked at (a
//!   browser sends its cached Basic credentials along with a cross-site
//!   request), and so is one whose `Sec-Fetch-Site` says another site
//!   made it. A write to the JSON API (every admin path outside
//!   `/admin/forms/`) must also be `application/json`, which neither an
//!   HTML form nor any other cross-site request a page can make without
//!   the receiver's consent sends: any other Content-Type
//!   (`application/x-www-form-urlencoded`, `multipart/form-data`,
//!   `text/plain`, …) is refused with 415 here, also where a browser sent
//!   no Origin, and so is a body-less write (`redeliver`, `enable`,
//!   `disable`) that names one. A write without any Content-Type is left to
//!   its route: a body-less one is what curl sends, and no form can omit
//!   the header (a script's `fetch` or `sendBeacon` that does is a
//!   cross-origin request, which carries an `Origin`); a route that takes a
//!   body still requires JSON (see [`crate::extract::JsonBody`]). The
//!   console's own forms post to `/admin/forms/` and carry a token (see
//!   [`crate::console::forms::token`]).

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The policy of admin HTML pages: no scripts, inline styles only, forms
/// back to edihub, never inside a frame.
pub const HTML_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

fn is_admin(path: &str) -> bool {
    path == "/admin" || path.starts_with("/admin/")
}

/// The middleware; installed on the whole router.
pub async fn guard(req: Request, next: Next) -> Response {
    if !is_admin(req.uri().path()) {
        return next.run(req).await;
    }
    let mut res = match check_write(req.method(), req.uri().path(), req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    };
    harden(res.headers_mut());
    res
}

fn check_write(method: &Method, path: &str, headers: &HeaderMap) -> Result<(), ApiError> {
    if method.is_safe() {
        return Ok(());
    }
    // Sent by every current browser: `same-origin` for the console's own
    // forms, `none` when the admin typed the address; curl sends nothing.
    let fetch_site = headers.get("sec-fetch-site").map(|v| v.to_str().unwrap_or("cross-site"));
    if fetch_site.is_some_and(|site| site != "same-origin" && site != "none") {
        return Err(ApiError::Forbidden(
            "admin changes are refused from a page of another site (the Sec-Fetch-Site header)".into(),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
        if !same_origin(origin.to_str().unwrap_or("null"), host) {
            return Err(ApiError::Forbidden(
                "admin changes are refused from a page of another origin (the Origin header)".into(),
            ));
        }
    }
    if path.starts_with("/admin/forms/") {
        // The console's forms: their token is checked by `ConsoleForm`.
        return Ok(());
    }
    match headers.get(header::CONTENT_TYPE) {
        None => Ok(()),
        Some(value) => {
            let media_type = value.to_str().unwrap_or("?").split(';').next().unwrap_or_default().trim();
            if media_type.eq_ignore_ascii_case("application/json") {
                return Ok(());
            }
            Err(ApiError::UnsupportedMediaType(format!(
                "admin changes are sent as Content-Type: application/json, or without a body and a Content-Type (got `{media_type}`); the console's forms post to /admin/forms/ with their token"
            )))
        }
    }
}

/// Whether `origin` (`scheme://host[:port]`) names the host the request was
/// sent to (`Host`), a default port written or not. `null` never matches.
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else { return false };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => ":80",
        "https" => ":443",
        _ => return false,
    };
    let strip = |a: &str| a.strip_suffix(default_port).unwrap_or(a).to_ascii_lowercase();
    !host.is_empty() && strip(authority) == strip(host)
}

fn harden(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.append(header::VARY, HeaderValue::from_static("accept"));
    let is_html = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.trim_start().to_ascii_lowercase().starts_with("text/html"));
    if is_html {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(HTML_POLICY));
        headers.entry(header::X_CONTENT_TYPE_OPTIONS).or_insert(HeaderValue::from_static("nosniff"));
    }
}

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn origins_match_their_own_host_only() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(same_origin("https://Hub.example", "hub.example:443"));
        assert!(same_origin("http://hub.example:80", "hub.example"));
        assert!(!same_origin("http://evil.example", "hub.example"));
        assert!(!same_origin("http://hub.example:8081", "hub.example:8080"));
        assert!(!same_origin("null", "hub.example"));
        assert!(!same_origin("http://hub.example", ""));
    }
}

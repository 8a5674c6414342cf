//! Extractors whose rejections are problem documents like every other error.
//!
//! axum's own `Path` answers a segment it cannot decode (`%ff` is not UTF-8)
//! with a plain-text 400; [`ApiPath`] gives the same refusal as
//! `application/problem+json` through [`ApiError`], and [`ApiQuery`] does the
//! same for a query string axum's `Query` cannot read. [`JsonBody`] is the
//! body of an admin change: `application/json` or 415.
//!
//! A NUL character (`%00`, `\u0000`) cannot be stored in a PostgreSQL text
//! column, and no identifier, filter or time edihub reads has one, so every
//! query parameter, path segment, JSON body member ([`nul_member`]) and
//! console form field with one is refused with 400 naming it, before it
//! reaches a handler: on both databases alike, and never as a 500.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// `Query<T>` with a problem+json rejection (400 naming the problem).
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        if let Ok(Query(pairs)) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri) {
            refuse_nul(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())), "query parameter")?;
        }
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(value)| ApiQuery(value))
            .map_err(|e| ApiError::BadRequest(format!("invalid query string: {e}")))
    }
}

/// `Path<T>` with a problem+json rejection.
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Ok(Path(segments)) = Path::<Vec<(String, String)>>::from_request_parts(parts, state).await {
            refuse_nul(segments.iter().map(|(k, v)| (k.as_str(), v.as_str())), "path segment")?;
        }
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => {
                Err(ApiError::BadRequest(format!("the URL path is not valid: {}", rejection.body_text())))
            }
        }
    }
}

/// 400 naming the first of `fields` (name, value) whose name or value holds
/// a NUL character; `what` says what a field is ("query parameter").
pub fn refuse_nul<'a>(
    fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    what: &str,
) -> Result<(), ApiError> {
    match fields.into_iter().find(|(k, v)| k.contains('\0') || v.contains('\0')) {
        None => Ok(()),
        Some((name, _)) => Err(ApiError::BadRequest(format!(
            "the {what} `{}` holds a NUL character (U+0000), which no value here may contain",
            name.replace('\0', "\\0")
        ))),
    }
}

/// The path (`destination`, `duplicate_key_fields[1]`) of the first member
/// of a JSON body whose name or string value holds a NUL character.
pub fn nul_member(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) => s.contains('\0').then(String::new),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, v)| nul_member(v).map(|rest| format!("[{i}]{rest}")))
        }
        Value::Object(members) => members.iter().find_map(|(k, v)| {
            let name = k.replace('\0', "\\0");
            if k.contains('\0') {
                return Some(format!(".{name}"));
            }
            nul_member(v).map(|rest| format!(".{name}{rest}"))
        }),
        _ => None,
    }
}

/// The raw body of a request that must be `application/json` (parameters
/// such as `charset` allowed); any other or no Content-Type is 415. Being the
/// body, it is extracted last: a request without credentials still gets 401.
#[derive(Debug, Clone)]
pub struct JsonBody(pub Bytes);

/// axum's default body limit, which admin bodies keep.
const ADMIN_BODY_LIMIT: usize = 2 * 1024 * 1024;

impl<S> FromRequest<S> for JsonBody
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let media_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::trim);
        if !media_type.is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
            return Err(ApiError::UnsupportedMediaType(format!(
                "send the body as Content-Type: application/json (got {})",
                media_type.map_or_else(|| "none".to_string(), |t| format!("`{t}`"))
            )));
        }
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(JsonBody(bytes)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::TooLarge(ADMIN_BODY_LIMIT))
            }
            Err(e) => Err(ApiError::BadRequest(format!("the body could not be read: {}", e.body_text()))),
        }
    }
}

//! Extractors whose rejections are problem documents like every other error.
//!
//! axum's own `Path` answers a segment it cannot decode (`%ff` is not UTF-8)
//! with a plain-text 400; [`ApiPath`] gives the same refusal as
//! `application/problem+json` through [`ApiError`], and [`ApiQuery`] does the
//! same for a query string axum's `Query` cannot read. [`JsonBody`] is the
//! body of an admin change: `application/json` or 415.

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
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => {
                Err(ApiError::BadRequest(format!("the URL path is not valid: {}", rejection.body_text())))
            }
        }
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

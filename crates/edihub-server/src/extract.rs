//! Extractors whose rejections are problem documents like every other error.
//!
//! axum's own `Path` answers a segment it cannot decode (`%ff` is not UTF-8)
//! with a plain-text 400; [`ApiPath`] gives the same refusal as
//! `application/problem+json` through [`ApiError`].

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

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

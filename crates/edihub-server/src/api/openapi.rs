//! `GET /openapi.json`: the OpenAPI 3.1 document of every route.

use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(openapi))
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::routes().1)
}

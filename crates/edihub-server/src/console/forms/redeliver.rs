//! The Redeliver form of the message page, `POST
//! /admin/forms/redeliver/{id}`: read through [`ConsoleForm`] (anti-forgery
//! token checked first, see [`super::token`]), it does exactly what the JSON
//! admin API's redeliver does (same store call, same audit), and answers
//! with a redirect back to the page (post/redirect/get).

use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::admin::messages::load;
use crate::api::doc::errors::{BadInput, FormForged, NotFound, Unauthenticated, Unavailable};
use crate::console::forms::token::ConsoleForm;
use crate::console::layout::url_encode;
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::state::AppState;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(redeliver))
}

/// The console's Redeliver button: a form with the token and, optionally, a
/// `destination` (absent or empty: every destination of the message).
#[utoipa::path(post, path = "/admin/forms/redeliver/{id}", tag = "console",
    params(("id" = uuid::Uuid, Path)),
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "`csrf` (the token the message page rendered) and optionally `destination`"),
    responses((status = 303, description = "Queued; back to the message page, which names the destinations queued"),
        BadInput, Unauthenticated, FormForged, NotFound, Unavailable),
    security(("basic" = [])))]
async fn redeliver(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    form: ConsoleForm,
) -> Result<Response, ApiError> {
    let message = load(&state, &id).await?;
    let destination = form.get("destination").filter(|d| !d.is_empty());
    let queued = state.store.redeliver(message.id, destination).await?;
    if queued.is_empty() {
        let to = destination.map(|d| format!(" to `{d}`")).unwrap_or_default();
        return Err(ApiError::NotFound(format!("message {} has no delivery{to}", message.id)));
    }
    // The page announces the destinations queued only with this signature
    // of the list (see `messages::show`).
    let (page, list) = (format!("/admin/messages/{}", message.id), queued.join(", "));
    let notice = form.signer.notice(&page, &list);
    let back = format!("{page}?redelivered={}&notice={}#deliveries", url_encode(&list), url_encode(&notice));
    Ok(Redirect::to(&back).into_response())
}

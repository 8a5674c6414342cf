//! `GET /api/edi-hub/messages`: the pull feed, for consumers behind a
//! firewall that cannot receive pushes.
//!
//! A consumer key reads its environment's messages oldest first, as the
//! envelopes a push destination receives, and keeps `next_cursor` for the
//! next call. Following the cursor yields every message once, in a stable
//! order, also when transactions commit out of order (the store's `feed`
//! module says why). `wait` turns an empty answer into a long poll
//! ([`signal::FeedSignal::page`]). A page ends at its byte budget and is
//! rendered under the memory budget concurrent reads share ([`render`](mod@render)); its
//! cursor is sealed ([`cursor`]).

pub mod cursor;
pub mod render;
pub mod signal;

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use edihub_store::{FeedPosition, FeedQuery, Scope};
use serde::Deserialize;

use crate::api::doc::FeedPage;
use crate::api::doc::errors::{BadInput, SenderKeyOnFeed, Unauthenticated, Unavailable};
use crate::auth::Consumer;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use cursor::{CursorError, CursorKey};
use render::{HeldBody, render};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Largest page.
pub const MAX_LIMIT: i64 = 500;
/// Page size when `limit` is absent.
pub const DEFAULT_LIMIT: i64 = 100;
/// Longest long poll, in seconds.
pub const MAX_WAIT_SECS: u64 = 30;

/// The routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(feed))
}

#[derive(Debug, Default, Deserialize)]
struct FeedParams {
    after: Option<String>,
    limit: Option<String>,
    message_type: Option<String>,
    wait: Option<String>,
}

/// The parameters, checked; each refusal names its parameter.
struct Checked {
    after: Option<FeedPosition>,
    limit: i64,
    message_type: Option<String>,
    wait: Duration,
}

impl FeedParams {
    fn check(self, key: &CursorKey, scope: &Scope) -> Result<Checked, ApiError> {
        let after = match self.after.filter(|s| !s.is_empty()) {
            None => None,
            Some(text) => Some(key.open(scope, &text).map_err(|e| {
                ApiError::BadRequest(match e {
                    CursorError::Malformed => {
                        "`after` is not a cursor this API returned; pass a previous answer's next_cursor"
                            .into()
                    }
                    CursorError::Foreign => "`after` is not a cursor of this environment's feed (or it was \
                        changed); pass a previous answer's next_cursor"
                        .into(),
                })
            })?),
        };
        let limit = match self.limit {
            None => DEFAULT_LIMIT,
            Some(s) => s.parse::<i64>().ok().filter(|n| (1..=MAX_LIMIT).contains(n)).ok_or_else(|| {
                ApiError::BadRequest(format!("`limit` must be a number from 1 to {MAX_LIMIT}"))
            })?,
        };
        let wait = match self.wait {
            None => 0,
            Some(s) => s.parse::<u64>().ok().filter(|n| *n <= MAX_WAIT_SECS).ok_or_else(|| {
                ApiError::BadRequest(format!("`wait` must be a number of seconds from 0 to {MAX_WAIT_SECS}"))
            })?,
        };
        let message_type = match self.message_type {
            Some(t) if t.is_empty() || t.len() > 100 => {
                return Err(ApiError::BadRequest("`message_type` must be 1–100 characters".into()));
            }
            other => other,
        };
        Ok(Checked { after, limit, message_type, wait: Duration::from_secs(wait) })
    }
}

/// The environment's messages after `after`, oldest first.
#[utoipa::path(get, path = "/api/edi-hub/messages", tag = "feed",
    params(
        ("after" = Option<String>, Query, description = "next_cursor of the previous answer (opaque; it belongs to its environment); absent: from the first message"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 500,
            description = "default 100; a page also ends early at feed.page_bytes of envelopes (its first message always comes)"),
        ("message_type" = Option<String>, Query,
            description = "only this message type; a read examines at most feed.scan_messages messages, so an empty page may carry a next_cursor that moved on"),
        ("wait" = Option<u64>, Query, minimum = 0, maximum = 30,
            description = "seconds to wait for a message when there is none yet (long poll); default 0")
    ),
    responses((status = 200, description = "Envelopes oldest first, and the cursor to continue from", body = FeedPage),
        BadInput, Unauthenticated, SenderKeyOnFeed, Unavailable),
    security(("bearer" = []), ("basic" = []))
)]
async fn feed(
    State(state): State<AppState>,
    Consumer(scope): Consumer,
    ApiQuery(params): ApiQuery<FeedParams>,
) -> Result<Response, ApiError> {
    let key = state.cursors.key(state.store.as_ref()).await?;
    let checked = params.check(key, &scope)?;
    let bounds = &state.config.feed;
    let query = FeedQuery {
        scope: &scope,
        after: checked.after,
        message_type: checked.message_type.as_deref(),
        limit: checked.limit,
        scan: bounds.scan_messages,
        max_body_bytes: u64::try_from(bounds.page_bytes).unwrap_or(u64::MAX),
    };
    let page = state.feed.page(state.store.as_ref(), &query, checked.wait).await?;
    let rendered = render(state.store.as_ref(), &state.render_budget, page, bounds.page_bytes).await?;
    let next_cursor = key.seal(&scope, rendered.next.unwrap_or(FeedPosition::START));
    // The members in the order they always had: the envelopes, then the
    // cursor (the envelopes are not copied again).
    let parts = vec![
        bytes::Bytes::from_static(b"{\"messages\":"),
        bytes::Bytes::from(rendered.envelopes),
        bytes::Bytes::from(format!(",\"next_cursor\":\"{next_cursor}\"}}")),
    ];
    let body = Body::new(HeldBody::new(parts, rendered.share));
    Ok(([(CONTENT_TYPE, "application/json")], body).into_response())
}

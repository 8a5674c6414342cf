//! The HTTP API that programs use: senders post messages ([`receive`]),
//! partners post webhooks ([`webhook`]) and AS2 messages ([`as2`]), consumers read the pull feed
//! ([`feed`]), admins and their scripts read and change the hub's rules and
//! records as JSON ([`admin`]), operators check health ([`health`]); and the
//! OpenAPI document of every route ([`doc`], served by [`openapi`]).
//!
//! Each module has its `router()` and its `#[utoipa::path]`s, so a route and
//! its documentation are written together. An admin resource that people
//! also read in a browser answers HTML from the console's page for it
//! (`crate::console::pages`), chosen by `Accept`.

pub mod admin;
pub mod as2;
pub mod doc;
pub mod feed;
pub mod health;
pub mod openapi;
pub mod receive;
pub mod webhook;

//! The console: the hub's HTML pages for people, under `/admin`.
//!
//! Server-rendered without JavaScript or external assets, so it works on an
//! air-gapped network under the admin CSP. [`layout`] is what every page
//! shares; [`pages`] are the pages (most are the HTML faces of the admin
//! API's resources, chosen by `Accept`); [`forms`] are the state-changing
//! forms and their anti-forgery tokens; [`activity_rollup`] keeps the
//! overview's hourly counts rolled up in the background.

pub mod activity_rollup;
pub mod forms;
pub mod layout;
pub mod pages;

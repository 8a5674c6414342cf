//! One module per resource, each with its own `router()`.

pub mod audit;
pub mod audit_page;
pub mod catalog;
pub mod health;
pub mod messages;
pub mod openapi;
pub mod receive;
pub mod webhook;

//! One module per resource, each with its own `router()`.

pub mod audit;
pub mod health;
pub mod receive;
pub mod webhook;

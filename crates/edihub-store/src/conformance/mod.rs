//! The conformance suite: what every [`crate::Store`] must do, run against
//! PostgreSQL and SQLite alike (see `tests/conformance.rs`).
//!
//! Each check takes a freshly migrated store and works in scopes of its own,
//! so checks never see each other's rows. Time is passed in explicitly
//! (`IngestRequest::now`), so window checks need no sleeping. What the
//! checks share (a fresh scope, a message, a key, an ingest at a given
//! time) is in `support.rs`; this file only names the parts.

mod ack_numbers;
mod admin;
mod as2;
mod audit;
mod audit_fault;
mod backlog;
mod batch;
mod console;
mod crossed;
mod feed;
mod ingest;
mod insert_lease;
mod line;
mod moved;
mod outbox;
mod packet;
mod partitions;
mod races;
mod rollup;
mod sap_status;
mod support;
mod verdict_fault;
mod verdict_plan;
mod verdicts;

pub use ack_numbers::*;
pub use admin::*;
pub use as2::*;
pub use audit::*;
pub use audit_fault::*;
pub use backlog::*;
pub use batch::*;
pub use console::*;
pub use crossed::*;
pub use feed::*;
pub use ingest::*;
pub use insert_lease::*;
pub use line::*;
pub use moved::*;
pub use outbox::*;
pub use packet::*;
pub use partitions::*;
pub use races::*;
pub use rollup::*;
pub use sap_status::*;
pub use support::{StoreRef, fresh_scope, ingest_at, key, message, now, outcome_id, processed};
pub use verdict_fault::*;
pub use verdict_plan::*;
pub use verdicts::*;

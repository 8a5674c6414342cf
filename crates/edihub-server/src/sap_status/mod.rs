//! Status back to SAP: an environment whose SAP system has `sap.status`
//! set tells that system what became of the IDocs it sent.
//!
//! - `record.rs`: after the ingest commits, an IDoc from the SAP system
//!   (SNDPRN its logical system) records 39, a re-sent one its message's
//!   current status again; the store records 41 and 40 itself with the
//!   delivery verdicts, or with the 39 when a verdict came first (see
//!   `edihub_store`'s `sap_status`).
//! - `refused.rs`: an IDoc from the SAP system that the hub refuses with a
//!   client error after reading its control record records 40 with the
//!   refusal's reason, about no message.
//! - `batcher.rs`: one task per such environment turns the pending
//!   changes into status IDocs (ALEAUD01 or SYSTAT01, core's writer) every
//!   `interval`, or as soon as `max_per_idoc` are pending, and stores each
//!   as a message of the environment, which the outbox delivers to its
//!   `sap-idoc-xml` destination like any message.
//!
//! Status IDocs never produce status themselves: they are sent by the hub,
//! not by the SAP system, and a status IDoc the SAP system sends to the hub
//! (logical message ALEAUD or STATUS) is left out too.

mod batcher;
mod record;
mod refused;
mod signal;

pub use batcher::{batch_once, run};
pub use record::{Candidates, candidates, record};
pub use refused::{refused, refused_messages};
pub use signal::StatusSignal;

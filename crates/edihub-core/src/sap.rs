//! What the hub writes for a SAP system: IDoc-XML for SAP's inbound HTTP
//! service, and status IDocs that tell the sender what became of its IDocs.
//!
//! SAP takes IDoc-XML over HTTP (the ICF service `/sap/bc/idoc_xml`, the
//! client in `sap-client`): a root element named after the IDoc type, one
//! `<IDOC BEGIN="1">` per IDoc (several make a packet), the control record
//! `<EDI_DC40 SEGMENT="1">` first, then each segment as an element with
//! `SEGMENT="1"` holding its fields as child elements and its child
//! segments nested, in the order of the IDoc type's definition. [`SapIdoc`]
//! is that tree, ordered; [`idoc_xml`] writes it. A [`SapProfile`] says who
//! is who: the SAP system (its logical system, port, partner type, client)
//! receives, the hub (its partner number, type and port as SAP knows it)
//! sends, so every control record the hub writes is addressed from it.
//!
//! An IDoc the hub received is rewritten for SAP with
//! [`SapIdoc::from_document`]: the control record is readdressed, the
//! segments keep their values, ordered by the IDoc type's description
//! (SAP's syntax check compares the order with the definition, and the
//! rendering, keyed by name, does not keep it). Status IDocs come from
//! [`status_idocs`]: ALEAUD01 (the ALE audit confirmation that SAP's
//! report RBDSTATE sends) or SYSTAT01 (the status message of EDI
//! subsystems), several confirmations per IDoc.
//!
//! Everything here is pure: the caller gives the timestamps and the IDoc
//! numbers, so a status IDoc built twice is built the same.

mod profile;
mod status;
mod tree;
mod write;

#[cfg(any(test, feature = "testing"))]
pub mod check;

pub use profile::{SapProfile, SapTimestamp};
pub use status::{MAX_CONFIRMATIONS, SapStatus, StatusChange, StatusIdocType, StatusText, status_idocs};
pub use tree::{SapIdoc, SapSegment};
pub use write::idoc_xml;

#[cfg(test)]
mod tests;

//! What the hub's server adds for EDIFACT and X12 interchanges, whose
//! parsing and splitting into messages are `edihub-core`'s: the
//! interchange's claim and the envelope in its answer ([`interchange`]), and
//! the acknowledgements a sender can ask for ([`acks`]).

pub mod acks;
pub mod interchange;

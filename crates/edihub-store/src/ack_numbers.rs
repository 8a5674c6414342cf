//! Acknowledgement control numbers: one counter per (tenant, environment,
//! partner) in the table `ack_counters`.
//!
//! A partner's EDI translator checks the control numbers of what it
//! receives for duplicates, acknowledgements included, so every
//! acknowledgement needs a number never handed out before to that partner,
//! whichever replica sends it and however often edihub restarts. The number
//! is taken with ONE statement (an upsert that returns the value it took),
//! so the database's row lock orders concurrent callers: no two get the same
//! number, and no transaction is held open around it. A number taken by a
//! request that then fails is skipped, never reused; gaps are allowed by the
//! standards, repeats are not.

//!
//! The statement is each backend's (`postgres/ack_numbers.rs`,
//! `sqlite/ack_numbers.rs`).

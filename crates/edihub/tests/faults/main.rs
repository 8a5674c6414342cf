//! Fault tests: the real `edihub` binary, real databases, on loopback,
//! broken for real (RELIABILITY.md has the results).
//!
//! Each test drives load from a sender that keeps a ledger of every request
//! and its answer, breaks something (the database, the process, the clients),
//! and then checks the database against the ledger: every message that got a
//! 2xx is stored exactly once under the id it was answered with, nothing is
//! half-stored, and no (tenant, environment, fingerprint) holds two messages
//! inside its window.
//!
//! - `f1_*`: PostgreSQL stopped hard (`pg_ctl stop -m immediate`) and started again.
//! - `f2_*`: edihub killed with SIGKILL under load and restarted (PostgreSQL).
//! - `f3_*`: two edihub processes on one PostgreSQL, the same documents sent to both at once.
//! - `f4_*`: SQLite: SIGKILL under load; the file opens cleanly afterwards.
//! - `f5_*`: slow and abusive clients.
//! - `f6_*`: graceful shutdown (SIGTERM) under load.
//! - `f7_*`: edihub killed with SIGKILL while deliveries are in flight.
//! - `f8_*`: two edihub processes on one PostgreSQL sharing the delivery queue.
//! - `f9_*`: four edihub processes behind PgBouncer (transaction mode), one SIGKILLed mid-load.
//! - `chaos_f10_*`: failover: the primary stopped hard, its synchronous standby promoted.
//! - `f11_*`: two pull-feed consumers reading large messages at once: peak memory stays bounded.
//! - `f12_*`: EDI segments of millions of values, refused within a memory bound.
//! - `f13_*`: huge EDI messages delivered as envelopes, the hub's peak memory bounded.
//!
//! - `secrets_in_logs`: no secret in the log or CLI output (security review).
//!
//! The CI-sized tests run in `make test` (about 45 s on 2 cores; they run one
//! at a time, see `support::serial`); F9 needs PgBouncer and runs in its
//! pooled phase (`EDIHUB_TEST_POOLER_URL`), skipping itself elsewhere. The heavier variants are `#[ignore]`d
//! and named `chaos_*` (`make chaos`, scaled by `EDIHUB_CHAOS_SCALE`). A test
//! that documents an open defect is named `defect_*` and `#[ignore]`d: it
//! asserts what edihub should do and fails until the fix lands (none is open
//! here at the moment; RELIABILITY.md, "Defects"). A run prints its seed;
//! `EDIHUB_FAULT_SEED=<n>` replays its order.

mod support;

mod f10_failover;
mod f11_feed_memory;
mod f12_edi_shapes;
mod f13_render_memory;
mod f1_pg_outage;
mod f2_kill;
mod f3_replicas;
mod f4_sqlite_kill;
mod f5_slow_clients;
mod f6_graceful;
mod f7_delivery_kill;
mod f8_delivery_replicas;
mod f9_pooled_replicas;
mod secrets_in_logs;

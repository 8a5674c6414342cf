//! The HTTP integration tests of `edihub-server`, as one test binary (one
//! link of the application and of `support`, instead of one per file).
//!
//! Each module is one area, and a filter picks it:
//! `cargo test -p edihub-server --test api receive_dedup::` runs the
//! ingest's dedup tests alone. Most tests run once per backend
//! (`<module>::sqlite::<name>` and `<module>::postgres::<name>`, see
//! [`backend_tests!`]); PostgreSQL comes from `EDIHUB_TEST_DATABASE_URL`.
//! `support` holds the harness: the typed test configuration, the
//! in-process app, the live server, raw HTTP, webhook signing and bursts.

#[macro_use]
mod support;

// The receive endpoint.
mod edi_acks;
mod edi_content;
mod edi_hostile;
mod edi_limits;
mod edi_refusals;
mod edi_window;
mod receive_auth_scope;
mod receive_bad_input;
mod receive_dedup;
mod receive_edi;
mod receive_fingerprint_scope;
mod receive_flat;
mod receive_idempotency;
mod receive_identifiers;
mod receive_nul;
mod receive_packets;
mod receive_races;

// AS2.
mod as2;

// Webhooks.
mod signature_audit_flood;
mod signature_schemes;
mod webhook_dedup;
mod webhook_races;
mod webhook_signatures;

// Admin API, console and operations.
mod admin_api;
mod admin_hardening;
mod audit_api;
mod browser;
mod browser_console;
mod console_edit;
mod console_forms;
mod console_pages;
mod delivery;
mod delivery_addresses;
mod delivery_admin;
mod delivery_bookkeeping;
mod delivery_credentials;
mod delivery_fifo;
mod delivery_handoff;
mod delivery_moved;
mod delivery_replicas;
mod delivery_sap;
mod feed;
mod metrics_ops;
mod openapi;
mod retention;
mod sap_status;

// Hostile senders and limits.
mod abuse_fields;
mod abuse_types;
mod bad_corpus;
mod body_budget;
mod connections_per_address;
mod error_hints;
mod nul_params;
mod security;
mod security_leaks;
mod security_scopes;
mod security_secrets;
mod unauthenticated_load;

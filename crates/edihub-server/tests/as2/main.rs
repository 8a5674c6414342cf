//! AS2 interop at the protocol level, with independent implementations as
//! the partner: pyas2lib (`pyas2_partner.py`) builds messages edihub opens
//! and reads the MDNs edihub answers with, and opens messages edihub builds
//! and answers them with MDNs edihub judges; the `openssl cms` command
//! verifies and decrypts what edihub signs and encrypts, and the reverse.
//!
//! Keys and certificates are generated here, at test time, into a
//! temporary directory.

mod openssl_cli;
mod pyas2;
mod send;
mod support;

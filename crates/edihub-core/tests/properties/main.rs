//! Property tests (proptest) for the promises dedup rests on:
//!
//! 1. **An IDoc is one message whatever its syntax.** Random IDoc trees
//!    (segments with fields, repeated segments, qualifier fields, attributes,
//!    text with XML-special and non-ASCII characters) are written as XML -
//!    random indentation, `ns0:`-style prefixes, an optional SOAP envelope,
//!    escapes, character references, CDATA and comments, UTF-8, ISO-8859-1 or
//!    UTF-16 - and as IDoc-JSON - random key order and whitespace, singletons
//!    as objects or one-element arrays. Both readings must give the same
//!    values at every generated path (and the values the model predicts), the
//!    same control record and type, and the same fingerprints.
//! 2. **Plain JSON content fingerprints ignore key order and whitespace**, and
//!    the way a string or number is spelled (`\u0041` = `A`, `1.0` = `1`).
//! 3. **Key values are encoded unambiguously**: splitting the same characters
//!    differently (`["ab","c"]` / `["a","bc"]`), within one field or across
//!    fields, never gives the same fingerprint.
//!
//! The default is 64 cases per property so `make test` stays fast; set
//! `PROPTEST_CASES` for a longer run. Regression seeds proptest finds are
//! kept in `proptest-regressions/` beside this file.
//!
//! `model` generates packets and knows the values at every path; `xml`
//! and `json` render them; one file per property, and `regressions` for
//! the cases the properties found.

use edihub_core::{
    Basis, BodyFormat, Document, FingerprintSpec, KeyPath, ParsedBody, fingerprint, parse_body,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{Value, json};

/// 64 cases unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    config
}

mod content;
mod encoding;
mod json;
mod model;
mod regressions;
mod same_message;
mod xml;

pub(crate) use content::*;
pub(crate) use encoding::*;
pub(crate) use json::*;
pub(crate) use model::*;
pub(crate) use same_message::*;
pub(crate) use xml::*;

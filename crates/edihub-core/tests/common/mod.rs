//! Shared helpers for the integration tests: fixture loading, parsing,
//! fingerprint specs and enumeration of every IDoc path in a document.
//!
//! Fixtures are read from the workspace's `fixtures/` directory through
//! `CARGO_MANIFEST_DIR`, so the tests run from any working directory.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeSet;
use std::path::PathBuf;

use edihub_core::{Document, Fingerprint, FingerprintSpec, KeyPath, ParsedBody, fingerprint, parse_body};
use serde_json::Value;

/// Absolute path of a file under `fixtures/idoc/`.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idoc").join(name)
}

/// The bytes of a file under `fixtures/idoc/`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Parses a fixture with the Content-Type its extension suggests.
pub fn parse_fixture(name: &str) -> ParsedBody {
    let content_type = if name.ends_with(".json") { "application/json" } else { "application/xml" };
    parse_body(&fixture(name), Some(content_type)).unwrap_or_else(|e| panic!("{name} does not parse: {e}"))
}

/// The only document of a single-IDoc fixture.
pub fn single(name: &str) -> Document {
    let mut body = parse_fixture(name);
    assert_eq!(body.documents.len(), 1, "{name} should hold one IDoc");
    body.documents.remove(0)
}

/// Parses key paths, panicking on a bad one.
pub fn paths(srcs: &[&str]) -> Vec<KeyPath> {
    srcs.iter().map(|s| KeyPath::parse(s).unwrap_or_else(|e| panic!("{e}"))).collect()
}

/// Fingerprint of a document with its own message type and the given fields.
pub fn fp(doc: &Document, keys: &[&str], exclude: &[&str]) -> Fingerprint {
    let message_type = doc.message_type(None, &|_| false).expect("message type");
    let key_fields = paths(keys);
    let exclude_fields = paths(exclude);
    let spec = FingerprintSpec {
        message_type: &message_type,
        key_fields: &key_fields,
        exclude_fields: &exclude_fields,
        scope: edihub_core::FingerprintScope::NONE,
    };
    fingerprint(doc, &spec)
}

/// Every IDoc path in a rendered IDoc: each segment and field by name, and
/// for segments with a `QUALF` (or `IDDAT`, `PARVW`) field the filtered form too.
pub fn all_idoc_paths(value: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect(value, "", &mut out);
    out
}

fn collect(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for item in items {
        let Some(members) = item.as_object() else {
            continue;
        };
        for (name, child) in members {
            if name.starts_with('@') {
                continue;
            }
            let path = join(prefix, name);
            out.insert(path.clone());
            collect(child, &path, out);
            for qualifier in ["QUALF", "IDDAT", "PARVW"] {
                for q in qualifiers(child, qualifier) {
                    let filtered = join(prefix, &format!("{name}[{qualifier}={q}]"));
                    out.insert(filtered.clone());
                    collect(child, &filtered, out);
                }
            }
        }
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
}

fn qualifiers(value: &Value, field: &str) -> Vec<String> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    items.iter().filter_map(|i| i.get(field)?.as_str().map(str::to_string)).collect()
}

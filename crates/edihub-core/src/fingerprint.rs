//! Fingerprints: the identity of a business message, for deduplication.
//!
//! A fingerprint is `hex(SHA-256(JCS(array)))` where JCS is RFC 8785
//! canonical JSON and the array starts with a version tag, the message type
//! and the logical message (`MESTYP`), then names its basis and carries the
//! inputs. Hashing a JSON *array* makes the encoding unambiguous by
//! construction (`["ab","c"]` and `["a","bc"]` serialise differently), and
//! canonical JSON makes selected objects independent of key order and
//! whitespace. `MESTYP` is always included so an order change (`ORDCHG`)
//! never collides with the order (`ORDERS`) it changes.
//!
//! The basis is chosen in order:
//! 1. **content** when the key fields are exactly `["$"]`: the whole
//!    document minus `exclude_fields` (removed from a clone);
//! 2. **key fields** when at least one configured path has a value (a
//!    missing path contributes `[]`, so presence is part of the identity);
//! 3. **docnum** otherwise, taken together with the client, sending port
//!    and sending partner because SAP numbers IDocs per system; leading zeros
//!    are stripped from a numeric DOCNUM (`0000000005220230` = `5220230`);
//!    An EDIFACT or X12 message uses its control numbers instead (see
//!    `edi_control_numbers`), still reported as basis `docnum`;
//! 4. **none**: nothing to identify the message by, so it is not deduplicated
//!    (a missing value must never make two messages equal).
//!
//! A message type may scope its fingerprints to the sender or receiver
//! (see `scope`): the parties its basis does not carry are appended.

mod canonical;
mod scope;

use canonical::Hashed;
use scope::Carried;
pub use scope::FingerprintScope;
use serde::Serialize;
use serde_json::Value;

use crate::document::Document;
use crate::edi::{EdiHeader, EdiSyntax};
use crate::eval;
use crate::path::KeyPath;

/// Version tag that starts every hashed array; bump it to change the scheme.
const VERSION: &str = "edihub-fp-1";

/// How a message type is deduplicated.
#[derive(Debug, Clone, Copy)]
pub struct FingerprintSpec<'a> {
    /// The message type the document was received as.
    pub message_type: &'a str,
    /// `duplicate_key_fields`, in order (`["$"]` means the whole content).
    pub key_fields: &'a [KeyPath],
    /// Fields removed before hashing the content (content mode only).
    pub exclude_fields: &'a [KeyPath],
    /// Parties the fingerprint is taken together with (`fingerprint_scope`).
    pub scope: FingerprintScope,
}

/// What a fingerprint was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The values at the configured key fields.
    KeyFields,
    /// The IDoc number with client, port and partner.
    Docnum,
    /// The whole canonical document minus excluded fields.
    Content,
    /// Nothing usable: the message is not deduplicated.
    None,
}

impl Basis {
    /// The name stored with a message and shown in responses (`key_fields`,
    /// `docnum`, `content`, `none`), the same as its serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::KeyFields => "key_fields",
            Basis::Docnum => "docnum",
            Basis::Content => "content",
            Basis::None => "none",
        }
    }
}

/// What one configured key path found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyValue {
    /// The path as configured.
    pub path: String,
    /// The values found, in document order (empty: missing).
    pub values: Vec<Value>,
}

/// A fingerprint and the inputs that explain it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fingerprint {
    /// 64 lowercase hex digits, or `None` when the message cannot be deduplicated.
    pub hex: Option<String>,
    /// What the fingerprint was computed from.
    pub basis: Basis,
    /// Every configured key path with what was found (for explanations).
    pub key_values: Vec<KeyValue>,
}

/// Computes the fingerprint of a document under a message type's rules.
pub fn fingerprint(doc: &Document, spec: &FingerprintSpec) -> Fingerprint {
    let mestyp = doc.mestyp().unwrap_or("");
    let head = |basis: &str| Hashed::new([VERSION, spec.message_type, mestyp, basis]);

    if let [only] = spec.key_fields
        && only.is_root()
    {
        let content = without(doc.value(), spec.exclude_fields);
        let mut hashed = head("content");
        hashed.value(&content);
        scope::append(&mut hashed, doc, spec.scope, Carried::NOTHING);
        let key_values = vec![KeyValue { path: only.to_string(), values: vec![content] }];
        return finish(hashed, Basis::Content, key_values);
    }

    let key_values: Vec<KeyValue> = spec
        .key_fields
        .iter()
        // `as_str`, not `to_string`: that goes through a `Formatter`.
        .map(|path| KeyValue { path: path.as_str().to_string(), values: doc.values(path) })
        .collect();
    if key_values.iter().any(|kv| !kv.values.is_empty()) {
        let mut hashed = head("fields");
        hashed.arrays(key_values.iter().map(|kv| kv.values.as_slice()));
        scope::append(&mut hashed, doc, spec.scope, Carried::NOTHING);
        return finish(hashed, Basis::KeyFields, key_values);
    }

    if let Some(header) = doc.edi_header() {
        return edi_control_numbers(header, key_values, head);
    }
    let Some(docnum) = doc.docnum() else {
        return Fingerprint { hex: None, basis: Basis::None, key_values };
    };
    let control = doc.control().cloned().unwrap_or_default();
    let mut hashed = head("docnum");
    for part in [control.mandt, control.sndpor, control.sndprn] {
        hashed.str(part.as_deref().unwrap_or_default());
    }
    hashed.str(normalize_docnum(docnum));
    scope::append(&mut hashed, doc, spec.scope, Carried::SENDER);
    finish(hashed, Basis::Docnum, key_values)
}

/// The fallback of an EDI message: the control numbers that make it unique
/// over time, scoped by sender and receiver.
///
/// X12 makes ST02 unique only within its group and GS06 within its
/// interchange; ISA13 is the number a sender keeps unique over time, so an
/// X12 transaction set is identified by ISA13 + GS06 + ST02. Its arrays
/// carry their own basis tag, `interchange_control_numbers`: a claim whose
/// array lacks ISA13 (tag `control_numbers`) is never matched by an X12
/// set. EDIFACT makes UNH 0062 unique within the interchange, so UNB 0020 +
/// UNH 0062 identify a message (UNG 0048 would add nothing), under the tag
/// `control_numbers`. An interchange that repeats one of these numbers
/// where it must be unique is refused when it is read, so no two messages
/// of one interchange share a fingerprint here.
fn edi_control_numbers(
    header: &EdiHeader,
    key_values: Vec<KeyValue>,
    head: impl Fn(&str) -> Hashed,
) -> Fingerprint {
    let ic = &header.interchange;
    let mut hashed = match ic.syntax {
        EdiSyntax::X12 => head("interchange_control_numbers"),
        EdiSyntax::Edifact => head("control_numbers"),
    };
    for party in [&ic.sender, &ic.receiver] {
        hashed.str(party.qualifier.as_deref().unwrap_or(""));
        hashed.str(&party.id);
    }
    hashed.str(&ic.control_number);
    if ic.syntax == EdiSyntax::X12 {
        hashed.str(header.group_control.as_deref().unwrap_or(""));
    }
    hashed.str(&header.control_number);
    finish(hashed, Basis::Docnum, key_values)
}

/// The fingerprint of the hashed array; none if it had no canonical form
/// (which cannot happen for a `serde_json::Value`).
fn finish(hashed: Hashed, basis: Basis, key_values: Vec<KeyValue>) -> Fingerprint {
    match hashed.finish() {
        Some(hex) => Fingerprint { hex: Some(hex), basis, key_values },
        None => Fingerprint { hex: None, basis: Basis::None, key_values },
    }
}

/// A numeric DOCNUM without leading zeros (all zeros give `"0"`); others unchanged.
fn normalize_docnum(docnum: &str) -> &str {
    if docnum.is_empty() || !docnum.bytes().all(|b| b.is_ascii_digit()) {
        return docnum;
    }
    match docnum.trim_start_matches('0') {
        "" => "0",
        rest => rest,
    }
}

/// A clone of `value` with everything selected by `exclude` removed.
fn without(value: &Value, exclude: &[KeyPath]) -> Value {
    let mut out = value.clone();
    for path in exclude {
        let locs = eval::locate(&out, path);
        eval::remove_all(&mut out, locs);
    }
    out
}

#[cfg(test)]
mod tests;

//! Fingerprint scope: whose identity a fingerprint is taken together with.
//!
//! Key fields identify a business document, but the same document may go
//! to several partners on purpose: one invoice sent to two receivers
//! (RCVPRN) is two messages, not a duplicate. A message type whose scope
//! names `receiver` (or `sender`) adds that party to its fingerprint, so
//! the same key fields from or to different parties never collide.
//!
//! A party is its qualifier and identifier: the partner type and number
//! of an IDoc (`SNDPRT`/`SNDPRN`, `RCVPRT`/`RCVPRN`), the interchange
//! sender or receiver of an EDIFACT or X12 message (UNB, ISA), and empty
//! for plain JSON, which names no parties.
//!
//! The scope adds only what a basis does not already carry: the DOCNUM
//! fallback is scoped by its sender already (SAP numbers IDocs per
//! system), and the EDI control-number fallback by both parties. An empty
//! scope adds nothing, so every fingerprint computed without one is
//! unchanged; a scoped array has one more element than an unscoped one of
//! the same basis, so the two can never be equal.

use serde_json::{Value, json};

use super::canonical::Hashed;
use crate::document::Document;

/// The parties a message type's fingerprint is scoped to
/// (`fingerprint_scope = ["sender", "receiver"]`); the default is none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FingerprintScope {
    /// The sending party is part of the identity.
    pub sender: bool,
    /// The receiving party is part of the identity.
    pub receiver: bool,
}

impl FingerprintScope {
    /// No party beyond what the basis carries: fingerprints as they are unscoped.
    pub const NONE: FingerprintScope = FingerprintScope { sender: false, receiver: false };

    /// Reads the configured names (`"sender"`, `"receiver"`, each at most
    /// once); the error names the value that is neither or is repeated.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<FingerprintScope, String> {
        let mut scope = FingerprintScope::NONE;
        for name in names {
            let slot = match name.as_ref() {
                "sender" => &mut scope.sender,
                "receiver" => &mut scope.receiver,
                other => return Err(format!("`{other}` is not a party: use \"sender\" or \"receiver\"")),
            };
            if *slot {
                return Err(format!("`{}` is named twice", name.as_ref()));
            }
            *slot = true;
        }
        Ok(scope)
    }

    /// Whether the scope adds any party at all.
    pub fn is_empty(self) -> bool {
        !self.sender && !self.receiver
    }
}

/// The parties a basis already hashes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Carried {
    pub sender: bool,
    pub receiver: bool,
}

impl Carried {
    /// Key fields and content carry no party.
    pub const NOTHING: Carried = Carried { sender: false, receiver: false };
    /// The DOCNUM fallback carries its sender.
    pub const SENDER: Carried = Carried { sender: true, receiver: false };
}

/// Appends `["scope", ["sender", qualifier, id]?, ["receiver", qualifier, id]?]`
/// for the parties of `scope` that `carried` lacks; nothing when none remain.
pub(super) fn append(hashed: &mut Hashed, doc: &Document, scope: FingerprintScope, carried: Carried) {
    let sender = scope.sender && !carried.sender;
    let receiver = scope.receiver && !carried.receiver;
    if !sender && !receiver {
        return;
    }
    let mut part = vec![json!("scope")];
    if sender {
        let (qualifier, id) = party(doc, Side::Sender);
        part.push(json!(["sender", qualifier, id]));
    }
    if receiver {
        let (qualifier, id) = party(doc, Side::Receiver);
        part.push(json!(["receiver", qualifier, id]));
    }
    hashed.value(&Value::Array(part));
}

#[derive(Clone, Copy)]
enum Side {
    Sender,
    Receiver,
}

/// A party's qualifier and identifier, empty where the document names none.
fn party(doc: &Document, side: Side) -> (&str, &str) {
    if let Some(header) = doc.edi_header() {
        let ic = &header.interchange;
        let p = match side {
            Side::Sender => &ic.sender,
            Side::Receiver => &ic.receiver,
        };
        return (p.qualifier.as_deref().unwrap_or(""), p.id.as_str());
    }
    let Some(c) = doc.control() else {
        return ("", "");
    };
    let (qualifier, id) = match side {
        Side::Sender => (&c.sndprt, &c.sndprn),
        Side::Receiver => (&c.rcvprt, &c.rcvprn),
    };
    (qualifier.as_deref().unwrap_or(""), id.as_deref().unwrap_or(""))
}

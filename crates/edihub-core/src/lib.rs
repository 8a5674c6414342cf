//! edihub-core: what a received message *is*, with no I/O.
//!
//! The hub stores every business message exactly once although SAP systems
//! and partners deliver at least once. Deciding that two deliveries are the
//! same message is pure computation on the bytes, so it lives here, apart
//! from HTTP and the database: the server, the CLI's `fingerprint` command
//! and the tests all call the same functions and cannot disagree.
//!
//! # Layout
//!
//! The pipeline, one module per stage (each `x.rs` with its parts in `x/`):
//!
//! 1. [`parse_body`] (`body`) picks XML, JSON, EDI or a flat-file IDoc from
//!    the Content-Type, or sniffs the start of the body when the type is
//!    generic, and refuses any other media type.
//! 2. `encoding` turns XML bytes into text (BOM, then the declared encoding,
//!    then the charset, else UTF-8), never replacing invalid bytes.
//! 3. `xml` reads the text straight into the JSON rendering of `render`
//!    (local names, no element tree in between), refusing DTDs, unknown
//!    entities, truncation, several roots and deep nesting.
//! 4. `json` reads JSON text into the same `serde_json::Value`, refusing an
//!    object with two members of one name (I-JSON) instead of keeping the
//!    last; `idoc` unwraps SOAP, splits packets into IDocs, requires exactly
//!    one control record with one value per field, tells IDoc JSON from
//!    plain JSON and takes out a top-level `idempotencyKey`.
//! 5. `render` defines the one JSON shape of every IDoc (segments as
//!    objects, repeats as arrays, attributes as `@NAME`), built by `xml` and
//!    normalised into from JSON, so an IDoc has the same values and
//!    fingerprint in both syntaxes.
//! 6. [`Document`] (`document`) answers the questions dedup asks: message
//!    type, logical message, IDoc number, values at a [`KeyPath`].
//! 7. [`KeyPath`] (`path`, `eval`) is an IDoc path (`E1EDK02[QUALF=001].BELNR`)
//!    or a JSONPath (`$.order.id`), parsed once and evaluated on the JSON.
//! 8. [`fingerprint`] (`fingerprint`) hashes the canonical JSON (RFC 8785)
//!    of a tagged array: key fields, else the whole content, else the IDoc
//!    number with its sender, else nothing; a message type may scope it to
//!    the sender or receiver ([`FingerprintScope`]).
//!
//! EDIFACT and X12 interchanges (`edi`) skip steps 2–5: the syntax
//! identifier or the ISA decides the encoding, the envelope is checked
//! (segment counts, control references) and each message becomes a
//! [`Document`] with its envelope ([`EdiHeader`]) for control numbers. Its
//! values are read in place from one copy of the interchange, which its
//! messages share with the range of their segments (`edi/segment`);
//! the rendering, an array of positional segments, is built only when
//! [`Document::value`] is asked for (JSONPath, content fingerprints,
//! deliveries), since receiving needs only the key fields. Each syntax
//! reads its separators in `edi/edifact` and `edi/x12` and walks its
//! envelope in `edi/edifact/walk` and `edi/x12/walk`; what both build (the
//! parties, envelopes, separators) is `edi/model`, a message as a document
//! holds it `edi/message`.
//!
//! Every reader returns a [`ParsedBody`] (`parsed`) of one [`BodyFormat`]
//! (`body_format`). Those, like `edi/model`, are leaves: the readers import
//! them and `body` dispatches to the readers, so no two stages import each
//! other in a circle (`scripts/import-cycles.py`, run by `make lint`, keeps
//! it so).
//!
//! SAP's flat-file IDocs (`idoc/flat`) skip steps 2–4 too: fixed-width
//! records are read into the same rendering as the XML form, their segment
//! data split into fields by an [`IdocDescription`] of the IDoc type (SAP's
//! WE60 parser format or JSON), so a flat file and its XML twin have equal
//! fingerprints.
//!
//! [`sap`] goes the other way: IDoc-XML the hub writes for a SAP system's
//! inbound HTTP service, addressed by a [`sap::SapProfile`], and the status
//! IDocs (ALEAUD01, SYSTAT01) that tell a sending SAP system what became of
//! its IDocs.
//!
//! Every failure is a [`CoreError`] whose message is meant for the sender
//! and whose [`ErrorClass`] maps to an HTTP status (400, 415 or 422).
//!
//! # Rules the crate keeps
//!
//! - **No I/O, no clocks, no randomness.** Every function is a pure function
//!   of its arguments, so a fingerprint computed by the CLI on a file equals
//!   the one the server computed on the request that carried it.
//! - **No panics on input.** Hostile bodies end in a [`CoreError`]; parsing
//!   never recurses on input depth beyond the limits below, so a
//!   100 000-level document cannot overflow a thread's stack.
//! - **Nothing is expanded or fetched.** A DTD is refused outright; only the
//!   five predefined XML entities and character references are resolved.
//! - **Nothing ambiguous is guessed at.** Two members of one name, two
//!   control records or a control-record field given twice are errors, as
//!   any choice between them could change a business key.
//! - **Nothing is silently altered.** Invalid bytes in the document's
//!   encoding are refused with their offset instead of being replaced,
//!   because a replaced character would change a business key.
//! - **One representation.** Every question is answered from the JSON
//!   rendering of the document, so XML and JSON cannot disagree.
//!
//! # Limits
//!
//! | What | Limit | Error |
//! |---|---|---|
//! | XML element nesting | 256 | [`CoreError::XmlTooDeep`] |
//! | JSON nesting (serde_json's recursion limit) | 128 | [`CoreError::JsonTooDeep`] |
//! | JSONPath bracket nesting (jsonpath-rust) | 128 | [`CoreError::InvalidKeyPath`] |
//!
//! The body size limit is the server's business (it sees the bytes first).
//!
//! # Fingerprint scheme
//!
//! `hex(SHA-256(JCS(["edihub-fp-1", type, mestyp, basis, …])))`; see
//! [`fingerprint`] for the exact arrays. The tag `edihub-fp-1` versions the
//! scheme: changing what is hashed means a new tag, never a silent change.
//!
//! ```
//! use edihub_core::{fingerprint, parse_body, Basis, FingerprintScope, FingerprintSpec, KeyPath};
//!
//! let xml = br#"<ORDERS05><IDOC BEGIN="1">
//!   <EDI_DC40 SEGMENT="1"><IDOCTYP>ORDERS05</IDOCTYP><MESTYP>ORDERS</MESTYP>
//!     <DOCNUM>0000000000004711</DOCNUM></EDI_DC40>
//!   <E1EDK01 SEGMENT="1"><BELNR>4500012345</BELNR></E1EDK01>
//! </IDOC></ORDERS05>"#;
//! let body = parse_body(xml, Some("application/xml")).unwrap();
//! let doc = &body.documents[0];
//! assert_eq!(doc.message_type(None, &|_| false).unwrap(), "ORDERS05");
//! assert_eq!(doc.docnum(), Some("0000000000004711"));
//!
//! let keys = [KeyPath::parse("E1EDK01.BELNR").unwrap()];
//! let spec = FingerprintSpec {
//!     message_type: "ORDERS05",
//!     key_fields: &keys,
//!     exclude_fields: &[],
//!     scope: FingerprintScope::NONE,
//! };
//! let fp = fingerprint(doc, &spec);
//! assert_eq!(fp.basis, Basis::KeyFields);
//! assert_eq!(fp.hex.unwrap().len(), 64);
//! assert_eq!(fp.key_values[0].values, vec![serde_json::json!("4500012345")]);
//! ```

mod body;
mod body_format;
mod document;
mod edi;
mod encoding;
mod error;
mod eval;
mod fingerprint;
mod idoc;
mod json;
mod parsed;
mod path;
mod render;
pub mod sap;
mod xml;

pub use body::{FLAT_IDOC_MEDIA, looks_like_message, parse_body, parse_body_with, parse_bytes_with, refusal};
pub use body_format::BodyFormat;
pub use document::{ControlRecord, Document, DocumentJson};
pub use edi::{
    AckKind, AckTime, EdiHeader, EdiSyntax, Envelope, Interchange, Party, Refusal, acknowledge,
    acknowledge_refusal,
};
pub use error::{CoreError, ErrorClass};
pub use fingerprint::{Basis, Fingerprint, FingerprintScope, FingerprintSpec, KeyValue, fingerprint};
pub use idoc::description::{FieldLayout, IdocDescription, IdocDescriptions, SegmentLayout};
pub use parsed::ParsedBody;
pub use path::{IdocPath, JsonPathQuery, KeyPath};

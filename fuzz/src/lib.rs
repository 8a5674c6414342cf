//! Checks shared by the fuzz targets (`fuzz_targets/*.rs`).
//!
//! Every target first requires that edihub-core never panics on its input,
//! then checks properties that must hold for *any* accepted input:
//!
//! - `idoc_xml`: an IDoc read from XML, written out as IDoc-JSON and read
//!   again, has the same rendered value, control record, message type and
//!   fingerprints (the XML ≡ JSON promise, on inputs nobody thought of);
//! - `idoc_json`: reading is idempotent (the rendering read again is itself),
//!   and plain JSON gets the same content fingerprint compact or pretty;
//! - `key_path`: a parsed path re-parses to itself, round-trips through serde,
//!   and evaluates on fixed documents without panicking;
//! - `fingerprint`: fingerprints are deterministic (twice on one parse, and
//!   across two parses of the same bytes) and well-formed.
//!
//! A failed assertion is a crash for libFuzzer, saved under `artifacts/`.

use edihub_core::{
    AckKind, AckTime, Basis, BodyFormat, CoreError, Document, EdiSyntax, Envelope, Fingerprint,
    FingerprintSpec, KeyPath, ParsedBody, Refusal, acknowledge, acknowledge_refusal, fingerprint, parse_body,
    refusal,
};
use serde_json::{Map, Value, json};

/// The reference IDoc, for evaluating fuzzed key paths.
pub const ORDERS05_XML: &[u8] = include_bytes!("../../fixtures/idoc/orders05.xml");

/// Key paths every parsed document is fingerprinted with.
const FIXED_KEYS: &[&[&str]] = &[
    &["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"],
    &[],
    &["$"],
    &["$..BELNR"],
    &["EDI_DC40.DOCNUM", "E1EDP01.E1EDP19[QUALF=002].IDTNR"],
];

/// Parses fixed key paths (they are valid by construction).
fn parse_paths(srcs: &[&str]) -> Vec<KeyPath> {
    srcs.iter().map(|s| KeyPath::parse(s).expect("fixed path parses")).collect()
}

/// Requires an error to be well-formed: a class and a non-empty message.
pub fn check_error(e: &CoreError) {
    let status = e.class().http_status();
    assert!(matches!(status, 400 | 415 | 422), "{e:?} maps to {status}");
    assert!(!e.to_string().is_empty(), "{e:?} has an empty message");
}

/// Up to `limit` IDoc paths to the leaves of a rendered value
/// (`A.B.C`, with a `[QUALF=…]` filter where the segment has one).
pub fn leaf_paths(value: &Value, limit: usize) -> Vec<String> {
    fn walk(prefix: &str, value: &Value, out: &mut Vec<String>, limit: usize) {
        let Value::Object(map) = value else { return };
        for (name, child) in map {
            if out.len() >= limit {
                return;
            }
            if name.is_empty() || name.contains(['.', '[', ']', '=']) || name.chars().any(char::is_whitespace)
            {
                continue;
            }
            let step = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
            let first = match child {
                Value::Array(items) => items.first().unwrap_or(&Value::Null),
                other => other,
            };
            match first {
                Value::Object(seg) => {
                    let qualifier = seg
                        .get("QUALF")
                        .and_then(Value::as_str)
                        .filter(|q| !q.is_empty() && !q.contains([']', '\'', '"']) && q.trim() == *q);
                    let step = match qualifier {
                        Some(q) => format!("{step}[QUALF={q}]"),
                        None => step,
                    };
                    walk(&step, first, out, limit);
                }
                _ => out.push(step),
            }
        }
    }
    let mut out = Vec::new();
    walk("", value, &mut out, limit);
    out
}

/// Fingerprints `doc` under every fixed spec and under its own leaf paths.
pub fn fingerprints(doc: &Document, message_type: &str) -> Vec<Fingerprint> {
    let mut specs: Vec<Vec<KeyPath>> = FIXED_KEYS.iter().map(|k| parse_paths(k)).collect();
    for path in leaf_paths(doc.value(), 4) {
        if let Ok(p) = KeyPath::parse(&path) {
            specs.push(vec![p]);
        }
    }
    let exclude = parse_paths(&["EDI_DC40.CRETIM", "$.sent"]);
    specs
        .iter()
        .map(|keys| {
            let spec = FingerprintSpec { message_type, key_fields: keys, exclude_fields: &exclude, scope: edihub_core::FingerprintScope::NONE };
            let fp = fingerprint(doc, &spec);
            check_fingerprint(&fp);
            fp
        })
        .collect()
}

/// A fingerprint is 64 lowercase hex digits exactly when its basis is not `None`.
pub fn check_fingerprint(fp: &Fingerprint) {
    match &fp.hex {
        Some(hex) => {
            assert_ne!(fp.basis, Basis::None, "{fp:?}");
            assert!(
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{fp:?}"
            );
        }
        None => assert_eq!(fp.basis, Basis::None, "{fp:?}"),
    }
}

/// The type used to fingerprint a document (plain JSON needs an explicit one).
fn type_of(doc: &Document) -> String {
    doc.message_type(None, &|_| false).unwrap_or_else(|_| "FUZZ".to_string())
}

/// Writes the IDocs of a parsed body as one IDoc-JSON text, or `None` when
/// JSON cannot express that body (a root element named `idempotencyKey`,
/// which JSON reads as the idempotency key member).
pub fn json_twin(parsed: &ParsedBody) -> Option<String> {
    let root = parsed.documents.first()?.root_name();
    let idocs: Vec<Value> = parsed.documents.iter().map(|d| d.value().clone()).collect();
    let idoc = if idocs.len() == 1 { idocs[0].clone() } else { Value::Array(idocs) };
    let body = match root {
        None => json!({ "IDOC": idoc }),
        Some("idempotencyKey") => return None,
        Some(name) => {
            let mut inner = Map::new();
            inner.insert("IDOC".into(), idoc);
            let mut outer = Map::new();
            outer.insert(name.to_string(), Value::Object(inner));
            Value::Object(outer)
        }
    };
    Some(body.to_string())
}

/// Requires two readings of the same IDocs to be indistinguishable.
pub fn assert_same_documents(a: &ParsedBody, b: &ParsedBody, what: &str) {
    assert_eq!(a.documents.len(), b.documents.len(), "{what}: document count");
    for (x, y) in a.documents.iter().zip(&b.documents) {
        assert_eq!(x.value(), y.value(), "{what}: rendered value");
        assert_eq!(x.control(), y.control(), "{what}: control record");
        assert_eq!(x.root_name(), y.root_name(), "{what}: root name");
        assert_eq!(x.docnum(), y.docnum(), "{what}: docnum");
        assert_eq!(x.message_type(None, &|_| false), y.message_type(None, &|_| false), "{what}: type");
        let t = type_of(x);
        assert_eq!(fingerprints(x, &t), fingerprints(y, &t), "{what}: fingerprints");
    }
}

/// Target `idoc_xml`: any bytes as `application/xml`.
pub fn check_xml(data: &[u8]) {
    let parsed = match parse_body(data, Some("application/xml")) {
        Ok(parsed) => parsed,
        Err(e) => return check_error(&e),
    };
    assert_eq!(parsed.format, BodyFormat::IdocXml);
    assert!(!parsed.documents.is_empty());
    assert!(parsed.idempotency_key.is_none());
    assert!(parsed.documents.iter().all(Document::is_idoc));
    let Some(twin) = json_twin(&parsed) else { return };
    let reread = parse_body(twin.as_bytes(), Some("application/json"))
        .unwrap_or_else(|e| panic!("the JSON twin {twin} is refused: {e}"));
    assert_eq!(reread.format, BodyFormat::IdocJson);
    assert_same_documents(&parsed, &reread, "XML vs its JSON twin");
}

/// Target `idoc_json`: any bytes as `application/json`.
pub fn check_json(data: &[u8]) {
    let parsed = match parse_body(data, Some("application/json")) {
        Ok(parsed) => parsed,
        Err(e) => return check_error(&e),
    };
    match parsed.format {
        BodyFormat::IdocJson => {
            assert!(!parsed.documents.is_empty());
            assert!(parsed.documents.iter().all(Document::is_idoc));
            let twin = json_twin(&parsed).expect("a JSON IDoc's root is never idempotencyKey");
            let reread = parse_body(twin.as_bytes(), Some("application/json"))
                .unwrap_or_else(|e| panic!("the rendering {twin} is refused: {e}"));
            assert_same_documents(&parsed, &reread, "IDoc JSON vs its rendering");
        }
        BodyFormat::PlainJson => {
            assert_eq!(parsed.documents.len(), 1);
            let doc = &parsed.documents[0];
            assert!(!doc.is_idoc());
            assert!(doc.value().get("idempotencyKey").is_none());
            for text in [doc.value().to_string(), serde_json::to_string_pretty(doc.value()).unwrap()] {
                let reread = parse_body(text.as_bytes(), Some("application/json"))
                    .unwrap_or_else(|e| panic!("the rendering {text} is refused: {e}"));
                assert_eq!(reread.format, BodyFormat::PlainJson);
                assert_same_documents(&parsed, &reread, "plain JSON vs its rendering");
            }
        }
        BodyFormat::IdocXml | BodyFormat::Edifact | BodyFormat::X12 | BodyFormat::IdocFlat => {
            panic!("JSON read as {}", parsed.format)
        }
    }
}

/// Positional key paths every EDI message is evaluated with.
const EDI_KEYS: &[&str] = &["BEG03", "REF[01=PO].02", "BGM.02", "RFF[01.01=ON].01.02", "NAD[01=BY].02.01"];

/// Target `edi`: the first byte picks the Content-Type (EDIFACT, X12,
/// sniffed), the rest is the body. An accepted interchange has at least one
/// message, each with its envelope, a type of its syntax, the interchange's
/// control number, a docnum equal to its control number, and deterministic
/// fingerprints under positional key paths, and no refusal; a refused one
/// whose header was read has acknowledgements of its refusal that parse back.
pub fn check_edi(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let content_type = match selector % 3 {
        0 => Some("application/EDIFACT"),
        1 => Some("application/EDI-X12"),
        _ => None,
    };
    let parsed = match parse_body(body, content_type) {
        Ok(parsed) => parsed,
        Err(e) => {
            check_error(&e);
            if let Some(refused) = refusal(body, content_type) {
                assert!(matches!(e.class().http_status(), 400 | 422), "{e:?} has a refusal");
                check_refusal_acknowledgements(&refused);
            }
            return;
        }
    };
    assert_eq!(refusal(body, content_type), None, "a sound interchange has no refusal");
    let Some(interchange) = &parsed.interchange else {
        assert!(content_type.is_none(), "{content_type:?} read as {}", parsed.format);
        return;
    };
    assert!(!parsed.documents.is_empty());
    let keys = parse_paths(EDI_KEYS);
    for doc in &parsed.documents {
        let header = doc.edi_header().expect("an interchange's documents have an envelope");
        assert_eq!(header.interchange.as_ref(), interchange);
        let t = type_of(doc);
        assert!(t.starts_with(interchange.syntax.as_str()), "{t}");
        assert_eq!(doc.docnum(), Some(header.control_number.as_str()));
        let spec = FingerprintSpec { message_type: &t, key_fields: &keys, exclude_fields: &[], scope: edihub_core::FingerprintScope::NONE };
        let fp = fingerprint(doc, &spec);
        check_fingerprint(&fp);
        assert_ne!(fp.basis, Basis::None, "an EDI message always has control numbers");
        assert_eq!(fp, fingerprint(doc, &spec));
    }
    check_acknowledgements(parsed.envelope.as_ref().expect("an interchange has its envelope"));
}

/// Every acknowledgement of an accepted interchange parses back: from its
/// receiver to its sender, one 997/999 per group (X12) or one CONTRL
/// (EDIFACT); a repeated interchange's TA1 is an envelope without
/// messages, its CONTRL one message.
fn check_acknowledgements(envelope: &Envelope) {
    let at = AckTime { year: 2026, month: 1, day: 2, hour: 3, minute: 4 };
    let ic = &envelope.interchange;
    let kinds: &[AckKind] = match ic.syntax {
        EdiSyntax::X12 => &[AckKind::X12Functional, AckKind::X12Implementation],
        EdiSyntax::Edifact => &[AckKind::Contrl],
    };
    for &kind in kinds {
        let bytes = acknowledge(envelope, kind, false, 7, at).expect("a kind of the interchange's syntax");
        let shown = String::from_utf8_lossy(&bytes).into_owned();
        let back =
            parse_body(&bytes, None).unwrap_or_else(|e| panic!("{kind:?} does not parse back: {e}\n{shown}"));
        let back_ic = back.interchange.expect("an interchange");
        assert_eq!((&back_ic.sender.id, &back_ic.receiver.id), (&ic.receiver.id, &ic.sender.id), "{shown}");
        let expected = if ic.syntax == EdiSyntax::X12 { envelope.group_count() } else { 1 };
        assert_eq!(back.documents.len(), expected, "{shown}");
        let repeated = acknowledge(envelope, kind, true, 8, at).expect("a kind of the interchange's syntax");
        match parse_body(&repeated, None) {
            Ok(back) => assert_eq!((ic.syntax, back.documents.len()), (EdiSyntax::Edifact, 1)),
            Err(e) => {
                assert!(ic.syntax == EdiSyntax::X12 && e.to_string().contains("holds no message"), "{e}")
            }
        }
    }
}

/// Every acknowledgement of a refused interchange parses back: a 997/999
/// with one set per group read, a TA1 alone (an envelope without
/// messages), or one CONTRL.
fn check_refusal_acknowledgements(refused: &Refusal) {
    let at = AckTime { year: 2026, month: 1, day: 2, hour: 3, minute: 4 };
    let kinds: &[AckKind] = match refused.syntax() {
        EdiSyntax::X12 => &[AckKind::X12Functional, AckKind::X12Implementation],
        EdiSyntax::Edifact => &[AckKind::Contrl],
    };
    for &kind in kinds {
        let bytes = acknowledge_refusal(refused, kind, 9, at).expect("a kind of the interchange's syntax");
        let shown = String::from_utf8_lossy(&bytes).into_owned();
        match parse_body(&bytes, None) {
            Ok(back) => {
                let expected = match refused.syntax() {
                    EdiSyntax::X12 => refused.envelope().group_count(),
                    EdiSyntax::Edifact => 1,
                };
                assert_eq!(back.documents.len(), expected, "{shown}");
            }
            Err(e) => assert!(
                refused.syntax() == EdiSyntax::X12 && e.to_string().contains("holds no message"),
                "{kind:?} of a refusal does not parse back: {e}\n{shown}"
            ),
        }
    }
}

/// Target `key_path`: any text as a key path, evaluated on fixed documents.
pub fn check_key_path(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let path = match KeyPath::parse(src) {
        Ok(path) => path,
        Err(e) => return check_error(&e),
    };
    assert_eq!(path.as_str(), src.trim());
    assert_eq!(KeyPath::parse(path.as_str()).as_ref(), Ok(&path), "re-parse of {src:?}");
    let serialized = serde_json::to_string(&path).expect("serialize");
    let back: KeyPath = serde_json::from_str(&serialized).expect("deserialize");
    assert_eq!(back, path);

    let idoc = parse_body(ORDERS05_XML, Some("application/xml")).expect("fixture parses");
    let plain = parse_body(
        br#"{"id":"a-1","order":{"id":7,"lines":[{"sku":"X","qty":1},{"sku":" Y ","qty":null}]},"tags":["a","",null]}"#,
        Some("application/json"),
    )
    .expect("plain parses");
    for doc in idoc.documents.iter().chain(&plain.documents) {
        let values = doc.values(&path);
        assert_eq!(values, doc.values(&path), "values are deterministic");
        for v in &values {
            assert!(!v.is_null(), "null is never a value");
            if let Some(s) = v.as_str() {
                assert!(!s.is_empty() && s.trim() == s, "values are trimmed and non-blank: {s:?}");
            }
        }
        let keys = [path.clone()];
        let spec = FingerprintSpec { message_type: "T", key_fields: &keys, exclude_fields: &[], scope: edihub_core::FingerprintScope::NONE };
        let fp = fingerprint(doc, &spec);
        check_fingerprint(&fp);
        assert_eq!(fp, fingerprint(doc, &spec));
        // As an exclusion in content mode, too (removal must not panic).
        let root = [KeyPath::parse("$").expect("root")];
        let spec = FingerprintSpec { message_type: "T", key_fields: &root, exclude_fields: &keys, scope: edihub_core::FingerprintScope::NONE };
        check_fingerprint(&fingerprint(doc, &spec));
    }
}

/// Target `fingerprint`: the first byte picks the Content-Type, the rest is the body.
pub fn check_fingerprint_determinism(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let content_type = match selector % 4 {
        0 => Some("application/xml"),
        1 => Some("application/json"),
        2 => Some("application/octet-stream"),
        _ => None,
    };
    let first = match parse_body(body, content_type) {
        Ok(parsed) => parsed,
        Err(e) => return check_error(&e),
    };
    let second = parse_body(body, content_type).expect("the same bytes parse twice");
    assert_eq!(first, second);
    for (a, b) in first.documents.iter().zip(&second.documents) {
        let t = type_of(a);
        let fa = fingerprints(a, &t);
        assert_eq!(fa, fingerprints(a, &t), "twice on one parse");
        assert_eq!(fa, fingerprints(b, &t), "across two parses");
        // Another type never shares a fingerprint.
        let other = fingerprints(a, &format!("{t}-other"));
        for (x, y) in fa.iter().zip(&other) {
            if x.hex.is_some() {
                assert_ne!(x.hex, y.hex, "the message type is part of every fingerprint");
            }
        }
    }
}

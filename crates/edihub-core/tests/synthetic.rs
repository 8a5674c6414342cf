//! The synthetic ORDERS05 fixtures (`fixtures/idoc/*.xml|json`): one IDoc in
//! six syntaxes and encodings must be one message, and the variants that are
//! different messages must get different fingerprints.

mod common;

use common::{all_idoc_paths, fixture, fp, paths, single};
use edihub_core::{Basis, BodyFormat, KeyPath, parse_body};
use serde_json::json;

const SAME_IDOC: &[&str] =
    &["orders05.xml", "orders05.json", "orders05-soap.xml", "orders05-latin1.xml", "orders05-utf16.xml"];

const KEYS: &[&str] = &["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"];

#[test]
fn the_reference_order_reads_as_documented() {
    let doc = single("orders05.xml");
    let c = doc.control().unwrap();
    assert_eq!(doc.message_type(None, &|_| false).unwrap(), "ORDERS05");
    assert_eq!(doc.mestyp(), Some("ORDERS"));
    assert_eq!(doc.docnum(), Some("0000000000004711"));
    assert_eq!(
        (c.sndpor.as_deref(), c.sndprn.as_deref(), c.mandt.as_deref()),
        (Some("SAPQ01"), Some("Q01CLNT100"), Some("100"))
    );
    let v = |p: &str| doc.values(&KeyPath::parse(p).unwrap());
    assert_eq!(v("E1EDK01.BELNR"), [json!("4500012345")]);
    assert_eq!(v("E1EDK02[QUALF=001].BELNR"), [json!("PO-77881")]);
    assert_eq!(v("E1EDP01.E1EDP19[QUALF=002].IDTNR"), [json!("MAT-100200"), json!("MAT-100300")]);
    assert_eq!(v("E1EDKA1.NAME1"), [json!("Müller GmbH")]);
    assert_eq!(v("E1EDP01.E1EDP19.KTEXT"), [json!("Schraube M6 & Mutter")]);
}

#[test]
fn every_syntax_and_encoding_gives_identical_values_for_every_path() {
    let reference = single("orders05.xml");
    let mut all = all_idoc_paths(reference.value());
    assert!(all.len() > 40, "only {} paths", all.len());
    all.extend(
        [
            "$",
            "$..IDTNR",
            "$.E1EDK02[?(@.QUALF=='001')].BELNR",
            "$.E1EDP01[*].E1EDP19",
            "$['@BEGIN']",
            "E1EDK01.@SEGMENT",
        ]
        .map(String::from),
    );
    let found = all.iter().filter(|p| !reference.values(&KeyPath::parse(p).unwrap()).is_empty()).count();
    assert!(found > 40, "only {found} paths have values");
    for name in &SAME_IDOC[1..] {
        let doc = single(name);
        assert_eq!(doc.control(), reference.control(), "{name}");
        assert_eq!(doc.root_name(), Some("ORDERS05"), "{name}");
        for path in &all {
            let path = KeyPath::parse(path).unwrap();
            assert_eq!(doc.values(&path), reference.values(&path), "{name}: {path}");
        }
        assert_eq!(doc.value(), reference.value(), "{name}");
    }
}

#[test]
fn every_syntax_and_encoding_gives_identical_fingerprints() {
    let reference = single("orders05.xml");
    for (keys, exclude) in [
        (KEYS, &[][..]),
        (&[][..], &[][..]),
        (&["$"][..], &["EDI_DC40.CRETIM"][..]),
        (&["E1EDP01.E1EDP19[QUALF=002]", "E1EDKA1"][..], &[][..]),
    ] {
        let expected = fp(&reference, keys, exclude);
        assert!(expected.hex.is_some());
        for name in &SAME_IDOC[1..] {
            assert_eq!(fp(&single(name), keys, exclude), expected, "{name} {keys:?}");
        }
    }
}

#[test]
fn formats_are_reported() {
    let json = parse_body(&fixture("orders05.json"), Some("application/json")).unwrap();
    assert_eq!(json.format, BodyFormat::IdocJson);
    // Sniffed without a Content-Type, too.
    for name in SAME_IDOC {
        let body = parse_body(&fixture(name), None).unwrap();
        assert_eq!(body.documents.len(), 1, "{name}");
    }
}

#[test]
fn json_key_order_and_whitespace_do_not_matter() {
    let text = String::from_utf8(fixture("orders05.json")).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let compact = serde_json::to_vec(&value).unwrap();
    let doc = parse_body(&compact, Some("application/json")).unwrap().documents.remove(0);
    let reference = single("orders05.json");
    assert_eq!(fp(&doc, &["$"], &[]).hex, fp(&reference, &["$"], &[]).hex);
    assert_eq!(fp(&doc, &["E1EDKA1"], &[]).hex, fp(&reference, &["E1EDKA1"], &[]).hex);
}

#[test]
fn a_reissued_order_is_caught_by_key_fields_but_not_by_docnum() {
    let original = single("orders05.xml");
    let reissued = single("orders05-reissued.xml");
    assert_eq!(reissued.docnum(), Some("0000000000004712"));
    let (a, b) = (fp(&original, KEYS, &[]), fp(&reissued, KEYS, &[]));
    assert_eq!(a.basis, Basis::KeyFields);
    assert_eq!(a.hex, b.hex);
    assert_eq!(a.key_values, b.key_values);
    assert_ne!(fp(&original, &[], &[]).hex, fp(&reissued, &[], &[]).hex);
    assert_ne!(fp(&original, &["$"], &[]).hex, fp(&reissued, &["$"], &[]).hex);
}

#[test]
fn an_order_change_never_collides_with_the_order() {
    let orders = single("orders05.xml");
    let ordchg = single("ordchg05.xml");
    assert_eq!(ordchg.mestyp(), Some("ORDCHG"));
    assert_eq!(ordchg.message_type(None, &|_| false).unwrap(), "ORDERS05");
    assert_eq!(orders.values(&paths(KEYS)[0]), ordchg.values(&paths(KEYS)[0]));
    assert_ne!(fp(&orders, KEYS, &[]).hex, fp(&ordchg, KEYS, &[]).hex);
    assert_ne!(fp(&orders, &[], &[]).hex, fp(&ordchg, &[], &[]).hex);
}

#[test]
fn the_same_docnum_from_another_system_is_another_message() {
    let ours = single("orders05.xml");
    let theirs = single("orders05-other-system.xml");
    assert_eq!(ours.docnum(), theirs.docnum());
    assert_eq!(theirs.control().unwrap().sndprn.as_deref(), Some("P01CLNT200"));
    let (a, b) = (fp(&ours, &[], &[]), fp(&theirs, &[], &[]));
    assert_eq!((a.basis, b.basis), (Basis::Docnum, Basis::Docnum));
    assert_ne!(a.hex, b.hex);
    assert_ne!(fp(&ours, KEYS, &[]).hex, fp(&theirs, KEYS, &[]).hex);
}

#[test]
fn a_packet_gives_three_distinct_messages_in_order() {
    let body = parse_body(&fixture("packet-3.xml"), Some("application/xml")).unwrap();
    assert_eq!(body.format, BodyFormat::IdocXml);
    let docnums: Vec<_> = body.documents.iter().map(|d| d.docnum().unwrap()).collect();
    assert_eq!(docnums, ["0000000000004801", "0000000000004802", "0000000000004803"]);
    let belnr = KeyPath::parse("E1EDK01.BELNR").unwrap();
    let belnrs: Vec<_> = body.documents.iter().flat_map(|d| d.values(&belnr)).collect();
    assert_eq!(belnrs, [json!("4500020001"), json!("4500020002"), json!("4500020003")]);
    let mut hexes: Vec<_> = body.documents.iter().map(|d| fp(d, KEYS, &[]).hex.unwrap()).collect();
    hexes.sort();
    hexes.dedup();
    assert_eq!(hexes.len(), 3);
    for doc in &body.documents {
        assert_eq!(doc.root_name(), Some("ORDERS05"));
        assert_eq!(doc.mestyp(), Some("ORDERS"));
    }
}

#[test]
fn a_json_packet_matches_the_xml_packet() {
    let xml = parse_body(&fixture("packet-3.xml"), None).unwrap();
    let idocs: Vec<_> = xml.documents.iter().map(|d| d.value().clone()).collect();
    let json_body = json!({"idempotencyKey": "packet-1", "ORDERS05": {"IDOC": idocs}});
    let parsed = parse_body(json_body.to_string().as_bytes(), None).unwrap();
    assert_eq!(parsed.format, BodyFormat::IdocJson);
    assert_eq!(parsed.idempotency_key.as_deref(), Some("packet-1"));
    assert_eq!(parsed.documents, xml.documents);
}

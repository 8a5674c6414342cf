//! Fingerprint bases, unambiguity, canonical form and the exact hashed bytes.

use serde_json::json;
use sha2::{Digest, Sha256};

use super::canonical::{exact_integers, write_canonical};
use super::*;

fn paths(srcs: &[&str]) -> Vec<KeyPath> {
    srcs.iter().map(|s| KeyPath::parse(s).unwrap()).collect()
}

fn idoc(dc40: Value, body: Value) -> Document {
    let mut idoc = body;
    idoc["EDI_DC40"] = dc40;
    Document::idoc(Some("ORDERS05".into()), idoc, crate::document::PacketPosition { index: 1, total: 1 })
        .unwrap()
}

fn order(mestyp: &str, docnum: &str, sndprn: &str, belnr: &str) -> Document {
    idoc(
        json!({"MESTYP": mestyp, "DOCNUM": docnum, "SNDPRN": sndprn, "SNDPOR": "SAPQ01", "MANDT": "100"}),
        json!({"E1EDK01": {"BELNR": belnr}}),
    )
}

fn fp(doc: &Document, keys: &[&str], exclude: &[&str]) -> Fingerprint {
    let key_fields = paths(keys);
    let exclude_fields = paths(exclude);
    let spec = FingerprintSpec {
        message_type: "ORDERS05",
        key_fields: &key_fields,
        exclude_fields: &exclude_fields,
        scope: FingerprintScope::NONE,
    };
    fingerprint(doc, &spec)
}

fn sha_of_canonical(v: Value) -> String {
    hex::encode(Sha256::digest(serde_json_canonicalizer::to_vec(&v).unwrap()))
}

#[test]
fn key_fields_hash_a_tagged_array() {
    let doc = order("ORDERS", "1", "Q01", " 4500012345 ");
    let f = fp(&doc, &["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"], &[]);
    assert_eq!(f.basis, Basis::KeyFields);
    let expected = json!(["edihub-fp-1", "ORDERS05", "ORDERS", "fields", [["4500012345"], []]]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
    assert_eq!(f.hex.as_ref().unwrap().len(), 64);
    assert!(f.hex.unwrap().bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(
        f.key_values,
        vec![
            KeyValue { path: "E1EDK01.BELNR".into(), values: vec![json!("4500012345")] },
            KeyValue { path: "E1EDK02[QUALF=001].BELNR".into(), values: vec![] },
        ]
    );
}

#[test]
fn the_encoding_is_unambiguous() {
    let doc = |a: &str, b: &str| idoc(json!({}), json!({"A": a, "B": b}));
    let ab_c = fp(&doc("ab", "c"), &["A", "B"], &[]);
    let a_bc = fp(&doc("a", "bc"), &["A", "B"], &[]);
    assert_ne!(ab_c.hex, a_bc.hex);
    // Two values at one path differ from one value at each of two paths.
    let two_in_one = idoc(json!({}), json!({"A": ["x", "y"]}));
    let one_each = idoc(json!({}), json!({"A": "x", "B": "y"}));
    assert_ne!(fp(&two_in_one, &["A", "B"], &[]).hex, fp(&one_each, &["A", "B"], &[]).hex);
}

#[test]
fn values_are_trimmed_before_hashing() {
    let a = order("ORDERS", "1", "Q01", "4711");
    let b = order("ORDERS", "2", "Q02", "  4711\n");
    assert_eq!(fp(&a, &["E1EDK01.BELNR"], &[]).hex, fp(&b, &["E1EDK01.BELNR"], &[]).hex);
}

#[test]
fn the_logical_message_and_type_are_part_of_every_fingerprint() {
    let orders = order("ORDERS", "1", "Q01", "4711");
    let ordchg = order("ORDCHG", "1", "Q01", "4711");
    assert_ne!(fp(&orders, &["E1EDK01.BELNR"], &[]).hex, fp(&ordchg, &["E1EDK01.BELNR"], &[]).hex);
    assert_ne!(fp(&orders, &[], &[]).hex, fp(&ordchg, &[], &[]).hex);
    let spec = FingerprintSpec {
        message_type: "OTHER",
        key_fields: &[],
        exclude_fields: &[],
        scope: FingerprintScope::NONE,
    };
    assert_ne!(fingerprint(&orders, &spec).hex, fp(&orders, &[], &[]).hex);
}

#[test]
fn segment_values_are_canonical_regardless_of_key_order() {
    let a = Document::plain(serde_json::from_str(r#"{"seg":{"B":"2","A":{"y":1,"x":[1,2]}}}"#).unwrap());
    let b =
        Document::plain(serde_json::from_str(r#"{ "seg" : { "A":{"x":[1,2],"y":1}, "B":"2" } }"#).unwrap());
    for keys in [&["seg"][..], &["$.seg"][..]] {
        let fa = fp(&a, keys, &[]);
        assert_eq!(fa.basis, Basis::KeyFields);
        assert_eq!(fa.hex, fp(&b, keys, &[]).hex);
    }
}

#[test]
fn docnum_fallback_includes_the_sender_and_strips_zeros() {
    let a = order("ORDRSP", "0000000005220230", "HE4CLNT400", "x");
    let f = fp(&a, &[], &[]);
    assert_eq!(f.basis, Basis::Docnum);
    assert!(f.key_values.is_empty());
    let expected =
        json!(["edihub-fp-1", "ORDERS05", "ORDRSP", "docnum", "100", "SAPQ01", "HE4CLNT400", "5220230"]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
    let unpadded = order("ORDRSP", "5220230", "HE4CLNT400", "y");
    assert_eq!(fp(&unpadded, &[], &[]).hex, f.hex);
    let other_sender = order("ORDRSP", "5220230", "P01CLNT200", "x");
    assert_ne!(fp(&other_sender, &[], &[]).hex, f.hex);
}

#[test]
fn docnum_normalisation() {
    assert_eq!(normalize_docnum("0000000000004711"), "4711");
    assert_eq!(normalize_docnum("0000"), "0");
    assert_eq!(normalize_docnum("0"), "0");
    assert_eq!(normalize_docnum("Avon"), "Avon");
    assert_eq!(normalize_docnum("00AB"), "00AB");
}

#[test]
fn missing_key_fields_fall_back_to_docnum() {
    let doc = order("ORDERS", "42", "Q01", "  ");
    let f = fp(&doc, &["E1EDK01.BELNR", "NOPE"], &[]);
    assert_eq!(f.basis, Basis::Docnum);
    assert_eq!(f.hex, fp(&doc, &[], &[]).hex);
    assert_eq!(f.key_values.len(), 2);
    assert!(f.key_values.iter().all(|kv| kv.values.is_empty()));
}

#[test]
fn nothing_to_identify_gives_no_fingerprint() {
    let doc = idoc(json!({"MESTYP": "LOIWCS"}), json!({}));
    let f = fp(&doc, &[], &[]);
    assert_eq!((f.hex, f.basis), (None, Basis::None));
    let plain = Document::plain(json!({"a": ""}));
    let f = fp(&plain, &["$.a"], &[]);
    assert_eq!((f.hex.clone(), f.basis), (None, Basis::None));
    assert_eq!(f.key_values, vec![KeyValue { path: "$.a".into(), values: vec![] }]);
}

#[test]
fn plain_json_docnum_fallback_uses_empty_sender_parts() {
    let doc = Document::plain(json!({"docnum": "007"}));
    let f = fp(&doc, &[], &[]);
    let expected = json!(["edihub-fp-1", "ORDERS05", "", "docnum", "", "", "", "7"]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
}

#[test]
fn content_mode_hashes_the_document_minus_exclusions() {
    let a = Document::plain(json!({"itemId": 1, "sent": "t1", "attempts": 1, "meta": [{"at": 1, "k": "v"}]}));
    let b = Document::plain(json!({"itemId": 1, "sent": "t2", "attempts": 3, "meta": [{"at": 2, "k": "v"}]}));
    let exclude = ["$.sent", "attempts", "$.meta[*].at"];
    let fa = fp(&a, &["$"], &exclude);
    assert_eq!(fa.basis, Basis::Content);
    assert_eq!(fa.hex, fp(&b, &["$"], &exclude).hex);
    let stripped = json!({"itemId": 1, "meta": [{"k": "v"}]});
    assert_eq!(fa.key_values, vec![KeyValue { path: "$".into(), values: vec![stripped.clone()] }]);
    let expected = json!(["edihub-fp-1", "ORDERS05", "", "content", stripped]);
    assert_eq!(fa.hex, Some(sha_of_canonical(expected)));
    // Without the exclusions they differ; the original is untouched.
    assert_ne!(fp(&a, &["$"], &[]).hex, fp(&b, &["$"], &[]).hex);
    assert_eq!(a.value()["sent"], json!("t1"));
}

#[test]
fn content_mode_on_an_idoc_uses_its_rendering() {
    let a = order("ORDERS", "1", "Q01", "4711");
    let b = order("ORDERS", "2", "Q01", "4711");
    assert_ne!(fp(&a, &["$"], &[]).hex, fp(&b, &["$"], &[]).hex);
    assert_eq!(fp(&a, &["$"], &["EDI_DC40.DOCNUM"]).hex, fp(&b, &["$"], &["$.EDI_DC40.DOCNUM"]).hex);
}

#[test]
fn dollar_among_other_fields_is_not_content_mode() {
    let doc = Document::plain(json!({"a": 1}));
    let f = fp(&doc, &["$", "$.a"], &[]);
    assert_eq!(f.basis, Basis::KeyFields);
    assert_eq!(f.key_values[0].values, vec![json!({"a": 1})]);
}

#[test]
fn serialisation_shape() {
    let f = fp(&order("ORDERS", "1", "Q01", "4711"), &["E1EDK01.BELNR"], &[]);
    let v = serde_json::to_value(&f).unwrap();
    assert_eq!(v["basis"], json!("key_fields"));
    assert_eq!(v["key_values"][0], json!({"path": "E1EDK01.BELNR", "values": ["4711"]}));
    let names: Vec<Value> = [Basis::KeyFields, Basis::Docnum, Basis::Content, Basis::None]
        .iter()
        .map(|b| serde_json::to_value(b).unwrap())
        .collect();
    assert_eq!(names, [json!("key_fields"), json!("docnum"), json!("content"), json!("none")]);
}

#[test]
fn basis_names_equal_their_serde_form() {
    for basis in [Basis::KeyFields, Basis::Docnum, Basis::Content, Basis::None] {
        assert_eq!(serde_json::to_value(basis).unwrap(), serde_json::json!(basis.as_str()));
    }
}

/// Any JSON value: strings of any characters (controls, quotes, `/`,
/// non-ASCII), integers past 2^53, floats, nested arrays and objects.
fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "(?s).{0,12}".prop_map(Value::from),
        proptest::sample::select(vec!["\u{0}\u{1f}\u{7f}", "\"\\/", "\u{2028}é€😀", ""])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("(?s).{0,4}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    /// The canonical writer writes what the canonicalizer writes for the
    /// value with its large integers as text, so fingerprints are unchanged.
    #[test]
    fn canonical_writer_matches_the_canonicalizer(v in any_json()) {
        let mut ours = Vec::new();
        write_canonical(&v, &mut ours).unwrap();
        let theirs = serde_json_canonicalizer::to_vec(&exact_integers(&v)).unwrap();
        proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(theirs).unwrap());
    }
}

/// The control-number fallback of EDI messages: X12 hashes ISA13 with GS06
/// and ST02 (a set re-sent under a new ISA13 is a new set), EDIFACT UNB
/// 0020 with UNH 0062; both scoped by sender and receiver.
#[test]
fn edi_control_numbers_include_the_interchange() {
    let x12 = |isa13: &str, beg: &str| {
        format!(
            "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*^*00501*{isa13}*0*P*:~\
             GS*HB*S*R*20240101*1200*77*X*005010X279A1~ST*271*0001*005010X279A1~BHT*0022*11*{beg}*20240101~\
             SE*3*0001~GE*1*77~IEA*1*{isa13}~"
        )
    };
    let spec = FingerprintSpec {
        message_type: "X12.271",
        key_fields: &[],
        exclude_fields: &[],
        scope: FingerprintScope::NONE,
    };
    let of = |body: String| {
        let doc = crate::parse_body(body.as_bytes(), None).unwrap().documents.remove(0);
        fingerprint(&doc, &spec)
    };
    let first = of(x12("000000001", "A"));
    assert_eq!(first.basis, Basis::Docnum);
    let expected = json!([
        "edihub-fp-1",
        "X12.271",
        "",
        "interchange_control_numbers",
        "ZZ",
        "SENDER",
        "ZZ",
        "RECEIVER",
        "000000001",
        "77",
        "0001"
    ]);
    assert_eq!(first.hex, Some(sha_of_canonical(expected)));
    // Other content under a new ISA13 is another set; the same ISA13 is the same set.
    assert_ne!(of(x12("000000002", "B")).hex, first.hex);
    assert_eq!(of(x12("000000001", "A")).hex, first.hex);

    let edifact = "UNB+UNOC:3+SENDER:14+RECEIVER:14+240101:1200+IC1'UNG+ORDERS+S+R+240101:1200+G1+UN+D:96A'\
                   UNH+M1+ORDERS:D:96A:UN'BGM+220+A'UNT+3+M1'UNE+1+G1'UNZ+1+IC1'";
    let doc = crate::parse_body(edifact.as_bytes(), None).unwrap().documents.remove(0);
    let spec = FingerprintSpec {
        message_type: "EDIFACT.ORDERS",
        key_fields: &[],
        exclude_fields: &[],
        scope: FingerprintScope::NONE,
    };
    let expected = json!([
        "edihub-fp-1",
        "EDIFACT.ORDERS",
        "",
        "control_numbers",
        "14",
        "SENDER",
        "14",
        "RECEIVER",
        "IC1",
        "M1"
    ]);
    assert_eq!(fingerprint(&doc, &spec).hex, Some(sha_of_canonical(expected)));
}

/// The same invoice (same BELNR, DOCNUM, sender) addressed to `rcvprn`.
fn invoice_to(rcvprn: &str) -> Document {
    idoc(
        json!({"MESTYP": "INVOIC", "DOCNUM": "91109869", "SNDPRN": "Q01CLNT100", "SNDPRT": "LS",
               "SNDPOR": "SAPQ01", "MANDT": "100", "RCVPRN": rcvprn, "RCVPRT": "KU"}),
        json!({"E1EDK01": {"BELNR": "0123456789"}}),
    )
}

fn scoped(doc: &Document, keys: &[&str], scope: FingerprintScope) -> Fingerprint {
    let key_fields = paths(keys);
    let spec =
        FingerprintSpec { message_type: "INVOIC02", key_fields: &key_fields, exclude_fields: &[], scope };
    fingerprint(doc, &spec)
}

const RECEIVER: FingerprintScope = FingerprintScope { sender: false, receiver: true };
const BOTH: FingerprintScope = FingerprintScope { sender: true, receiver: true };

#[test]
fn a_receiver_scope_tells_one_invoice_to_two_partners_apart() {
    let (a, b) = (invoice_to("PARTNER_A"), invoice_to("PARTNER_B"));
    for keys in [&["E1EDK01.BELNR"][..], &["$"][..], &[][..]] {
        let unscoped = (scoped(&a, keys, FingerprintScope::NONE), scoped(&b, keys, FingerprintScope::NONE));
        let by_receiver = (scoped(&a, keys, RECEIVER), scoped(&b, keys, RECEIVER));
        assert_ne!(by_receiver.0.hex, by_receiver.1.hex, "{keys:?}");
        assert_eq!(by_receiver.0.basis, unscoped.0.basis, "{keys:?}");
        if keys == ["E1EDK01.BELNR"] {
            // Unscoped, key fields ignore the receiver: one message.
            assert_eq!(unscoped.0.hex, unscoped.1.hex);
        }
        // The same partner twice is still one message when scoped.
        assert_eq!(by_receiver.0.hex, scoped(&invoice_to("PARTNER_A"), keys, RECEIVER).hex);
    }
}

#[test]
fn scoped_arrays_append_the_parties() {
    let doc = invoice_to("PARTNER_A");
    let f = scoped(&doc, &["E1EDK01.BELNR"], BOTH);
    let expected = json!([
        "edihub-fp-1",
        "INVOIC02",
        "INVOIC",
        "fields",
        [["0123456789"]],
        ["scope", ["sender", "LS", "Q01CLNT100"], ["receiver", "KU", "PARTNER_A"]]
    ]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
    // The DOCNUM fallback carries its sender already: only the receiver is added.
    let f = scoped(&doc, &[], BOTH);
    let expected = json!([
        "edihub-fp-1",
        "INVOIC02",
        "INVOIC",
        "docnum",
        "100",
        "SAPQ01",
        "Q01CLNT100",
        "91109869",
        ["scope", ["receiver", "KU", "PARTNER_A"]]
    ]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
    let sender_only = FingerprintScope { sender: true, receiver: false };
    assert_eq!(scoped(&doc, &[], sender_only).hex, scoped(&doc, &[], FingerprintScope::NONE).hex);
}

#[test]
fn an_empty_scope_changes_no_fingerprint() {
    let doc = invoice_to("PARTNER_A");
    let unscoped = fp(&doc, &["E1EDK01.BELNR"], &[]);
    let expected = json!(["edihub-fp-1", "ORDERS05", "INVOIC", "fields", [["0123456789"]]]);
    assert_eq!(unscoped.hex, Some(sha_of_canonical(expected)));
    assert!(FingerprintScope::default().is_empty());
    assert_eq!(FingerprintScope::default(), FingerprintScope::NONE);
}

/// An EDIFACT interchange from `SENDER` to `receiver` holding one ORDERS with BGM `order`.
fn edifact_to(receiver: &str, order: &str) -> Document {
    let text = format!(
        "UNB+UNOC:3+SENDER:14+{receiver}:14+240101:1200+IC1'UNH+M1+ORDERS:D:96A:UN'BGM+220+{order}+9'UNT+3+M1'UNZ+1+IC1'"
    );
    let mut body = crate::parse_body(text.as_bytes(), Some("application/EDIFACT")).unwrap();
    body.documents.remove(0)
}

#[test]
fn edi_messages_are_scoped_by_their_interchange_parties() {
    let (a, b) = (edifact_to("BUYER_A", "PO1"), edifact_to("BUYER_B", "PO1"));
    let unscoped =
        (scoped(&a, &["BGM.02"], FingerprintScope::NONE), scoped(&b, &["BGM.02"], FingerprintScope::NONE));
    assert_eq!(unscoped.0.hex, unscoped.1.hex);
    assert_ne!(scoped(&a, &["BGM.02"], RECEIVER).hex, scoped(&b, &["BGM.02"], RECEIVER).hex);
    let f = scoped(&a, &["BGM.02"], RECEIVER);
    let expected =
        json!(["edihub-fp-1", "INVOIC02", "", "fields", [["PO1"]], ["scope", ["receiver", "14", "BUYER_A"]]]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
    // The control-number fallback carries both parties: a scope adds nothing.
    assert_eq!(scoped(&a, &[], BOTH).hex, scoped(&a, &[], FingerprintScope::NONE).hex);
}

#[test]
fn plain_json_has_empty_parties() {
    let doc = Document::plain(json!({"id": "7"}));
    let f = scoped(&doc, &["$.id"], RECEIVER);
    let expected = json!(["edihub-fp-1", "INVOIC02", "", "fields", [["7"]], ["scope", ["receiver", "", ""]]]);
    assert_eq!(f.hex, Some(sha_of_canonical(expected)));
}

#[test]
fn scope_names_are_read_strictly() {
    assert_eq!(FingerprintScope::parse(&["receiver"]), Ok(RECEIVER));
    assert_eq!(FingerprintScope::parse(&["sender", "receiver"]), Ok(BOTH));
    assert_eq!(FingerprintScope::parse::<&str>(&[]), Ok(FingerprintScope::NONE));
    assert_eq!(
        FingerprintScope::parse(&["recipient"]),
        Err("`recipient` is not a party: use \"sender\" or \"receiver\"".to_string())
    );
    assert_eq!(FingerprintScope::parse(&["sender", "sender"]), Err("`sender` is named twice".to_string()));
}

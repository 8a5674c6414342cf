//! The real EDIFACT and X12 interchanges in `fixtures/edifact/real/`: how
//! each splits into messages, with types, versions, control numbers and key
//! values (facts from `fixtures/edifact/real/SOURCES.md` and the files).

use std::path::PathBuf;

use edihub_core::{
    Basis, BodyFormat, Document, ErrorClass, FingerprintSpec, KeyPath, ParsedBody, fingerprint, parse_body,
};
use serde_json::{Value, json};

fn read(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edifact/real").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn parse(bytes: &[u8], name: &str) -> ParsedBody {
    // Generic type: the interchange is sniffed from UNA/UNB/ISA.
    parse_body(bytes, Some("application/octet-stream")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One expected message: type, version, control number, group, and a key path with its values.
struct Want {
    message_type: &'static str,
    version: &'static str,
    control: &'static str,
    group: Option<&'static str>,
    path: &'static str,
    values: &'static [&'static str],
}

const fn want(
    message_type: &'static str,
    version: &'static str,
    control: &'static str,
    group: Option<&'static str>,
    path: &'static str,
    values: &'static [&'static str],
) -> Want {
    Want { message_type, version, control, group, path, values }
}

/// (file, format, interchange control, sender id, sender qualifier, receiver id, messages)
type Row = (&'static str, BodyFormat, &'static str, &'static str, &'static str, &'static str, Vec<Want>);

fn table() -> Vec<Row> {
    use BodyFormat::{Edifact, X12};
    vec![
        (
            "sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi",
            Edifact,
            "36790",
            "TP_UNEDIFACT_ID",
            "ZZ",
            "Company_UNEDIFACT_ID",
            vec![want("EDIFACT.ORDERS", "D96A", "1", None, "BGM.02", &["5YGVX1VT"])],
        ),
        (
            "sapabh_O2C-UNEDIFACT-D10B_01a-SalesOrderRequest_ORDERS-D10B-EAN008.edi",
            Edifact,
            "36790",
            "TP_UNEDIFACT_ID",
            "ZZ",
            "Company_UNEDIFACT_ID",
            vec![want("EDIFACT.ORDERS", "D10B", "1", None, "DTM[01.01=137].01.02", &["20240311"])],
        ),
        (
            "sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12",
            X12,
            "000006267",
            "TPASCX12",
            "ZZ",
            "012345678",
            vec![want("X12.850", "004010", "0001", Some("6267"), "BEG03", &["68DHHA7B"])],
        ),
        (
            "staedi_invoice810_po850_dual.edi",
            X12,
            "000000020",
            "SENDERISA",
            "ZZ",
            "RECEIVERISA",
            vec![
                want("X12.810", "004010", "000000001", Some("1"), "N1[01=ST].04", &["1223334445"]),
                want("X12.810", "004010", "000000002", Some("1"), "BIG04", &["A99999-04"]),
                want("X12.850", "003010", "000191240", Some("165"), "BEG03", &["S115921858"]),
            ],
        ),
    ]
}

fn check_message(file: &str, doc: &Document, w: &Want) {
    let header = doc.edi_header().unwrap_or_else(|| panic!("{file}: no envelope"));
    assert_eq!(doc.message_type(None, &|_| false).unwrap(), w.message_type, "{file}");
    assert_eq!(header.version, w.version, "{file}");
    assert_eq!(header.control_number, w.control, "{file}");
    assert_eq!(doc.docnum(), Some(w.control), "{file}");
    assert_eq!(header.group_control.as_deref(), w.group, "{file}");
    let values: Vec<Value> = w.values.iter().map(|v| json!(v)).collect();
    assert_eq!(doc.values(&KeyPath::parse(w.path).unwrap()), values, "{file} {}", w.path);
}

#[test]
fn real_interchanges_split_into_their_messages() {
    for (file, format, control, sender, qualifier, receiver, wants) in table() {
        let parsed = parse(&read(file), file);
        assert_eq!(parsed.format, format, "{file}");
        let ic = parsed.interchange.as_ref().expect("an interchange");
        assert_eq!(ic.control_number, control, "{file}");
        assert_eq!(
            (ic.sender.id.as_str(), ic.sender.qualifier.as_deref()),
            (sender, Some(qualifier)),
            "{file}"
        );
        assert_eq!(ic.receiver.id, receiver, "{file}");
        assert_eq!(parsed.documents.len(), wants.len(), "{file}");
        for (doc, w) in parsed.documents.iter().zip(&wants) {
            check_message(file, doc, w);
        }
    }
}

/// The two files whose UNT count is wrong: refused with the count named,
/// and split as expected once the count is corrected in memory.
#[test]
fn real_interchanges_with_a_wrong_unt_count_are_refused() {
    let cases = [
        (
            "sapb2bex_edi-ordrsp.edi",
            "UNT 0074 of message 5220230 says 19 segments, the message has 21",
            ("UNT+19+", "UNT+21+"),
            want("EDIFACT.ORDRSP", "D02A", "5220230", None, "BGM.02", &["0000347163"]),
            ("000255", "1234567890123"),
        ),
        (
            "staedi_orders-with-group.edi",
            "UNT 0074 of message 1 says 21 segments, the message has 18",
            ("UNT+21+", "UNT+18+"),
            want("EDIFACT.ORDERS", "D96B", "1", Some("1"), "NAD[01=BY].02.01", &["5400110000009"]),
            ("2722166169492", "5400110000009"),
        ),
    ];
    for (file, message, (from, to), w, (control, sender)) in cases {
        let bytes = read(file);
        let e = parse_body(&bytes, None).expect_err(file);
        assert_eq!(e.class(), ErrorClass::Unusable, "{file}");
        assert!(e.to_string().contains(message), "{file}: {e}");
        let fixed = String::from_utf8(bytes).unwrap().replace(from, to);
        let parsed = parse(fixed.as_bytes(), file);
        let ic = parsed.interchange.as_ref().unwrap();
        assert_eq!((ic.control_number.as_str(), ic.sender.id.as_str()), (control, sender), "{file}");
        assert_eq!(parsed.documents.len(), 1);
        check_message(file, &parsed.documents[0], &w);
    }
}

fn fp(doc: &Document, keys: &[&str]) -> edihub_core::Fingerprint {
    let keys: Vec<KeyPath> = keys.iter().map(|k| KeyPath::parse(k).unwrap()).collect();
    let spec = FingerprintSpec {
        message_type: "EDIFACT.ORDERS",
        key_fields: &keys,
        exclude_fields: &[],
        scope: edihub_core::FingerprintScope::NONE,
    };
    fingerprint(doc, &spec)
}

/// The D96A and D10B files carry the same order: with BGM.02 as key they
/// are one message whatever the version; without keys the control numbers
/// decide, and a new interchange number makes a new message.
#[test]
fn the_cross_version_pair_is_one_order_by_key_fields() {
    let d96a = parse(&read("sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi"), "D96A");
    let d10b = parse(&read("sapabh_O2C-UNEDIFACT-D10B_01a-SalesOrderRequest_ORDERS-D10B-EAN008.edi"), "D10B");
    let (a, b) = (&d96a.documents[0], &d10b.documents[0]);
    let (fa, fb) = (fp(a, &["BGM.02"]), fp(b, &["BGM.02"]));
    assert_eq!(fa.basis, Basis::KeyFields);
    assert_eq!(fa.hex, fb.hex);

    let by_control = fp(a, &[]);
    assert_eq!(by_control.basis, Basis::Docnum);
    assert!(by_control.hex.is_some());
    let text =
        String::from_utf8(read("sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi"));
    let renumbered = text.unwrap().replace("+36790", "+36791");
    let c = parse(renumbered.as_bytes(), "renumbered");
    assert_ne!(fp(&c.documents[0], &[]).hex, by_control.hex);
    assert_eq!(fp(&c.documents[0], &["BGM.02"]).hex, fa.hex);
}

//! Acknowledgements of the real fixtures, checked as exact text where the
//! layout matters and parsed back with our own parser for their counts
//! and references.

use std::path::PathBuf;

use super::super::{edifact, x12};
use super::writer::wrap;
use super::*;
use crate::{BodyFormat, Document, ParsedBody, parse_body};

const AT: AckTime = AckTime { year: 2026, month: 11, day: 30, hour: 9, minute: 5 };

fn real(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edifact/real").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const X12_850: &str = "sapabh_O2C-ASCX12-004010_01a-SalesOrderRequest_X12-850.x12";
const X12_DUAL: &str = "staedi_invoice810_po850_dual.edi";
const D96A: &str = "sapabh_O2C-UNEDIFACT-D96A_01a-SalesOrderRequest_ORDERS-D96A-EAN008.edi";

fn envelope(bytes: &[u8]) -> Envelope {
    parse_body(bytes, None).expect("fixture parses").envelope.expect("an envelope")
}

fn ack(name: &str, kind: AckKind, duplicate: bool, number: i64) -> String {
    text(acknowledge(&envelope(&real(name)), kind, duplicate, number, AT).expect("kind fits the syntax"))
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("an ASCII acknowledgement")
}

/// Parses an acknowledgement back with the hub's own parser.
fn parse_back(ack: &str) -> ParsedBody {
    parse_body(ack.as_bytes(), None).unwrap_or_else(|e| panic!("ack does not parse back: {e}\n{ack}"))
}

fn segments_of(doc: &Document) -> Vec<String> {
    doc.value().as_array().unwrap().iter().map(|s| s[0].as_str().unwrap().to_string()).collect()
}

#[test]
fn x12_997_of_one_purchase_order() {
    let text = ack(X12_850, AckKind::X12Functional, false, 42);
    assert_eq!(
        text,
        "ISA*00*          *00*          *01*012345678      *ZZ*TPASCX12       *261130*0905*U*00400*000000042*0*P*>~\
         GS*FA*012345678*TPASCX12*20261130*0905*42*X*004010~\
         ST*997*0001~AK1*PO*6267~AK2*850*0001~AK5*A~AK9*A*1*1*1~SE*6*0001~\
         GE*1*42~IEA*1*000000042~"
    );
    let back = parse_back(&text);
    assert_eq!(back.format, BodyFormat::X12);
    let ic = back.interchange.unwrap();
    assert_eq!((ic.sender.id.as_str(), ic.receiver.id.as_str()), ("012345678", "TPASCX12"));
    assert_eq!(ic.control_number, "000000042");
    let [doc] = back.documents.as_slice() else { panic!("one 997") };
    assert_eq!(doc.edi_header().unwrap().hub_type(), "X12.997");
}

#[test]
fn x12_997_has_one_set_per_group_with_every_transaction_set() {
    let text = ack(X12_DUAL, AckKind::X12Functional, false, 7);
    let back = parse_back(&text);
    assert_eq!(back.documents.len(), 2, "one 997 per received group: {text}");
    let first = &back.documents[0];
    assert_eq!(segments_of(first), ["AK1", "AK2", "AK5", "AK2", "AK5", "AK9"]);
    assert_eq!(first.value()[0], serde_json::json!(["AK1", "IN", "1"]));
    assert_eq!(first.value()[5], serde_json::json!(["AK9", "A", "2", "2", "2"]));
    assert_eq!(segments_of(&back.documents[1]), ["AK1", "AK2", "AK5", "AK9"]);
    // A test interchange (ISA15 T) is acknowledged as a test.
    assert!(text.contains("*0*T*>~"), "{text}");
}

#[test]
fn x12_999_moves_to_00501_with_a_repetition_separator() {
    let text = ack(X12_850, AckKind::X12Implementation, false, 1_000_000_001);
    assert!(text.contains("*^*00501*000000002*"), "ISA11/12 and the wrapped ISA13: {text}");
    assert!(text.contains("GS*FA*012345678*TPASCX12*20261130*0905*2*X*005010X231A1~"), "{text}");
    assert!(
        text.contains(
            "ST*999*0001*005010X231A1~AK1*PO*6267*004010~AK2*850*0001~IK5*A~AK9*A*1*1*1~SE*6*0001~"
        )
    );
    let back = parse_back(&text);
    assert_eq!(back.documents[0].edi_header().unwrap().version, "005010X231A1");
}

#[test]
fn x12_repeated_interchange_is_a_ta1_with_the_duplicate_note() {
    let text = ack(X12_850, AckKind::X12Functional, true, 3);
    assert!(text.ends_with("~TA1*000006267*240229*0339*R*025~IEA*0*000000003~"), "{text}");
    let (messages, back) = x12::parse(text.as_bytes(), usize::MAX).expect("a TA1 interchange parses back");
    assert!(messages.is_empty());
    assert_eq!(back.interchange.control_number, "000000003");
}

#[test]
fn contrl_of_an_interchange_without_groups() {
    let text = ack(D96A, AckKind::Contrl, false, 5);
    assert_eq!(
        text,
        "UNB+UNOA:2+Company_UNEDIFACT_ID:ZZ+TP_UNEDIFACT_ID:ZZ+261130:0905+5'\
         UNH+1+CONTRL:D:3:UN'UCI+36790+TP_UNEDIFACT_ID:ZZ+Company_UNEDIFACT_ID:ZZ+7'\
         UCM+1+ORDERS:D:96A:UN:EAN008+7'UNT+4+1'UNZ+1+5'"
    );
    let back = parse_back(&text);
    let [doc] = back.documents.as_slice() else { panic!("one CONTRL") };
    assert_eq!(doc.edi_header().unwrap().hub_type(), "EDIFACT.CONTRL");
    assert_eq!(back.interchange.unwrap().control_number, "5");
}

#[test]
fn contrl_acknowledges_groups_with_ucf() {
    let body = "UNB+UNOA:3+5400110000009:14+5013546107732:14+010502:1237+2722166169492'\
                UNG+ORDERS+5400110000009:14+5013546107732:14+010502:1237+1+UN+D:96A'\
                UNH+1+ORDERS:D:96B:UN:EAN008B'BGM+220+C1441747'UNT+3+1'\
                UNH+2+ORDERS:D:96B:UN:EAN008B'BGM+220+C1441748'UNT+3+2'UNE+2+1'UNZ+1+2722166169492'";
    let text = text(acknowledge(&envelope(body.as_bytes()), AckKind::Contrl, false, 9, AT).unwrap());
    let back = parse_back(&text);
    assert_eq!(segments_of(&back.documents[0]), ["UCI", "UCF", "UCM", "UCM"]);
    assert!(
        text.contains("UCF+1+5400110000009:14+5013546107732:14+7'UCM+1+ORDERS:D:96B:UN:EAN008B+7'"),
        "{text}"
    );
    assert!(text.ends_with("UCM+2+ORDERS:D:96B:UN:EAN008B+7'UNT+6+1'UNZ+1+9'"), "{text}");
}

#[test]
fn contrl_of_a_repeated_interchange_rejects_it_as_a_duplicate() {
    let text = ack(D96A, AckKind::Contrl, true, 6);
    assert!(text.contains("UCI+36790+TP_UNEDIFACT_ID:ZZ+Company_UNEDIFACT_ID:ZZ+4+26'UNT+3+1'"), "{text}");
    assert_eq!(parse_back(&text).documents.len(), 1);
}

#[test]
fn contrl_keeps_una_and_releases_service_characters() {
    let body = "UNA:+.? 'UNB+UNOC:4+SEND?+ER:ZZ+RECV:ZZ+20240101:1200+IC1'UNH+M1+ORDERS:D:96A:UN'\
                BGM+220+1'UNT+3+M1'UNZ+1+IC1'";
    let (_, env) = edifact::parse(body.as_bytes(), usize::MAX).expect("parses");
    let text = text(acknowledge(&env, AckKind::Contrl, false, 1, AT).unwrap());
    assert!(text.starts_with("UNA:+.? 'UNB+UNOC:4+RECV:ZZ+SEND?+ER:ZZ+20261130:0905+1'UNH+1+CONTRL:4:1:UN'"));
    let back = parse_back(&text);
    assert_eq!(back.interchange.unwrap().receiver.id, "SEND+ER");
}

#[test]
fn contrl_is_written_in_the_interchanges_encoding() {
    // UNOC is ISO 8859-1: `ü` is one byte (0xFC) in and out.
    let latin1 =
        b"UNB+UNOC:3+M\xFCller:ZZ+ACME:ZZ+240101:1200+IC1'UNH+M1+ORDERS:D:96A:UN'UNT+2+M1'UNZ+1+IC1'";
    let bytes = acknowledge(&envelope(latin1), AckKind::Contrl, false, 1, AT).unwrap();
    let wanted: &[u8] = b"+M\xFCller:ZZ+";
    assert!(bytes.windows(wanted.len()).any(|w| w == wanted), "{}", String::from_utf8_lossy(&bytes));
    let back = parse_body(&bytes, None).expect("parses back");
    assert_eq!(back.interchange.unwrap().receiver.id, "M\u{fc}ller");
    // Its first four characters name the syntax, as when it was read.
    let longer =
        b"UNB+UNOCX:3+M\xFCller:ZZ+ACME:ZZ+240101:1200+IC1'UNH+M1+ORDERS:D:96A:UN'UNT+2+M1'UNZ+1+IC1'";
    let bytes = acknowledge(&envelope(longer), AckKind::Contrl, false, 1, AT).unwrap();
    assert!(bytes.windows(wanted.len()).any(|w| w == wanted), "{}", String::from_utf8_lossy(&bytes));
    // UNOY is UTF-8.
    let utf8 =
        "UNB+UNOY:4+M\u{fc}ller:ZZ+ACME:ZZ+20240101:1200+IC1'UNH+M1+ORDERS:D:96A:UN'UNT+2+M1'UNZ+1+IC1'";
    let bytes = acknowledge(&envelope(utf8.as_bytes()), AckKind::Contrl, false, 1, AT).unwrap();
    assert!(text(bytes).contains("+ACME:ZZ+M\u{fc}ller:ZZ+20261130:0905+1'"));
}

#[test]
fn a_kind_of_the_other_syntax_gives_none() {
    assert_eq!(acknowledge(&envelope(&real(D96A)), AckKind::X12Functional, false, 1, AT), None);
    assert_eq!(acknowledge(&envelope(&real(X12_850)), AckKind::Contrl, false, 1, AT), None);
}

#[test]
fn kinds_parse_from_the_query_value() {
    assert_eq!(AckKind::parse("997"), Some(AckKind::X12Functional));
    assert_eq!(AckKind::parse("CONTRL"), Some(AckKind::Contrl));
    assert_eq!(AckKind::parse("998"), None);
    assert_eq!(wrap(999_999_999, 999_999_999), 999_999_999);
    assert_eq!(wrap(1_000_000_000, 999_999_999), 1);
}

#[test]
fn x12_999_repeats_the_received_repetition_separator() {
    // ISA12 00403: ISA11 `-` is the repetition separator, and the 999 keeps it.
    let body = String::from_utf8(real(X12_850)).unwrap().replace("*U*00400*", "*-*00403*");
    let text =
        text(acknowledge(&envelope(body.as_bytes()), AckKind::X12Implementation, false, 3, AT).unwrap());
    assert!(text.contains("*0905*-*00501*000000003*"), "{text}");
    parse_back(&text);
    // Without one (00401, ISA11 `U`) it takes the first free character.
    let text = ack(X12_850, AckKind::X12Implementation, false, 3);
    assert!(text.contains("*0905*^*00501*000000003*"), "{text}");
}

#[test]
fn x12_997_gs08_is_the_base_version_and_the_999s_its_guide() {
    // A 271 under the 005010X279A1 guide.
    let body = String::from_utf8(real(X12_850))
        .unwrap()
        .replace("*U*00400*", "*^*00501*")
        .replace("*X*004010~", "*X*005010X279A1~");
    let env = envelope(body.as_bytes());
    let ack997 = text(acknowledge(&env, AckKind::X12Functional, false, 3, AT).unwrap());
    assert!(
        ack997.contains("GS*FA*012345678*TPASCX12*20261130*0905*3*X*005010~ST*997*0001~AK1*PO*6267~"),
        "{ack997}"
    );
    let ack999 = text(acknowledge(&env, AckKind::X12Implementation, false, 3, AT).unwrap());
    assert!(
        ack999.contains("*3*X*005010X231A1~ST*999*0001*005010X231A1~AK1*PO*6267*005010X279A1~"),
        "the 999 names the received guide in AK103: {ack999}"
    );
    parse_back(&ack997);
    parse_back(&ack999);
}

//! A real IDoc (the S/4HANA ORDRSP in `fixtures/idoc/real/`) rewritten as
//! IDoc-XML for a SAP system: readdressed from the hub, segments in the
//! order the description defines, accepted by the test receiver's check,
//! and read back by the hub with the same segment values.

mod common;

use common::fixture;
use edihub_core::sap::check::{Expected, check_idoc_xml};
use edihub_core::sap::{SapIdoc, SapProfile, idoc_xml};
use edihub_core::{Document, IdocDescription, IdocDescriptions, parse_body};
use serde_json::Value;

fn profile() -> SapProfile {
    SapProfile {
        logical_system: "S4HCLNT100".into(),
        partner_type: "LS".into(),
        port: "SAPS4H".into(),
        client: "100".into(),
        hub_partner: "EDIHUB".into(),
        hub_partner_type: "LS".into(),
        hub_port: "EDIHUBXML".into(),
    }
}

fn description() -> IdocDescription {
    let text = String::from_utf8(fixture("flat/orders05-ordrsp.description.txt")).unwrap();
    IdocDescription::read(&text).unwrap()
}

fn ordrsp() -> Document {
    parse_body(&fixture("real/sapb2bex_ordrsp-idoc.xml"), Some("application/xml"))
        .unwrap()
        .documents
        .remove(0)
}

/// The rendering without its control record.
fn segments(doc: &Document) -> Value {
    let mut value = doc.value().clone();
    value.as_object_mut().unwrap().remove("EDI_DC40");
    value
}

#[test]
fn a_received_idoc_is_readdressed_and_ordered_for_sap() {
    let (doc, description) = (ordrsp(), description());
    let idoc = SapIdoc::from_document(&doc, &profile(), Some(&description)).unwrap();
    assert_eq!(idoc.root, "ORDERS05");
    let control: Vec<(&str, &str)> = idoc.control.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_eq!(
        control,
        [
            ("TABNAM", "EDI_DC40"),
            ("MANDT", "100"),
            ("DOCNUM", "5220230"),
            ("DOCREL", "1809"),
            ("DIRECT", "2"),
            ("OUTMOD", "2"),
            ("IDOCTYP", "ORDERS05"),
            ("MESTYP", "ORDRSP"),
            ("SNDPOR", "EDIHUBXML"),
            ("SNDPRT", "LS"),
            ("SNDPRN", "EDIHUB"),
            ("RCVPOR", "SAPS4H"),
            ("RCVPRT", "LS"),
            ("RCVPRN", "S4HCLNT100"),
            ("CREDAT", "20231004"),
            ("CRETIM", "180011"),
            ("SERIAL", "20231004180011"),
        ]
    );
    // Top-level segments in the description's order, repeats in file order.
    let names: Vec<&str> = idoc.segments.iter().map(|s| s.name.as_str()).collect();
    let mut expected: Vec<&str> = Vec::new();
    for (name, count) in [("E1EDK01", 1), ("E1EDK14", 4), ("E1EDK03", 4), ("E1EDKA1", 4), ("E1EDK02", 2)] {
        expected.extend(std::iter::repeat_n(name, count));
    }
    assert_eq!(names[..15], expected[..]);
    let k14: Vec<&str> = idoc.segments[1..5].iter().map(|s| s.fields[0].1.as_str()).collect();
    assert_eq!(k14, ["006", "007", "008", "012"]);
    let k01_fields: Vec<&str> = idoc.segments[0].fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        k01_fields,
        ["ACTION", "CURCY", "WKURS", "ZTERM", "BELNR", "VSART", "VSART_BEZ", "RECIPNT_NO", "KZAZU"]
    );

    let xml = idoc_xml(std::slice::from_ref(&idoc)).unwrap();
    let mut descriptions = IdocDescriptions::new();
    descriptions.insert(description).unwrap();
    let read = check_idoc_xml(xml.as_bytes(), &Expected { profile: &profile(), descriptions: &descriptions })
        .unwrap_or_else(|problems| panic!("{problems:#?}"));
    assert_eq!(read, [idoc]);
    // The hub reads its own output back to the same segments.
    let back = parse_body(xml.as_bytes(), Some("application/xml")).unwrap().documents.remove(0);
    assert_eq!(segments(&back), segments(&doc));
    assert_eq!(back.control().unwrap().sndprn.as_deref(), Some("EDIHUB"));
}

#[test]
fn what_sap_cannot_take_is_refused() {
    let (doc, description) = (ordrsp(), description());
    let plain = parse_body(br#"{"order": 1}"#, Some("application/json")).unwrap().documents.remove(0);
    let e = SapIdoc::from_document(&plain, &profile(), None).unwrap_err();
    assert_eq!(e.to_string(), "cannot write the IDoc for SAP: only an IDoc can be written as IDoc-XML");
    let narrow = String::from_utf8(fixture("flat/orders05-ordrsp.description.json")).unwrap().replacen(
        r#""name": "BELNR",
     "offset": 83,
     "length": 35"#,
        r#""name": "BELNR",
     "offset": 83,
     "length": 5"#,
        1,
    );
    let narrow = IdocDescription::read(&narrow).unwrap();
    assert_eq!(narrow.segment("E1EDK01").unwrap().fields[9].length, 5, "the fixture's layout changed");
    let e = SapIdoc::from_document(&doc, &profile(), Some(&narrow)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot write the IDoc for SAP: E1EDK01.BELNR has 10 characters; SAP's field holds 5"
    );
    let other = IdocDescription::read(
        r#"{"idoc_type": "ORDERS05", "segments": [{"name": "E1EDK01", "fields": []}]}"#,
    )
    .unwrap();
    let e = SapIdoc::from_document(&doc, &profile(), Some(&other)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot write the IDoc for SAP: field E1EDK01.ACTION is not in the description"
    );
    let mut bad = profile();
    bad.hub_port = "A PORT".into();
    assert!(SapIdoc::from_document(&doc, &bad, Some(&description)).is_err());
}

#[test]
fn without_a_description_segments_are_written_in_name_order() {
    let idoc = SapIdoc::from_document(&ordrsp(), &profile(), None).unwrap();
    let names: Vec<&str> = idoc.segments.iter().map(|s| s.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    // SAP's check against the definition would refuse this order.
    let xml = idoc_xml(&[idoc]).unwrap();
    let mut descriptions = IdocDescriptions::new();
    descriptions.insert(description()).unwrap();
    let problems =
        check_idoc_xml(xml.as_bytes(), &Expected { profile: &profile(), descriptions: &descriptions })
            .unwrap_err();
    assert!(problems.iter().any(|p| p.ends_with("out of the definition's order")), "{problems:?}");
}

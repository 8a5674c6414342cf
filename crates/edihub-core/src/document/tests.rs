//! Control record, message type, docnum and values of a document.

use serde_json::json;

use super::*;

const ALONE: PacketPosition = PacketPosition { index: 1, total: 1 };

fn idoc_with(dc40: Value) -> Document {
    Document::idoc(Some("ORDERS05".into()), json!({"EDI_DC40": dc40, "E1EDK01": {"BELNR": "1"}}), ALONE)
        .unwrap()
}

fn none_configured(_: &str) -> bool {
    false
}

#[test]
fn control_record_fields_are_trimmed_and_blank_is_none() {
    let doc = idoc_with(json!({
        "IDOCTYP": " ORDERS05 ", "CIMTYP": "", "MESTYP": "ORDERS", "DOCNUM": "0000000000004711",
        "SNDPRN": "Q01CLNT100", "SNDPOR": "   ", "MANDT": "100", "OTHER": "x",
        "SNDPRT": "LS", "RCVPRN": " O-P123456 ", "RCVPRT": "LS", "RCVPOR": "", "MESCOD": "FBK",
        "MESFCT": "B2B", "ARCKEY": "urn:sap.com:msgid=F1E27A08"
    }));
    assert_eq!(
        doc.control(),
        Some(&ControlRecord {
            idoctyp: Some("ORDERS05".into()),
            cimtyp: None,
            mestyp: Some("ORDERS".into()),
            docnum: Some("0000000000004711".into()),
            sndprn: Some("Q01CLNT100".into()),
            sndpor: None,
            mandt: Some("100".into()),
            sndprt: Some("LS".into()),
            rcvprn: Some("O-P123456".into()),
            rcvprt: Some("LS".into()),
            rcvpor: None,
            mescod: Some("FBK".into()),
            mesfct: Some("B2B".into()),
            arckey: Some("urn:sap.com:msgid=F1E27A08".into()),
        })
    );
    assert_eq!(doc.mestyp(), Some("ORDERS"));
    assert_eq!(doc.docnum(), Some("0000000000004711"));
    assert_eq!(doc.root_name(), Some("ORDERS05"));
    assert!(doc.is_idoc());
}

#[test]
fn an_idoc_without_edi_dc40_is_not_a_document() {
    let missing = CoreError::NoControlRecord { index: 1, total: 1 };
    assert_eq!(Document::idoc(None, json!({"E1EDK01": {}}), ALONE), Err(missing.clone()));
    assert_eq!(Document::idoc(None, json!(""), ALONE), Err(missing));
    // An empty control record is still a control record.
    let empty = Document::idoc(None, json!({"EDI_DC40": ""}), ALONE).unwrap();
    assert_eq!(empty.control(), Some(&ControlRecord::default()));
}

#[test]
fn a_control_record_that_says_two_things_is_refused() {
    let at = PacketPosition { index: 2, total: 3 };
    let twice = Document::idoc(None, json!({"EDI_DC40": [{"DOCNUM": "1"}, {"DOCNUM": "2"}]}), at);
    assert_eq!(twice, Err(CoreError::ControlRecordRepeated { index: 2, total: 3 }));
    let field = Document::idoc(None, json!({"EDI_DC40": {"DOCNUM": ["1", "2"], "MESTYP": "ORDERS"}}), at);
    let err = field.unwrap_err();
    assert_eq!(err, CoreError::ControlFieldRepeated { index: 2, total: 3, field: "DOCNUM".into() });
    assert_eq!(err.to_string(), "IDoc 2 of 3: the control record EDI_DC40 has field DOCNUM more than once");
    // Every field counts, not only the ones dedup reads.
    let other = Document::idoc(None, json!({"EDI_DC40": {"DOCNUM": "1", "RCVPRN": ["A", "B"]}}), at);
    assert!(matches!(other, Err(CoreError::ControlFieldRepeated { field, .. }) if field == "RCVPRN"));
}

#[test]
fn message_type_precedence() {
    let doc = idoc_with(json!({"IDOCTYP": "ORDERS05", "CIMTYP": "ZORDERS05"}));
    assert_eq!(doc.message_type(Some("X"), &none_configured).unwrap(), "X");
    assert_eq!(doc.message_type(Some("  "), &none_configured).unwrap(), "ORDERS05");
    assert_eq!(doc.message_type(None, &none_configured).unwrap(), "ORDERS05");
    let only_z = |t: &str| t == "ZORDERS05";
    assert_eq!(doc.message_type(None, &only_z).unwrap(), "ZORDERS05");
    assert_eq!(doc.message_type(Some(" Y "), &only_z).unwrap(), "Y");
}

#[test]
fn message_type_falls_back_to_the_root_name() {
    let doc = idoc_with(json!({"MESTYP": "LOIPRO"}));
    assert_eq!(doc.message_type(None, &none_configured).unwrap(), "ORDERS05");
    let bare = Document::idoc(None, json!({"EDI_DC40": {"MESTYP": "X"}}), ALONE).unwrap();
    assert_eq!(bare.root_name(), None);
    assert_eq!(bare.message_type(None, &none_configured), Err(CoreError::UnknownMessageType));
    assert_eq!(bare.message_type(Some("T"), &none_configured).unwrap(), "T");
}

#[test]
fn message_type_names_the_field_it_was_read_from() {
    let doc = idoc_with(json!({"IDOCTYP": "ORDERS05", "CIMTYP": "ZORDERS05"}));
    let field = |doc: &Document, explicit, configured: &dyn Fn(&str) -> bool| {
        doc.message_type_and_field(explicit, configured).unwrap().1
    };
    assert_eq!(field(&doc, Some("X"), &none_configured), None);
    assert_eq!(field(&doc, None, &none_configured), Some("EDI_DC40.IDOCTYP"));
    assert_eq!(field(&doc, None, &|t| t == "ZORDERS05"), Some("EDI_DC40.CIMTYP"));
    let rooted = idoc_with(json!({"MESTYP": "ORDERS"}));
    assert_eq!(field(&rooted, None, &none_configured), Some("the root element"));
    let x12 = "ISA*00*          *00*          *ZZ*S              *ZZ*R              *240101*1200*U*00401*000000001*0*P*>~\
               GS*PO*S*R*20240101*1200*1*X*004010~ST*850*0001~BEG*00*SA*1~SE*3*0001~GE*1*1~IEA*1*000000001~";
    let edifact = "UNB+UNOC:3+S+R+240101:1200+IC1'UNH+1+ORDERS:D:96A:UN'BGM+220+1'UNT+3+1'UNZ+1+IC1'";
    for (body, want) in [(x12, "ST01"), (edifact, "UNH 0065")] {
        let parsed = crate::parse_body(body.as_bytes(), None).unwrap();
        assert_eq!(field(&parsed.documents[0], None, &none_configured), Some(want));
    }
}

#[test]
fn plain_json_needs_an_explicit_type() {
    let doc = Document::plain(json!({"a": 1}));
    let err = doc.message_type(None, &none_configured).unwrap_err();
    assert_eq!(err, CoreError::NoMessageType);
    assert_eq!(err.class(), crate::ErrorClass::Unusable);
    assert_eq!(doc.message_type(Some("shop.order"), &none_configured).unwrap(), "shop.order");
    assert_eq!(doc.control(), None);
    assert_eq!(doc.mestyp(), None);
    assert_eq!(doc.root_name(), None);
    assert!(!doc.is_idoc());
}

#[test]
fn plain_json_docnum_is_a_top_level_string_or_number() {
    assert_eq!(Document::plain(json!({"docnum": " 42 "})).docnum(), Some("42"));
    assert_eq!(Document::plain(json!({"docnum": 42})).docnum(), Some("42"));
    assert_eq!(Document::plain(json!({"docnum": "  "})).docnum(), None);
    assert_eq!(Document::plain(json!({"docnum": true})).docnum(), None);
    assert_eq!(Document::plain(json!({"x": {"docnum": "1"}})).docnum(), None);
}

#[test]
fn values_read_the_document() {
    let doc = idoc_with(json!({"DOCNUM": "7"}));
    let belnr = KeyPath::parse("E1EDK01.BELNR").unwrap();
    assert_eq!(doc.values(&belnr), vec![json!("1")]);
    let docnum = KeyPath::parse("$.EDI_DC40.DOCNUM").unwrap();
    assert_eq!(doc.values(&docnum), vec![json!("7")]);
    assert!(doc.values(&KeyPath::parse("E1EDK09.X").unwrap()).is_empty());
    assert_eq!(doc.value()["E1EDK01"], json!({"BELNR": "1"}));
}

#[test]
fn control_record_serialises_with_lowercase_names() {
    let cr = ControlRecord { docnum: Some("1".into()), ..ControlRecord::default() };
    let v = serde_json::to_value(&cr).unwrap();
    assert_eq!(v["docnum"], json!("1"));
    assert_eq!(v["mestyp"], Value::Null);
}

//! SOAP unwrapping, packets, control records, IDoc JSON detection.

use serde_json::json;

use super::*;

const DC40: &str = "<EDI_DC40><IDOCTYP>ORDERS05</IDOCTYP><DOCNUM>1</DOCNUM></EDI_DC40>";

fn xml_docs(text: &str) -> Result<Vec<Document>, CoreError> {
    from_xml(std::borrow::Cow::Borrowed(text), None, usize::MAX)
}

#[test]
fn one_idoc_under_a_type_root() {
    let docs = xml_docs(&format!("<ORDERS05><IDOC BEGIN=\"1\">{DC40}</IDOC></ORDERS05>")).unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].root_name(), Some("ORDERS05"));
    assert_eq!(docs[0].docnum(), Some("1"));
    assert_eq!(docs[0].value()["@BEGIN"], json!("1"));
}

#[test]
fn a_bare_idoc_root_has_no_root_name() {
    let docs = xml_docs(&format!("<IDOC>{DC40}</IDOC>")).unwrap();
    assert_eq!(docs[0].root_name(), None);
    assert_eq!(docs[0].message_type(None, &|_| false).unwrap(), "ORDERS05");
}

#[test]
fn packets_give_one_document_per_idoc_in_order() {
    let idoc = |n: u32| format!("<IDOC><EDI_DC40><DOCNUM>{n}</DOCNUM></EDI_DC40></IDOC>");
    let text = format!("<ORDERS05>{}<OTHER/>{}{}</ORDERS05>", idoc(1), idoc(2), idoc(3));
    let docs = xml_docs(&text).unwrap();
    let numbers: Vec<_> = docs.iter().map(|d| d.docnum().unwrap()).collect();
    assert_eq!(numbers, ["1", "2", "3"]);
}

#[test]
fn an_idoc_without_control_record_is_named_by_position() {
    let text = format!("<ORDERS05><IDOC>{DC40}</IDOC><IDOC/><IDOC>{DC40}</IDOC></ORDERS05>");
    let err = xml_docs(&text).unwrap_err();
    assert_eq!(err.to_string(), "IDoc 2 of 3 has no control record EDI_DC40");
    assert_eq!(err.class(), crate::ErrorClass::Unusable);
}

#[test]
fn a_root_without_idoc_is_unusable() {
    let err = xml_docs("<ORDERS05><E1EDK01/></ORDERS05>").unwrap_err();
    assert_eq!(err.to_string(), "no IDOC element under <ORDERS05>");
    assert_eq!(err.class(), crate::ErrorClass::Unusable);
}

#[test]
fn soap_envelopes_are_unwrapped_with_any_prefix() {
    let inner = format!(
        "<ns0:ORDERS05 xmlns:ns0=\"urn:sap-com:document:sap:idoc:soap:messages\"><ns0:IDOC>{DC40}</ns0:IDOC></ns0:ORDERS05>"
    );
    for (env, extra) in
        [("soapenv", "<soapenv:Header><x/></soapenv:Header>"), ("SOAP-ENV", ""), ("s", "<s:Header/>")]
    {
        let text = format!(
            "<{env}:Envelope xmlns:{env}=\"http://schemas.xmlsoap.org/soap/envelope/\">{extra}<{env}:Body>{inner}</{env}:Body></{env}:Envelope>"
        );
        let docs = xml_docs(&text).unwrap();
        assert_eq!(docs[0].root_name(), Some("ORDERS05"), "{env}");
        assert_eq!(docs[0].docnum(), Some("1"));
    }
    // SOAP 1.2 default namespace, no prefix at all.
    let text = format!(
        "<Envelope xmlns=\"http://www.w3.org/2003/05/soap-envelope\"><Body><ORDERS05><IDOC>{DC40}</IDOC></ORDERS05></Body></Envelope>"
    );
    assert_eq!(xml_docs(&text).unwrap().len(), 1);
}

#[test]
fn broken_soap_envelopes_are_unusable() {
    let ns = "xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"";
    let cases = [
        (format!("<s:Envelope {ns}><s:Header/></s:Envelope>"), CoreError::SoapNoBody),
        (format!("<s:Envelope {ns}><s:Body> </s:Body></s:Envelope>"), CoreError::SoapBodyEmpty),
        (format!("<s:Envelope {ns}><s:Body><A/><B/></s:Body></s:Envelope>"), CoreError::SoapBodyMultiple(2)),
        (
            format!("<s:Envelope {ns}><s:Body><ORDERS05/></s:Body></s:Envelope>"),
            CoreError::NoIdoc("ORDERS05".into()),
        ),
    ];
    for (text, expected) in cases {
        let err = xml_docs(&text).unwrap_err();
        assert_eq!(err, expected);
        assert_eq!(err.class(), crate::ErrorClass::Unusable);
    }
}

#[test]
fn json_idoc_shapes() {
    let one = from_json(r#"{"ORDERS05":{"IDOC":{"EDI_DC40":{"DOCNUM":"1"}}}}"#).unwrap();
    assert_eq!(one.format, BodyFormat::IdocJson);
    assert_eq!(one.documents[0].root_name(), Some("ORDERS05"));
    let packet = from_json(
        r#"{"ORDERS05":{"@xmlns":"x","IDOC":[{"EDI_DC40":{"DOCNUM":"1"}},{"EDI_DC40":{"DOCNUM":2}}]}}"#,
    )
    .unwrap();
    let numbers: Vec<_> = packet.documents.iter().map(|d| d.docnum().unwrap()).collect();
    assert_eq!(numbers, ["1", "2"]);
    let bare = from_json(r#"{"IDOC":{"EDI_DC40":{"IDOCTYP":"X"}}}"#).unwrap();
    assert_eq!(bare.format, BodyFormat::IdocJson);
    assert_eq!(bare.documents[0].root_name(), None);
}

#[test]
fn json_idoc_errors() {
    let err = from_json(r#"{"ORDERS05":{"IDOC":[{"EDI_DC40":{}},{"E1EDK01":{}}]}}"#).unwrap_err();
    assert_eq!(err, CoreError::NoControlRecord { index: 2, total: 2 });
    let err = from_json(r#"{"ORDERS05":{"IDOC":null}}"#).unwrap_err();
    assert_eq!(err.to_string(), "invalid IDoc JSON: `IDOC` is null or an empty array");
    assert!(matches!(from_json(r#"{"IDOC":[[{}]]}"#), Err(CoreError::InvalidIdocJson(_))));
}

#[test]
fn other_json_is_plain() {
    for text in [
        r#"{"ORDERS05":{"NOT_IDOC":{}}}"#,
        r#"{"ORDERS05":{"IDOC":{}},"second":1}"#,
        r#"{"ORDERS05":"IDOC"}"#,
        r#"{}"#,
    ] {
        let body = from_json(text).unwrap();
        assert_eq!(body.format, BodyFormat::PlainJson, "{text}");
        assert_eq!(body.documents.len(), 1);
    }
}

#[test]
fn plain_json_must_be_an_object() {
    for text in ["[1,2]", "\"x\"", "42", "null", "true"] {
        assert_eq!(from_json(text).unwrap_err(), CoreError::PlainJsonNotObject, "{text}");
    }
}

#[test]
fn the_idempotency_key_is_taken_out() {
    let body = from_json(r#"{"idempotencyKey":" k-1 ","id":7}"#).unwrap();
    assert_eq!(body.idempotency_key.as_deref(), Some(" k-1 "));
    assert_eq!(body.documents[0].value(), &json!({"id": 7}));
    // Ignored when deciding the shape: this is still an IDoc.
    let idoc = from_json(r#"{"idempotencyKey":"k","ORDERS05":{"IDOC":{"EDI_DC40":{}}}}"#).unwrap();
    assert_eq!(idoc.format, BodyFormat::IdocJson);
    assert_eq!(idoc.idempotency_key.as_deref(), Some("k"));
    assert_eq!(from_json(r#"{"idempotencyKey":5}"#).unwrap_err(), CoreError::IdempotencyKeyNotString);
    assert_eq!(from_json(r#"{"idempotencyKey":null}"#).unwrap_err(), CoreError::IdempotencyKeyNotString);
    let nested = from_json(r#"{"a":{"idempotencyKey":"x"}}"#).unwrap();
    assert_eq!(nested.idempotency_key, None);
}

#[test]
fn invalid_json_reports_line_and_column() {
    let err = from_json("{\n  \"a\": 1,\n  \"b\": [1, 2").unwrap_err();
    assert_eq!(err.to_string(), "invalid JSON: EOF while parsing a list at line 3 column 12");
    assert_eq!(err.class(), crate::ErrorClass::Malformed);
    let err = from_json("{\"a\" 1}").unwrap_err();
    assert_eq!(err.to_string(), "invalid JSON: expected `:` at line 1 column 6");
    assert!(matches!(from_json("{} x"), Err(CoreError::InvalidJson(_))));
}

#[test]
fn json_nesting_is_limited() {
    let ok = format!("{{\"a\":{}1{}}}", "[".repeat(100), "]".repeat(100));
    assert!(from_json(&ok).is_ok());
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
    assert_eq!(from_json(&deep).unwrap_err(), CoreError::JsonTooDeep);
    let hostile = "[".repeat(100_000);
    assert_eq!(from_json(&hostile).unwrap_err().to_string(), "JSON nesting deeper than 128");
    let objects = "{\"a\":".repeat(100_000);
    assert_eq!(from_json(&objects).unwrap_err(), CoreError::JsonTooDeep);
}

#[test]
fn a_control_record_with_a_field_twice_is_refused_in_xml_and_json() {
    let xml = "<ORDERS05><IDOC><EDI_DC40><DOCNUM>1</DOCNUM><DOCNUM>2</DOCNUM></EDI_DC40></IDOC></ORDERS05>";
    let field = CoreError::ControlFieldRepeated { index: 1, total: 1, field: "DOCNUM".into() };
    assert_eq!(xml_docs(xml).unwrap_err(), field);
    assert_eq!(field.class(), crate::ErrorClass::Unusable);
    let json = r#"{"ORDERS05":{"IDOC":{"EDI_DC40":{"DOCNUM":["1","2"]}}}}"#;
    assert_eq!(from_json(json).unwrap_err(), field);
    // A one-element array is one value, as everywhere in the JSON rendering.
    let one = from_json(r#"{"ORDERS05":{"IDOC":{"EDI_DC40":{"DOCNUM":["1"]}}}}"#).unwrap();
    assert_eq!(one.documents[0].docnum(), Some("1"));
}

#[test]
fn an_idoc_with_two_control_records_is_refused_in_xml_and_json() {
    let text = format!("<ORDERS05><IDOC>{DC40}</IDOC><IDOC>{DC40}{DC40}</IDOC></ORDERS05>");
    let twice = CoreError::ControlRecordRepeated { index: 2, total: 2 };
    assert_eq!(xml_docs(&text).unwrap_err(), twice);
    assert_eq!(
        twice.to_string(),
        "IDoc 2 of 2 has a second EDI_DC40 control record; an IDoc has exactly one"
    );
    let json = r#"{"IDOC":{"EDI_DC40":[{"DOCNUM":"1"},{"DOCNUM":"2"}]}}"#;
    assert_eq!(from_json(json).unwrap_err(), CoreError::ControlRecordRepeated { index: 1, total: 1 });
}

#[test]
fn duplicate_json_member_names_are_refused_on_every_json_shape() {
    let plain = from_json("{\"id\":\"a1\",\n \"id\":\"a2\",\"docnum\":\"1\"}").unwrap_err();
    assert_eq!(
        plain.to_string(),
        "duplicate JSON member `id` (JSON pointer `/id`) at line 2 column 10; a name may appear once per object"
    );
    assert_eq!(plain.class(), crate::ErrorClass::Malformed);
    let idoc = from_json(r#"{"ORDERS05":{"IDOC":{"EDI_DC40":{"DOCNUM":"1","DOCNUM":"2"}}}}"#).unwrap_err();
    assert!(idoc.to_string().contains("`/ORDERS05/IDOC/EDI_DC40/DOCNUM`"), "{idoc}");
    let key = from_json(r#"{"idempotencyKey":"a","idempotencyKey":"b"}"#).unwrap_err();
    assert!(matches!(key, CoreError::DuplicateMember(_)), "{key}");
}

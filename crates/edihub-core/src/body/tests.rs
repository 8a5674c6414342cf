//! Content types, sniffing and the empty-body rule.

use super::*;

const IDOC_XML: &str = "<ORDERS05><IDOC><EDI_DC40><DOCNUM>1</DOCNUM></EDI_DC40></IDOC></ORDERS05>";
const PLAIN_JSON: &str = r#"{"id": 1}"#;

fn format_of(body: &str, content_type: Option<&str>) -> Result<BodyFormat, CoreError> {
    parse_body(body.as_bytes(), content_type).map(|b| b.format)
}

#[test]
fn xml_content_types() {
    for ct in [
        "application/xml",
        "text/xml",
        "text/xml; charset=UTF-8",
        "application/soap+xml",
        "application/vnd.sap.idoc+xml",
        "APPLICATION/XML",
        " application/xml ;charset=utf-8",
    ] {
        assert_eq!(format_of(IDOC_XML, Some(ct)), Ok(BodyFormat::IdocXml), "{ct}");
    }
}

#[test]
fn json_content_types() {
    for ct in [
        "application/json",
        "application/json; charset=utf-8",
        "application/vnd.api+json",
        "Application/JSON",
    ] {
        assert_eq!(format_of(PLAIN_JSON, Some(ct)), Ok(BodyFormat::PlainJson), "{ct}");
    }
}

#[test]
fn generic_types_sniff_the_first_character() {
    for ct in [None, Some(""), Some("application/octet-stream"), Some("text/plain; charset=utf-8")] {
        assert_eq!(format_of(IDOC_XML, ct), Ok(BodyFormat::IdocXml), "{ct:?}");
        assert_eq!(format_of(PLAIN_JSON, ct), Ok(BodyFormat::PlainJson), "{ct:?}");
        assert_eq!(format_of("\n  [1]", ct), Err(CoreError::PlainJsonNotObject));
        assert_eq!(format_of("hello", ct), Err(CoreError::UnknownFormat));
    }
    let with_bom = format!("\u{feff}  {IDOC_XML}");
    assert_eq!(format_of(&with_bom, None), Ok(BodyFormat::IdocXml));
    let json_bom = format!("\u{feff}{PLAIN_JSON}");
    assert_eq!(format_of(&json_bom, None), Ok(BodyFormat::PlainJson));
}

#[test]
fn sniffing_sees_through_utf16() {
    for little in [true, false] {
        let mut body = if little { vec![0xFF, 0xFE] } else { vec![0xFE, 0xFF] };
        for unit in format!(" {IDOC_XML}").encode_utf16() {
            body.extend(if little { unit.to_le_bytes() } else { unit.to_be_bytes() });
        }
        assert_eq!(parse_body(&body, None).unwrap().format, BodyFormat::IdocXml);
        body.truncate(2);
        body.extend(if little { [0x20, 0x00] } else { [0x00, 0x20] });
        assert_eq!(parse_body(&body, None).unwrap_err(), CoreError::EmptyBody);
    }
    let no_bom: Vec<u8> = IDOC_XML.encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_eq!(parse_body(&no_bom, None).unwrap().format, BodyFormat::IdocXml);
}

#[test]
fn other_types_are_unsupported_by_name() {
    for ct in [
        "image/png",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "Image/PNG",
        "text/html",
        "xml",
        "+json",
    ] {
        let err = parse_body(IDOC_XML.as_bytes(), Some(ct)).unwrap_err();
        let essence = ct.split(';').next().unwrap();
        assert_eq!(err, CoreError::UnsupportedContentType(essence.to_string()));
        assert_eq!(err.class(), crate::ErrorClass::Unsupported);
    }
    assert_eq!(
        parse_body(b"x", Some("image/png")).unwrap_err().to_string(),
        "unsupported content type image/png"
    );
}

#[test]
fn empty_bodies_are_malformed() {
    for ct in [None, Some("application/xml"), Some("application/json"), Some("text/plain")] {
        for body in ["", "   ", "\r\n\t ", "\u{feff}", "\u{feff} \n"] {
            let err = parse_body(body.as_bytes(), ct).unwrap_err();
            assert_eq!(err, CoreError::EmptyBody, "{ct:?} {body:?}");
            assert_eq!(err.class(), crate::ErrorClass::Malformed);
        }
    }
}

#[test]
fn the_declared_type_wins_over_the_content() {
    assert!(matches!(
        parse_body(PLAIN_JSON.as_bytes(), Some("application/xml")),
        Err(CoreError::TextOutsideRoot)
    ));
    assert!(matches!(
        parse_body(IDOC_XML.as_bytes(), Some("application/json")),
        Err(CoreError::InvalidJson(_))
    ));
}

#[test]
fn xml_bodies_use_the_charset() {
    let mut body = b"<ORDERS05><IDOC><EDI_DC40><SNDPRN>M\xFCller</SNDPRN>".to_vec();
    body.extend_from_slice(b"</EDI_DC40></IDOC></ORDERS05>");
    let parsed = parse_body(&body, Some("text/xml; charset=iso-8859-1")).unwrap();
    let control = parsed.documents[0].control().unwrap();
    assert_eq!(control.sndprn.as_deref(), Some("Müller"));
    assert!(matches!(
        parse_body(&body, Some("text/xml")),
        Err(CoreError::InvalidText { encoding: "UTF-8", offset: 35 })
    ));
}

#[test]
fn xml_has_no_idempotency_key() {
    let parsed = parse_body(IDOC_XML.as_bytes(), None).unwrap();
    assert_eq!(parsed.idempotency_key, None);
    assert_eq!(parsed.documents.len(), 1);
}

#[test]
fn body_format_serialises_in_snake_case() {
    let v = serde_json::to_value([BodyFormat::IdocXml, BodyFormat::IdocJson, BodyFormat::PlainJson]);
    assert_eq!(v.unwrap(), serde_json::json!(["idoc_xml", "idoc_json", "plain_json"]));
}

#[test]
fn xml_labelled_json_says_it_looks_like_xml() {
    let err = parse_body(IDOC_XML.as_bytes(), Some("application/json")).unwrap_err();
    assert!(matches!(err, CoreError::InvalidJson(_)), "{err:?}");
    assert!(
        err.to_string().ends_with("(the body looks like XML: send it with Content-Type: application/xml)"),
        "{err}"
    );
    let err = parse_body(b"{\"id\":", Some("application/json")).unwrap_err();
    assert!(!err.to_string().contains("XML"), "{err}");
}

#[test]
fn what_looks_like_a_message() {
    for body in
        [&b"<a/>"[..], b"\xEF\xBB\xBF \n{\"a\":1}", b"  [1]", b"\xFF\xFE<\0a\0/\0>\0", b"<\0a\0/\0>\0"]
    {
        assert!(looks_like_message(body), "{body:?}");
    }
    for body in [&b""[..], b"   ", b"# README", b"#!/bin/sh", b"hello"] {
        assert!(!looks_like_message(body), "{body:?}");
    }
}

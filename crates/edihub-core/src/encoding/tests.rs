//! Encoding detection and strict decoding.

use super::*;

fn xml_in(encoding: &str, body: &str) -> String {
    format!("<?xml version=\"1.0\" encoding=\"{encoding}\"?><A>{body}</A>")
}

fn utf16(text: &str, little_endian: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if bom {
        out.extend_from_slice(if little_endian { b"\xFF\xFE" } else { b"\xFE\xFF" });
    }
    for unit in text.encode_utf16() {
        let bytes = if little_endian { unit.to_le_bytes() } else { unit.to_be_bytes() };
        out.extend_from_slice(&bytes);
    }
    out
}

#[test]
fn utf8_is_the_default() {
    let text = decode_xml("<A>Müller</A>".as_bytes(), None).unwrap();
    assert_eq!(text, "<A>Müller</A>");
}

#[test]
fn utf8_is_borrowed_and_other_encodings_are_decoded_into_a_copy() {
    let body = "\u{FEFF}<A>Müller</A>".as_bytes();
    assert!(matches!(decode_xml(body, None).unwrap(), Cow::Borrowed("<A>Müller</A>")));
    let latin1 = decode_xml(b"<A>M\xFCller</A>", Some("text/xml; charset=ISO-8859-1")).unwrap();
    assert!(matches!(latin1, Cow::Owned(ref s) if s == "<A>Müller</A>"));
}

#[test]
fn utf8_bom_is_dropped() {
    let text = decode_xml(b"\xEF\xBB\xBF<A/>", None).unwrap();
    assert_eq!(text, "<A/>");
}

#[test]
fn invalid_utf8_names_the_byte_offset() {
    let mut body = b"<A>abc".to_vec();
    body.push(0xFF);
    body.extend_from_slice(b"</A>");
    assert_eq!(decode_xml(&body, None).unwrap_err(), CoreError::InvalidText { encoding: "UTF-8", offset: 6 });
    // The offset counts the BOM too: it is an offset into the body.
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend_from_slice(&body);
    assert_eq!(decode_xml(&with_bom, None).unwrap_err().to_string(), "invalid UTF-8 at byte 9");
}

#[test]
fn latin1_declared_decodes_umlauts_and_accents() {
    for label in ["ISO-8859-1", "latin1", "iso-8859-1"] {
        let mut body = format!("<?xml version=\"1.0\" encoding=\"{label}\"?><A>").into_bytes();
        body.extend_from_slice(b"M\xFCller \xE4 caf\xE9</A>");
        let text = decode_xml(&body, None).unwrap();
        assert!(text.ends_with("<A>Müller ä café</A>"), "{label}: {text}");
    }
}

#[test]
fn windows_1252_decodes_the_euro_sign() {
    let mut body = b"<?xml version='1.0' encoding='windows-1252'?><A>".to_vec();
    body.extend_from_slice(b"5 \x80</A>");
    assert!(decode_xml(&body, None).unwrap().ends_with("<A>5 €</A>"));
}

#[test]
fn utf16_le_and_be_with_bom() {
    let doc = xml_in("UTF-16", "Grüße €");
    for little in [true, false] {
        let body = utf16(&doc, little, true);
        let text = decode_xml(&body, None).unwrap();
        assert_eq!(text, doc);
    }
}

#[test]
fn utf16_without_bom_is_sniffed_from_the_first_character() {
    let doc = "<A>x</A>";
    assert_eq!(decode_xml(&utf16(doc, true, false), None).unwrap(), doc);
    assert_eq!(decode_xml(&utf16(doc, false, false), None).unwrap(), doc);
}

#[test]
fn a_bom_wins_over_the_declaration_and_the_charset() {
    let doc = xml_in("ISO-8859-1", "ü");
    let mut body = b"\xEF\xBB\xBF".to_vec();
    body.extend_from_slice(doc.as_bytes());
    let text = decode_xml(&body, Some("text/xml; charset=windows-1252")).unwrap();
    assert!(text.ends_with("<A>ü</A>"));
}

#[test]
fn the_declaration_wins_over_the_charset() {
    // Declared UTF-8, charset latin1: the two-byte ü must read as UTF-8.
    let body = xml_in("UTF-8", "ü");
    let text = decode_xml(body.as_bytes(), Some("application/xml; charset=ISO-8859-1")).unwrap();
    assert!(text.ends_with("<A>ü</A>"));
}

#[test]
fn the_charset_applies_without_a_declaration() {
    let body = b"<A>\xFC</A>";
    let text = decode_xml(body, Some("text/xml; charset=\"ISO-8859-1\"")).unwrap();
    assert_eq!(text, "<A>ü</A>");
    // Without the charset the same bytes are invalid UTF-8.
    assert!(matches!(decode_xml(body, Some("text/xml")), Err(CoreError::InvalidText { offset: 3, .. })));
}

#[test]
fn unknown_labels_are_refused() {
    let body = xml_in("klingon", "");
    assert_eq!(decode_xml(body.as_bytes(), None).unwrap_err(), CoreError::UnknownEncoding("klingon".into()));
    assert_eq!(
        decode_xml(b"<A/>", Some("text/xml; charset=nope")).unwrap_err(),
        CoreError::UnknownEncoding("nope".into())
    );
}

#[test]
fn utf16_declared_without_a_bom_is_refused() {
    let body = xml_in("UTF-16", "");
    assert_eq!(decode_xml(body.as_bytes(), None).unwrap_err(), CoreError::Utf16WithoutBom("UTF-16".into()));
}

#[test]
fn broken_utf16_is_refused_with_an_offset() {
    // A lone high surrogate (D800) followed by `<` in UTF-16LE, after the BOM.
    let body = b"\xFF\xFE<\x00\x00\xD8<\x00";
    let err = decode_xml(body, None).unwrap_err();
    assert_eq!(err.to_string(), "invalid UTF-16LE at byte 4");
}

#[test]
fn declared_encoding_parsing() {
    assert_eq!(declared_encoding(b"<?xml version=\"1.0\" encoding = 'latin1' ?><A/>"), Some("latin1".into()));
    assert_eq!(declared_encoding(b"<?xml version=\"1.0\"?><A/>"), None);
    assert_eq!(declared_encoding(b"<A encoding=\"x\"/>"), None);
    assert_eq!(declared_encoding(b"<?xml encoding=\"x\""), None);
    assert_eq!(declared_encoding(b"<?xml encoding=x?>"), None);
}

#[test]
fn charset_parameter_parsing() {
    assert_eq!(charset_param(Some("text/xml; Charset=\"UTF-8\"")), Some("UTF-8".into()));
    assert_eq!(charset_param(Some("text/xml;foo=bar;charset=latin1")), Some("latin1".into()));
    assert_eq!(charset_param(Some("text/xml")), None);
    assert_eq!(charset_param(Some("text/xml; charset=")), None);
    assert_eq!(charset_param(None), None);
}

#[test]
fn json_must_be_utf8() {
    assert_eq!(decode_json(b"\xEF\xBB\xBF{}").unwrap(), "{}");
    assert_eq!(decode_json(b"\xFF\xFE{\x00}\x00"), Err(CoreError::JsonNotUtf8));
    assert_eq!(decode_json(b"{\"a\":\"\xC3\"}").unwrap_err().to_string(), "invalid UTF-8 at byte 6");
}

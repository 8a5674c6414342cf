//! Reading and writing MIME entities: exact spans, folding, bounds.

use super::*;

#[test]
fn an_entity_keeps_its_exact_bytes() {
    let raw = b"Content-Type: application/edi-x12\r\nContent-Disposition: attachment;\r\n filename=\"po.x12\"\r\n\r\nISA*00~\r\n";
    let entity = parse_entity(raw).unwrap();
    assert_eq!(entity.raw, raw);
    assert_eq!(entity.body, b"ISA*00~\r\n");
    assert_eq!(entity.headers.get("content-type"), Some("application/edi-x12"));
    assert_eq!(entity.headers.get("Content-Disposition"), Some("attachment; filename=\"po.x12\""));
    assert!(entity.content_type().unwrap().is("application/edi-x12"));
}

#[test]
fn lf_only_entities_and_empty_header_sections_read() {
    let entity = parse_entity(b"Content-Type: text/plain\n\nhello\n").unwrap();
    assert_eq!(entity.body, b"hello\n");
    let bare = parse_entity(b"\r\nbody").unwrap();
    assert_eq!(bare.body, b"body");
    assert!(bare.content_type().unwrap().is("text/plain"));
}

#[test]
fn malformed_header_sections_are_refused_with_the_reason() {
    let cases: [(&[u8], &str); 5] = [
        (b"Content-Type: text/plain\r\n", "no blank line"),
        (b"no colon here\r\n\r\nx", "has no colon"),
        (b" folded first\r\n\r\nx", "continuation"),
        (b"Bad Name: x\r\n\r\nx", "not a token"),
        (b"X: \xff\r\n\r\n", "not ASCII"),
    ];
    for (raw, reason) in cases {
        match parse_entity(raw) {
            Err(As2Error::Malformed(text)) => assert!(text.contains(reason), "{text} lacks {reason}"),
            other => panic!("{raw:?} gave {other:?}"),
        }
    }
}

#[test]
fn header_sections_are_bounded() {
    let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
    let err = parse_entity(format!("{many}\r\n").as_bytes()).unwrap_err();
    assert!(matches!(err, As2Error::Malformed(t) if t.contains("more than 64 header fields")));
    let long = format!("X: {}\r\n\r\n", "a".repeat(MAX_HEADER_BYTES + 10));
    let err = parse_entity(long.as_bytes()).unwrap_err();
    assert!(matches!(err, As2Error::Malformed(t) if t.contains("longer than")));
}

#[test]
fn content_types_parse_with_quoted_parameters() {
    let ct = ContentType::parse(
        "Multipart/Signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256;\tboundary=\"a;b \\\"c\\\"\";",
    )
    .unwrap();
    assert_eq!(ct.mime(), "multipart/signed");
    assert_eq!(ct.param("protocol"), Some("application/pkcs7-signature"));
    assert_eq!(ct.param("micalg"), Some("sha-256"));
    assert_eq!(ct.param("boundary"), Some("a;b \"c\""));
    assert!(ContentType::parse("nonsense").is_err());
    assert!(ContentType::parse("a/b; x=\"open").is_err());
    assert!(ContentType::parse("a/b; novalue").is_err());
}

#[test]
fn multipart_parts_are_the_exact_spans_between_delimiters() {
    let body = b"preamble\r\n--b1\r\nContent-Type: text/plain\r\n\r\none\r\n\r\n--b1  \r\nX: y\r\n\r\ntwo\r\n--b1--\r\nepilogue";
    let parts = split_multipart(body, "b1").unwrap();
    assert_eq!(parts, vec![&b"Content-Type: text/plain\r\n\r\none\r\n"[..], &b"X: y\r\n\r\ntwo"[..]]);
    // A boundary that is only a prefix of a line is not a delimiter.
    let body = b"--b1\r\nA: 1\r\n\r\n--b1x is text\r\n--b1--";
    assert_eq!(split_multipart(body, "b1").unwrap(), vec![&b"A: 1\r\n\r\n--b1x is text"[..]]);
    // Nor is one inside a line, even followed by a line break.
    let body = b"--b1\r\nA: 1\r\n\r\nsee --b1\r\nx --b1--\r\n--b1--";
    assert_eq!(split_multipart(body, "b1").unwrap(), vec![&b"A: 1\r\n\r\nsee --b1\r\nx --b1--"[..]]);
}

#[test]
fn broken_multiparts_are_refused() {
    assert!(
        matches!(split_multipart(b"--b\r\nA: 1\r\n\r\nx\r\n", "b"), Err(As2Error::Malformed(t)) if t.contains("no closing boundary"))
    );
    assert!(
        matches!(split_multipart(b"--b--\r\n", "b"), Err(As2Error::Malformed(t)) if t.contains("no parts"))
    );
    assert!(split_multipart(b"x", "").is_err());
    assert!(split_multipart(b"x", &"b".repeat(71)).is_err());
    let many: Vec<u8> =
        (0..=MAX_PARTS).flat_map(|_| b"--b\r\nA: 1\r\n\r\nx\r\n".to_vec()).chain(b"--b--".to_vec()).collect();
    assert!(
        matches!(split_multipart(&many, "b"), Err(As2Error::Malformed(t)) if t.contains("more than 8 parts"))
    );
}

#[test]
fn written_multiparts_read_back() {
    let one = write_entity(&[("Content-Type", "text/plain")].into_iter().collect(), b"a\r\nb");
    let two = write_entity(&Headers::new(), b"x");
    let boundary = new_boundary();
    let body = write_multipart(&boundary, &[&one, &two]);
    assert_eq!(split_multipart(&body, &boundary).unwrap(), vec![&one[..], &two[..]]);
}

#[test]
fn transfer_encodings_decode_or_are_refused() {
    assert_eq!(&*decode_transfer(Some("binary"), b"\x00\xff").unwrap(), b"\x00\xff");
    assert_eq!(&*decode_transfer(None, b"abc").unwrap(), b"abc");
    let lines = base64_lines(&[7u8; 100]);
    assert!(lines.split(|&b| b == b'\n').all(|l| l.len() <= 77));
    assert_eq!(&*decode_transfer(Some(" Base64 "), &lines).unwrap(), &[7u8; 100][..]);
    assert!(matches!(decode_transfer(Some("base64"), b"@@@"), Err(As2Error::Malformed(_))));
    assert!(
        matches!(decode_transfer(Some("quoted-printable"), b"a=20"), Err(As2Error::Malformed(t)) if t.contains("not supported"))
    );
}

#[test]
fn canonical_form_turns_bare_lf_into_crlf_only() {
    assert!(matches!(canonical_crlf(b"a\r\nb"), Cow::Borrowed(_)));
    assert_eq!(&*canonical_crlf(b"a\nb\r\nc\n"), b"a\r\nb\r\nc\r\n");
}

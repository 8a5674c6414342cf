//! The rendering built while parsing, and every well-formedness rule it enforces.

use serde_json::json;

use super::*;

fn err(text: &str) -> CoreError {
    parse(text).unwrap_err()
}

#[test]
fn builds_the_rendering_with_local_names_attributes_and_trimmed_text() {
    let root = parse(
        r#"<?xml version="1.0"?>
        <ns0:ORDERS05 xmlns:ns0="urn:x" xmlns="urn:y">
          <IDOC BEGIN="1" ns0:EXTRA=" v ">
            <ns0:E1EDK01 SEGMENT="1">
              <BELNR>  4500012345  </BELNR>
              <EMPTY/>
            </ns0:E1EDK01>
          </IDOC>
        </ns0:ORDERS05>"#,
    )
    .unwrap();
    assert_eq!(root.name, "ORDERS05");
    assert_eq!(root.soap_body, None);
    // Namespace declarations are dropped: the root has no `@` member.
    assert_eq!(
        root.value,
        json!({"IDOC": {
            "@BEGIN": "1",
            "@EXTRA": "v",
            "E1EDK01": {"@SEGMENT": "1", "BELNR": "4500012345", "EMPTY": ""}
        }})
    );
}

#[test]
fn entities_char_refs_and_cdata_become_text() {
    let root = parse("<A>&lt;&gt;&amp;&apos;&quot; &#65;&#x42; <![CDATA[<raw & text>]]></A>").unwrap();
    assert_eq!(root.value, json!("<>&'\" AB <raw & text>"));
    let attr = parse("<A k=\"&amp;&#x41;\"/>").unwrap();
    assert_eq!(attr.value, json!({"@k": "&A"}));
}

#[test]
fn comments_and_processing_instructions_are_ignored() {
    let root =
        parse("<?xml version='1.0'?><!-- c --><?pi x?><A><!-- in -->t<?pi?></A><!-- after -->").unwrap();
    assert_eq!((root.name.as_str(), root.value), ("A", json!("t")));
}

#[test]
fn undefined_entities_are_refused() {
    assert_eq!(err("<A>&foo;</A>"), CoreError::UndefinedEntity("foo".into()));
    assert_eq!(err("<A k=\"&foo;\"/>"), CoreError::UndefinedEntity("foo".into()));
    assert_eq!(err("<A>&foo;</A>").to_string(), "undefined entity &foo;");
}

#[test]
fn invalid_char_refs_are_refused() {
    assert_eq!(err("<A>&#0;</A>"), CoreError::InvalidCharRef("#0".into()));
    assert_eq!(err("<A>&#xZZ;</A>"), CoreError::InvalidCharRef("#xZZ".into()));
}

#[test]
fn any_doctype_is_refused() {
    assert_eq!(err("<!DOCTYPE A><A/>"), CoreError::Doctype);
}

#[test]
fn billion_laughs_is_refused() {
    let doc = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<lolz>&lol3;</lolz>"#;
    assert_eq!(err(doc), CoreError::Doctype);
}

#[test]
fn xxe_is_refused() {
    let doc = r#"<?xml version="1.0"?>
<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<ORDERS05><IDOC><E1EDK01><BELNR>&xxe;</BELNR></E1EDK01></IDOC></ORDERS05>"#;
    assert_eq!(err(doc), CoreError::Doctype);
    // The same reference without its DTD is merely undefined.
    assert_eq!(err("<A>&xxe;</A>"), CoreError::UndefinedEntity("xxe".into()));
}

#[test]
fn truncated_documents_name_the_open_element() {
    let full = "<ORDERS05><IDOC><E1EDK01><BELNR>1</BELNR></E1EDK01></IDOC></ORDERS05>";
    assert_eq!(err(&full[..full.find("</E1EDK01>").unwrap()]), CoreError::XmlTruncated("E1EDK01".into()));
    assert_eq!(
        err("<ORDERS05><IDOC><E1EDK01><BEL").to_string(),
        "XML is truncated: element <E1EDK01> is not closed"
    );
    assert_eq!(err("<ORDERS05><IDOC a=\"1"), CoreError::XmlTruncated("ORDERS05".into()));
    assert_eq!(err("<A><!-- open"), CoreError::XmlTruncated("A".into()));
    // Cutting every prefix of a document never passes.
    for cut in 1..full.len() {
        assert!(parse(&full[..cut]).is_err(), "prefix of {cut} bytes parsed");
    }
}

#[test]
fn mismatched_and_unmatched_end_tags_are_refused() {
    assert_eq!(
        err("<A><B></C></A>"),
        CoreError::MismatchedEndTag { expected: "B".into(), found: "C".into() }
    );
    assert!(matches!(err("<A/></B>"), CoreError::XmlSyntax { .. }));
}

#[test]
fn a_second_root_is_refused() {
    assert_eq!(err("<A/><B/>"), CoreError::MultipleRoots { first: "A".into(), second: "B".into() });
    assert!(matches!(err("<A></A><B></B>"), CoreError::MultipleRoots { .. }));
}

#[test]
fn text_outside_the_root_is_refused_but_whitespace_is_fine() {
    assert_eq!(err("junk<A/>"), CoreError::TextOutsideRoot);
    assert_eq!(err("<A/>junk"), CoreError::TextOutsideRoot);
    assert_eq!(err("<A/>&amp;"), CoreError::TextOutsideRoot);
    assert_eq!(parse(" \r\n\t<A/>\n ").unwrap().name, "A");
}

#[test]
fn a_document_without_elements_is_refused() {
    assert_eq!(err(""), CoreError::NoRoot);
    assert_eq!(err("<?xml version=\"1.0\"?><!-- only -->"), CoreError::NoRoot);
}

#[test]
fn nesting_is_limited_to_256() {
    let ok = format!("{}{}", "<a>".repeat(MAX_DEPTH), "</a>".repeat(MAX_DEPTH));
    assert!(parse(&ok).is_ok());
    let deep = format!("{}{}", "<a>".repeat(MAX_DEPTH + 1), "</a>".repeat(MAX_DEPTH + 1));
    assert_eq!(err(&deep), CoreError::XmlTooDeep(256));
    let deep_empty = format!("{}<b/>{}", "<a>".repeat(MAX_DEPTH), "</a>".repeat(MAX_DEPTH));
    assert_eq!(err(&deep_empty).to_string(), "XML nesting deeper than 256");
}

#[test]
fn hundred_thousand_levels_fail_without_stack_overflow() {
    let hostile = "<a>".repeat(100_000);
    assert_eq!(err(&hostile), CoreError::XmlTooDeep(256));
}

#[test]
fn other_syntax_errors_carry_an_offset() {
    match err("<A><!X></A>") {
        CoreError::XmlSyntax { reason, .. } => assert!(!reason.is_empty()),
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(err("<A b=\"1\" b=\"2\"/>"), CoreError::XmlSyntax { .. }));
}

#[test]
fn mixed_content_keeps_its_text() {
    let root = parse("<A> x <B/> y </A>").unwrap();
    assert_eq!(root.value, json!({"#text": "x  y", "B": ""}));
}

#[test]
fn crlf_line_ends_are_normalised_inside_text() {
    let root = parse("<A>one\r\ntwo</A>").unwrap();
    assert_eq!(root.value, json!("one\ntwo"));
    // Also in CDATA and in text after the first piece; a lone CR is a line end too.
    let root = parse("<A><![CDATA[a\r\nb]]>\r\n c\rd</A>").unwrap();
    assert_eq!(root.value, json!("a\nb\n c\nd"));
    // Whitespace-only text with CRs is still skipped, and allowed outside the root.
    assert_eq!(parse("\r\n<A>\r\n<B/>\r\n</A>\r\n").unwrap().value, json!({"B": ""}));
}

#[test]
fn whitespace_between_children_is_skipped_but_not_after_text() {
    let root = parse("<A>\n  <B/>\n  x<C/>  <D/>y\n</A>").unwrap();
    assert_eq!(root.value, json!({"#text": "x  y", "B": "", "C": "", "D": ""}));
    // Whitespace from references counts the same way; trimming is Unicode's.
    assert_eq!(parse("<A>&#32;x&#160;</A>").unwrap().value, json!("x"));
    assert_eq!(parse("<A> \u{3000}x </A>").unwrap().value, json!("x"));
}

#[test]
fn whitespace_inside_text_survives_references_comments_and_cdata() {
    // Only whitespace before an element's first text is skipped: what
    // follows a reference, a comment or CDATA inside text is kept.
    assert_eq!(parse("<A>a &amp; b</A>").unwrap().value, json!("a & b"));
    assert_eq!(parse("<A>a<!-- c -->  b</A>").unwrap().value, json!("a  b"));
    assert_eq!(parse("<A>a<![CDATA[ ]]>  b</A>").unwrap().value, json!("a   b"));
    assert_eq!(parse("<A>  <!-- c -->  &lt;  <?pi?>  b  </A>").unwrap().value, json!("<    b"));
}

#[test]
fn repeats_become_arrays_in_document_order() {
    let root = parse("<A><B>1</B><C/><B>2</B><B k=\"3\"/></A>").unwrap();
    assert_eq!(root.value, json!({"B": ["1", "2", {"@k": "3"}], "C": ""}));
}

#[test]
fn elements_named_like_text_or_attributes_merge_after_them() {
    // quick-xml does not check names, so `#text` and `@k` are elements here;
    // they merge with the text and the attribute, which come first.
    let root = parse("<A k=\"1\"><#text>c</#text>t<@k>d</@k><#text/></A>").unwrap();
    assert_eq!(root.value, json!({"#text": ["t", "c", ""], "@k": ["1", "d"]}));
    let root = parse("<A><#text>c</#text>t</A>").unwrap();
    assert_eq!(root.value, json!({"#text": ["t", "c"]}));
}

#[test]
fn attributes_sharing_a_local_name_keep_the_last() {
    let root = parse("<A a:x=\"1\" b:x=\"2\" y=\"3\"/>").unwrap();
    assert_eq!(root.value, json!({"@x": "2", "@y": "3"}));
}

#[test]
fn repeated_attributes_are_refused_before_and_after_the_set_takes_over() {
    for count in [2, open::FEW, open::FEW + 1, 40] {
        let attrs: String = (0..count).map(|i| format!(" a{i}=\"{i}\"")).collect();
        let ok = format!("<A{attrs}/>");
        assert_eq!(parse(&ok).unwrap().value.as_object().unwrap().len(), count, "{count}");
        for dup in [0, count - 1] {
            let text = format!("<A{attrs} a{dup}=\"x\"/>");
            let expected = format!("attribute `a{dup}` repeated in <A>");
            match err(&text) {
                CoreError::XmlSyntax { reason, .. } => assert_eq!(reason, expected),
                other => panic!("{count}/{dup}: unexpected {other:?}"),
            }
        }
    }
}

#[test]
fn the_first_soap_body_is_read_as_it_closes() {
    let body = |text: &str| parse(text).unwrap().soap_body;
    assert_eq!(
        body("<s:Envelope><s:Header/><s:Body> <X a=\"1\"/> </s:Body></s:Envelope>"),
        Some(SoapBody::One("X".into(), json!({"@a": "1"})))
    );
    assert_eq!(body("<Envelope><Body/></Envelope>"), Some(SoapBody::Count(0)));
    assert_eq!(body("<Envelope><Body>text</Body></Envelope>"), Some(SoapBody::Count(0)));
    assert_eq!(body("<Envelope><Body><X/><X/></Body></Envelope>"), Some(SoapBody::Count(2)));
    assert_eq!(body("<Envelope><Body/><Body><X/></Body></Envelope>"), Some(SoapBody::Count(0)));
    assert_eq!(body("<Envelope><Header/></Envelope>"), None);
    // Only directly under an `Envelope` root.
    assert_eq!(body("<Envelope><H><Body><X/></Body></H></Envelope>"), None);
    assert_eq!(body("<Root><Body><X/></Body></Root>"), None);
    // An element named like the Body's text or attribute is still its child.
    assert_eq!(
        body("<Envelope><Body k=\"1\">t<@k>v</@k></Body></Envelope>"),
        Some(SoapBody::One("@k".into(), json!("v")))
    );
    assert_eq!(
        body("<Envelope><Body>t<#text/></Body></Envelope>"),
        Some(SoapBody::One("#text".into(), json!("")))
    );
}

#[test]
fn names_are_borrowed_from_the_text_when_they_come_from_it() {
    let text = "<A>x</A>";
    assert!(matches!(reborrow(text, &text[1..2]), Cow::Borrowed("A")));
    let elsewhere = String::from("A");
    assert!(matches!(reborrow(text, &elsewhere), Cow::Owned(ref s) if s == "A"));
    assert!(matches!(reborrow(text, ""), Cow::Owned(ref s) if s.is_empty()));
}

#[test]
fn control_characters_are_found_at_their_offset_wherever_they_are() {
    // The scan goes by 64-byte chunks: both sides of a chunk boundary.
    for at in [0, 1, 62, 63, 64, 65, 127, 128, 199] {
        let mut text = format!("<A>{}</A>", "x".repeat(200)).into_bytes();
        text[at.max(3)] = 0x01;
        let text = String::from_utf8(text).unwrap();
        match err(&text) {
            CoreError::XmlSyntax { offset, reason } => {
                assert_eq!(offset, at.max(3) as u64);
                assert_eq!(reason, "control character U+0001 is not allowed in XML 1.0");
            }
            other => panic!("{at}: unexpected {other:?}"),
        }
    }
}

//! The element tree and every well-formedness rule it enforces.

use super::*;

fn err(text: &str) -> CoreError {
    parse(text).unwrap_err()
}

#[test]
fn builds_a_tree_with_local_names_attributes_and_trimmed_text() {
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
    assert!(root.attrs.is_empty(), "namespace declarations are dropped");
    let idoc = &root.children[0];
    assert_eq!(idoc.name, "IDOC");
    assert_eq!(idoc.attrs, vec![("BEGIN".into(), "1".into()), ("EXTRA".into(), "v".into())]);
    let seg = &idoc.children[0];
    assert_eq!(seg.name, "E1EDK01");
    assert_eq!(seg.text, "");
    assert_eq!(seg.children[0].text, "4500012345");
    assert_eq!(seg.children[1], Element::named("EMPTY"));
    assert_eq!(seg.children.len(), 2);
}

#[test]
fn entities_char_refs_and_cdata_become_text() {
    let root = parse("<A>&lt;&gt;&amp;&apos;&quot; &#65;&#x42; <![CDATA[<raw & text>]]></A>").unwrap();
    assert_eq!(root.text, "<>&'\" AB <raw & text>");
    let attr = parse("<A k=\"&amp;&#x41;\"/>").unwrap();
    assert_eq!(attr.attrs, vec![("k".into(), "&A".into())]);
}

#[test]
fn comments_and_processing_instructions_are_ignored() {
    let root =
        parse("<?xml version='1.0'?><!-- c --><?pi x?><A><!-- in -->t<?pi?></A><!-- after -->").unwrap();
    assert_eq!(root.text, "t");
    assert!(root.children.is_empty());
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
    assert_eq!(root.text, "x  y");
    assert_eq!(root.children.len(), 1);
}

#[test]
fn crlf_line_ends_are_normalised_inside_text() {
    let root = parse("<A>one\r\ntwo</A>").unwrap();
    assert_eq!(root.text, "one\ntwo");
}

//! Property 1: an IDoc is one message whatever its syntax (XML ≡ JSON).

use super::*;

pub(crate) fn parse(bytes: &[u8], content_type: &str) -> ParsedBody {
    parse_body(bytes, Some(content_type))
        .unwrap_or_else(|e| panic!("refused ({e}):\n{}", String::from_utf8_lossy(bytes)))
}

pub(crate) fn keys(srcs: &[String]) -> Vec<KeyPath> {
    srcs.iter().map(|s| KeyPath::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))).collect()
}

/// The fingerprint specs every pair of readings is compared under.
pub(crate) fn specs(paths: &[GenPath], pick: usize) -> Vec<(Vec<KeyPath>, Vec<KeyPath>)> {
    let texts: Vec<String> = paths.iter().map(GenPath::text).collect();
    let n = texts.len().max(1);
    let some: Vec<String> = texts.iter().skip(pick % n).take(3).cloned().collect();
    let excluded: Vec<String> = texts.iter().skip((pick / 3) % n).take(1).cloned().collect();
    vec![
        (keys(&some), vec![]),
        (vec![], vec![]),
        (keys(&["$".to_string()]), keys(&excluded)),
        (keys(&["$..BELNR".to_string(), "E1EDK02[QUALF=001].BELNR".to_string()]), vec![]),
    ]
}

pub(crate) fn assert_same_message(x: &Document, j: &Document, idoc: &Idoc, paths: &[GenPath], pick: usize) {
    assert_eq!(x.control(), j.control(), "control record");
    assert_eq!(x.root_name(), j.root_name(), "root name");
    let t = x.message_type(None, &|_| false).expect("type");
    assert_eq!(j.message_type(None, &|_| false).expect("type"), t);
    assert_eq!(t, idoc.idoctyp);
    assert_eq!(x.docnum(), Some(idoc.docnum.as_str()));
    for path in paths {
        let p = KeyPath::parse(&path.text()).expect("generated path parses");
        let want = path.expected(idoc);
        assert_eq!(x.values(&p), want, "XML values at {}", path.text());
        assert_eq!(j.values(&p), want, "JSON values at {}", path.text());
    }
    for extra in ["$..BELNR", "$..QUALF", "$..['@SEGMENT']", "E1EDP01.E1EDP19", "E1EDK01.@SEGMENT"] {
        let p = KeyPath::parse(extra).expect("path");
        assert_eq!(x.values(&p), j.values(&p), "values at {extra}");
    }
    for (key_fields, exclude_fields) in specs(paths, pick) {
        let spec = FingerprintSpec {
            message_type: &t,
            key_fields: &key_fields,
            exclude_fields: &exclude_fields,
            scope: edihub_core::FingerprintScope::NONE,
        };
        let (fx, fj) = (fingerprint(x, &spec), fingerprint(j, &spec));
        assert_eq!(fx, fj, "fingerprints under {key_fields:?} minus {exclude_fields:?}");
        assert!(fx.hex.is_some(), "an IDoc with a DOCNUM always has a fingerprint");
    }
    assert_eq!(x.value(), j.value(), "rendered documents");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_idoc_is_the_same_message_as_xml_and_as_json(packet in packet(), seed in any::<u64>(), pick in 0usize..64) {
        let xml = render_xml(&packet, seed);
        let json = render_json(&packet, seed);
        let from_xml = parse(&xml, "application/xml");
        let from_json = parse(json.as_bytes(), "application/json");
        prop_assert_eq!(from_xml.format, BodyFormat::IdocXml);
        prop_assert_eq!(from_json.format, BodyFormat::IdocJson);
        prop_assert_eq!(from_xml.documents.len(), packet.idocs.len());
        prop_assert_eq!(from_json.documents.len(), packet.idocs.len());
        for ((x, j), idoc) in from_xml.documents.iter().zip(&from_json.documents).zip(&packet.idocs) {
            assert_same_message(x, j, idoc, &gen_paths(idoc), pick);
        }
    }

    #[test]
    fn xml_layout_prefixes_envelope_and_encoding_never_change_an_idoc(packet in packet(), a in any::<u64>(), b in any::<u64>()) {
        let first = parse(&render_xml(&packet, a), "application/xml");
        let second = parse(&render_xml(&packet, b), "application/xml");
        prop_assert_eq!(&first.documents, &second.documents);
        let third = parse(render_json(&packet, b).as_bytes(), "application/json");
        prop_assert_eq!(&first.documents, &third.documents);
    }
}

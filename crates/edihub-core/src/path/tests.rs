//! Key path syntax: what parses, what does not, and what Display gives back.

use super::*;

fn steps(src: &str) -> Vec<Step> {
    match KeyPath::parse(src).unwrap() {
        KeyPath::Idoc(p) => p.steps,
        KeyPath::Json(_) => panic!("{src} parsed as JSONPath"),
    }
}

fn step(name: &str, filters: &[(&str, &str)]) -> Step {
    Step { name: name.into(), filters: filters.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect() }
}

fn reason(src: &str) -> String {
    match KeyPath::parse(src).unwrap_err() {
        CoreError::InvalidKeyPath { path, reason } => {
            assert_eq!(path, src.trim());
            reason
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn simple_idoc_paths() {
    assert_eq!(steps("E1EDK01.BELNR"), vec![step("E1EDK01", &[]), step("BELNR", &[])]);
    assert_eq!(steps("EDI_DC40.DOCNUM")[1], step("DOCNUM", &[]));
    assert_eq!(steps("BELNR"), vec![step("BELNR", &[])]);
    assert_eq!(steps("/ABC/E1SEG.FIELD-1")[0], step("/ABC/E1SEG", &[]));
}

#[test]
fn qualifier_filters() {
    assert_eq!(
        steps("E1EDK02[QUALF=001].BELNR"),
        vec![step("E1EDK02", &[("QUALF", "001")]), step("BELNR", &[])]
    );
    assert_eq!(steps("E1EDP01.E1EDP19[QUALF=002].IDTNR")[1], step("E1EDP19", &[("QUALF", "002")]));
    assert_eq!(steps("S[A=1][B=2]")[0], step("S", &[("A", "1"), ("B", "2")]));
    assert_eq!(steps("S[ A = x y ]")[0], step("S", &[("A", "x y")]));
}

#[test]
fn quoted_filter_values() {
    assert_eq!(steps("S[A='001']")[0], step("S", &[("A", "001")]));
    assert_eq!(steps("S[A=\"a.b\"]")[0], step("S", &[("A", "a.b")]));
    assert_eq!(steps("S[A=]")[0], step("S", &[("A", "")]));
}

#[test]
fn invalid_idoc_paths() {
    assert_eq!(reason("E1EDK02[QUALF=001"), "`[` after `E1EDK02` is not closed");
    assert_eq!(reason(""), "the path is empty");
    assert_eq!(reason("   "), "the path is empty");
    assert_eq!(reason(".A"), "empty step at the start");
    assert_eq!(reason("A..B"), "empty step after step 1");
    assert_eq!(reason("A."), "empty step after step 1");
    assert_eq!(reason("[Q=1]"), "empty step at the start");
    assert_eq!(reason("A[QUALF]"), "filter `[QUALF]` needs the form [FIELD=VALUE]");
    assert_eq!(reason("A[=1]"), "filter `[=1]` has no valid field name");
    assert_eq!(reason("A[Q=1]B"), "unexpected `B` after `A`");
    assert_eq!(reason("A B"), "unexpected ` ` in step `A B`");
    assert_eq!(reason("A]"), "unexpected `]` in step `A]`");
    let err = KeyPath::parse("E1EDK02[QUALF=001").unwrap_err();
    assert_eq!(err.to_string(), "invalid key path `E1EDK02[QUALF=001`: `[` after `E1EDK02` is not closed");
    assert_eq!(err.class(), crate::ErrorClass::Malformed);
}

#[test]
fn jsonpath_is_recognised_by_the_dollar() {
    for src in ["$", "$.order.id", "$.E1EDK02[?(@.QUALF=='001')].BELNR", "$..id", "$.a[*].b"] {
        assert!(matches!(KeyPath::parse(src).unwrap(), KeyPath::Json(_)), "{src}");
    }
    assert!(KeyPath::parse("$").unwrap().is_root());
    assert!(KeyPath::parse(" $ ").unwrap().is_root());
    assert!(!KeyPath::parse("$.a").unwrap().is_root());
    assert!(!KeyPath::parse("A").unwrap().is_root());
}

#[test]
fn invalid_jsonpath_is_refused_at_parse_time() {
    for src in ["$.", "$[", "$.a[?(@.b==]", "$$"] {
        let err = KeyPath::parse(src).unwrap_err();
        assert!(matches!(&err, CoreError::InvalidKeyPath { path, .. } if path == src), "{src}: {err:?}");
    }
}

#[test]
fn display_and_from_str_give_back_the_source() {
    for src in ["E1EDK02[QUALF=001].BELNR", "$.order.id", "S[A='1'][B=2].C"] {
        let parsed: KeyPath = src.parse().unwrap();
        assert_eq!(parsed.to_string(), src);
        assert_eq!(parsed.as_str(), src);
    }
    assert_eq!(KeyPath::parse("  A.B ").unwrap().to_string(), "A.B");
}

#[test]
fn equal_sources_give_equal_paths() {
    assert_eq!(KeyPath::parse("A[Q=1].B").unwrap(), KeyPath::parse("A[Q=1].B").unwrap());
    assert_ne!(KeyPath::parse("$.a").unwrap(), KeyPath::parse("$.b").unwrap());
}

#[test]
fn serde_round_trip_through_the_source_text() {
    let paths: Vec<KeyPath> =
        serde_json::from_str(r#"["E1EDK02[QUALF=001].BELNR", " $.order.id "]"#).unwrap();
    assert_eq!(paths[1].as_str(), "$.order.id");
    assert_eq!(serde_json::to_string(&paths).unwrap(), r#"["E1EDK02[QUALF=001].BELNR","$.order.id"]"#);
    let err = serde_json::from_str::<KeyPath>(r#""A[Q=1""#).unwrap_err();
    assert!(err.to_string().starts_with("invalid key path `A[Q=1`"), "{err}");
}

//! Unique member names, JSON pointers, and equality with serde_json's `Value`.

use serde_json::json;

use super::*;

fn duplicate(text: &str) -> String {
    match parse(text) {
        Err(CoreError::DuplicateMember(what)) => what,
        other => panic!("expected a duplicate member, got {other:?}"),
    }
}

#[test]
fn values_equal_serde_json_where_names_are_unique() {
    let text = r#"{"a":[1,-2,3.5,1e400,18446744073709551615,"x\u00e9",true,null,{}],"b":{"c":[]}}"#;
    let ours = parse(text);
    let theirs: Result<Value, _> = serde_json::from_str(text);
    // 1e400 overflows f64: serde_json refuses it, and so do we.
    assert!(theirs.is_err() && matches!(ours, Err(CoreError::InvalidJson(_))));
    let text = r#"{"a":[1,-2,3.5,18446744073709551615,"x\u00e9",true,null,{}],"b":{"c":[]},"A":0}"#;
    assert_eq!(parse(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    assert_eq!(parse(" 7 ").unwrap(), json!(7));
}

#[test]
fn a_repeated_name_is_named_with_its_pointer_and_position() {
    assert_eq!(duplicate(r#"{"id":"a1","id":"a2"}"#), "`id` (JSON pointer `/id`) at line 1 column 21");
    let nested = duplicate(r#"{"items":[{"sku":1},{"sku":2,"sku":3}]}"#);
    assert_eq!(nested, "`sku` (JSON pointer `/items/1/sku`) at line 1 column 37");
    // RFC 6901 escapes `~` and `/` in the pointer.
    assert!(duplicate(r#"{"a/b~":{"x":1,"x":2}}"#).contains("`/a~1b~0/x`"));
    // Names are compared after unescaping: `\u0069d` is `id`.
    assert!(duplicate(r#"{"id":1,"\u0069d":2}"#).starts_with("`id`"));
}

#[test]
fn names_differing_in_case_or_nesting_are_distinct() {
    assert!(parse(r#"{"id":1,"ID":2,"x":{"id":3}}"#).is_ok());
    assert!(parse(r#"[{"id":1},{"id":2}]"#).is_ok());
}

#[test]
fn syntax_and_depth_errors_keep_their_meaning() {
    assert_eq!(parse(&"[".repeat(200)).unwrap_err(), CoreError::JsonTooDeep);
    assert!(matches!(parse("{} x"), Err(CoreError::InvalidJson(m)) if m.contains("trailing characters")));
    assert!(
        matches!(parse(r#"{"a" 1}"#), Err(CoreError::InvalidJson(m)) if m == "expected `:` at line 1 column 6")
    );
}

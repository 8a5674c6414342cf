//! Path evaluation on JSON values, normalised paths, and removal.

use serde_json::json;

use super::*;

fn path(src: &str) -> KeyPath {
    KeyPath::parse(src).unwrap()
}

fn idoc() -> Value {
    json!({
        "@BEGIN": "1",
        "EDI_DC40": {"DOCNUM": "0000000000004711", "MESTYP": "ORDERS"},
        "E1EDK01": {"BELNR": " 4500012345 ", "BLANK": "  "},
        "E1EDK02": [
            {"QUALF": "001", "BELNR": "PO-1"},
            {"QUALF": "002", "BELNR": "SO-2"},
            {"QUALF": " 001 ", "BELNR": "PO-3", "DATUM": "20240611"}
        ],
        "E1EDP01": [
            {"POSEX": "10", "E1EDP19": [{"QUALF": "001", "IDTNR": "C1"}, {"QUALF": "002", "IDTNR": "M1"}]},
            {"POSEX": "20", "E1EDP19": {"QUALF": "002", "IDTNR": "M2"}}
        ]
    })
}

#[test]
fn idoc_paths_read_trimmed_fields() {
    assert_eq!(values(&idoc(), &path("E1EDK01.BELNR")), vec![json!("4500012345")]);
    assert_eq!(values(&idoc(), &path("EDI_DC40.DOCNUM")), vec![json!("0000000000004711")]);
}

#[test]
fn blank_and_missing_values_are_dropped() {
    assert!(values(&idoc(), &path("E1EDK01.BLANK")).is_empty());
    assert!(values(&idoc(), &path("E1EDK01.NOPE")).is_empty());
    assert!(values(&idoc(), &path("NOPE.BELNR")).is_empty());
    assert!(values(&idoc(), &path("E1EDK01.BELNR.DEEPER")).is_empty());
    assert!(values(&json!({"a": null}), &path("a")).is_empty());
}

#[test]
fn filters_select_by_trimmed_qualifier() {
    assert_eq!(values(&idoc(), &path("E1EDK02[QUALF=001].BELNR")), vec![json!("PO-1"), json!("PO-3")]);
    assert_eq!(values(&idoc(), &path("E1EDK02[QUALF=001][DATUM=20240611].BELNR")), vec![json!("PO-3")]);
    assert!(values(&idoc(), &path("E1EDK02[QUALF=009].BELNR")).is_empty());
    assert!(values(&idoc(), &path("E1EDK02[NOPE=001].BELNR")).is_empty());
}

#[test]
fn nested_repeats_are_flattened_in_document_order() {
    assert_eq!(values(&idoc(), &path("E1EDP01.E1EDP19[QUALF=002].IDTNR")), vec![json!("M1"), json!("M2")]);
    assert_eq!(values(&idoc(), &path("E1EDP01.POSEX")), vec![json!("10"), json!("20")]);
}

#[test]
fn a_path_ending_on_a_segment_gives_objects() {
    assert_eq!(values(&idoc(), &path("E1EDK02[QUALF=002]")), vec![json!({"QUALF": "002", "BELNR": "SO-2"})]);
    assert_eq!(values(&idoc(), &path("E1EDK02")).len(), 3);
}

#[test]
fn idoc_paths_on_plain_json() {
    let doc = json!({"order": {"id": 7, "items": [{"sku": "A"}, {"sku": "B"}], "ok": true}});
    assert_eq!(values(&doc, &path("order.id")), vec![json!(7)]);
    assert_eq!(values(&doc, &path("order.ok")), vec![json!(true)]);
    assert_eq!(values(&doc, &path("order.items.sku")), vec![json!("A"), json!("B")]);
    let nested = json!({"m": [[{"k": 1}], [{"k": 2}]], "n": [["x", "y"]]});
    assert_eq!(values(&nested, &path("m.k")), vec![json!(1), json!(2)]);
    assert_eq!(values(&nested, &path("n")), vec![json!("x"), json!("y")]);
    let numeric = json!({"s": [{"q": 1, "v": "a"}, {"q": [2, 3], "v": "b"}]});
    assert_eq!(values(&numeric, &path("s[q=3].v")), vec![json!("b")]);
}

#[test]
fn jsonpath_values() {
    let doc = json!({"order": {"id": " 7 ", "items": [{"sku": "A"}, {"sku": ""}], "n": null}});
    assert_eq!(values(&doc, &path("$.order.id")), vec![json!("7")]);
    assert_eq!(values(&doc, &path("$.order.items[*].sku")), vec![json!("A")]);
    assert_eq!(values(&doc, &path("$.order.items")), vec![json!([{"sku": "A"}, {"sku": ""}])]);
    assert!(values(&doc, &path("$.order.n")).is_empty());
    assert!(values(&doc, &path("$.nope")).is_empty());
    assert_eq!(values(&doc, &path("$")), vec![doc.clone()]);
    assert_eq!(values(&idoc(), &path("$.E1EDK02[?(@.QUALF=='002')].BELNR")), vec![json!("SO-2")]);
}

#[test]
fn normalized_paths_parse_back() {
    assert_eq!(parse_normalized("$"), Some(vec![]));
    assert_eq!(
        parse_normalized("$['a'][0]['b c']"),
        Some(vec![Seg::Key("a".into()), Seg::Index(0), Seg::Key("b c".into())])
    );
    assert_eq!(
        parse_normalized(r"$['it\'s']['\\']['\n\t\u000b']"),
        Some(vec![Seg::Key("it's".into()), Seg::Key("\\".into()), Seg::Key("\n\t\u{b}".into())])
    );
    assert_eq!(parse_normalized("a"), None);
    assert_eq!(parse_normalized("$['a'"), None);
    assert_eq!(parse_normalized("$[x]"), None);
}

#[test]
fn jsonpath_locations_match_what_get_reads() {
    let doc = json!({"odd key'": [1, {"x": 2}]});
    let locs = locate(&doc, &path("$..x"));
    assert_eq!(locs.len(), 1);
    assert_eq!(get(&doc, &locs[0]), Some(&json!(2)));
}

#[test]
fn removal_handles_array_indices_and_nesting() {
    let mut doc = json!({"a": [{"b": 1, "c": 1}, {"b": 2}, {"b": 3}], "d": {"e": 1, "f": 2}});
    let mut locs = locate(&doc, &path("$.a[*].b"));
    locs.extend(locate(&doc, &path("d.e")));
    remove_all(&mut doc, locs);
    assert_eq!(doc, json!({"a": [{"c": 1}, {}, {}], "d": {"f": 2}}));

    let mut arr = json!({"a": [1, 2, 3, 4]});
    let locs = locate(&arr, &path("$.a[?(@ > 1)]"));
    remove_all(&mut arr, locs);
    assert_eq!(arr, json!({"a": [1]}));
}

#[test]
fn removal_of_an_ancestor_and_its_descendant() {
    let mut doc = json!({"a": {"b": {"c": 1}}, "z": 0});
    let locs = vec![
        vec![Seg::Key("a".into())],
        vec![Seg::Key("a".into()), Seg::Key("b".into())],
        vec![Seg::Key("missing".into())],
        vec![],
    ];
    remove_all(&mut doc, locs);
    assert_eq!(doc, json!({"z": 0}));
}

#[test]
fn filtered_idoc_paths_remove_only_matching_segments() {
    let mut doc = idoc();
    let locs = locate(&doc, &path("E1EDK02[QUALF=001]"));
    remove_all(&mut doc, locs);
    assert_eq!(doc["E1EDK02"], json!([{"QUALF": "002", "BELNR": "SO-2"}]));
}

#[test]
fn dotted_filters_look_into_repeated_children() {
    let doc = idoc();
    assert_eq!(values(&doc, &path("E1EDP01[E1EDP19.QUALF=001].POSEX")), vec![json!("10")]);
    assert_eq!(values(&doc, &path("E1EDP01[E1EDP19.QUALF=002].POSEX")), vec![json!("10"), json!("20")]);
    assert_eq!(values(&doc, &path("E1EDP01[E1EDP19.IDTNR=M2].POSEX")), vec![json!("20")]);
    assert!(values(&doc, &path("E1EDP01[E1EDP19.NOPE=M2].POSEX")).is_empty());
}

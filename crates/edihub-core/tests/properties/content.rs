//! Property 2: plain JSON content fingerprints ignore key order,
//! whitespace and spelling.

use super::*;

/// Keys plain JSON objects are built from (never `IDOC` or `idempotencyKey`).
pub(crate) const KEYS: &[&str] = &["id", "order", "docnum", "a", "b", "x y", "ключ", "😀", "sent", "lines"];

/// A JSON value together with alternative spellings of its numbers.
pub(crate) fn plain_value() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        text().prop_map(J::Str),
        Just(J::Raw("null".into())),
        any::<bool>().prop_map(|b| J::Raw(b.to_string())),
        any::<i32>().prop_map(|n| J::Raw(n.to_string())),
        (-1.0e6f64..1.0e6).prop_map(|f| J::Raw(serde_json::to_string(&f).unwrap())),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(J::Arr),
            prop::collection::btree_map(prop::sample::select(KEYS).prop_map(String::from), inner, 0..5)
                .prop_map(|m| J::Obj(m.into_iter().collect())),
        ]
    })
}

pub(crate) fn plain_object() -> impl Strategy<Value = J> {
    prop::collection::btree_map(prop::sample::select(KEYS).prop_map(String::from), plain_value(), 2..6)
        .prop_map(|m| J::Obj(m.into_iter().collect()))
}

/// The same value with each integer-valued number spelled differently (`3` → `3.0`, `3e0`).
pub(crate) fn respell_numbers(j: &J, rng: &mut Seeded) -> J {
    match j {
        J::Raw(r) if r.parse::<i32>().is_ok() => match rng.below(3) {
            0 => J::Raw(format!("{r}.0")),
            1 => J::Raw(format!("{r}e0")),
            _ => J::Raw(r.clone()),
        },
        J::Arr(items) => J::Arr(items.iter().map(|i| respell_numbers(i, rng)).collect()),
        J::Obj(members) => {
            J::Obj(members.iter().map(|(k, v)| (k.clone(), respell_numbers(v, rng))).collect())
        }
        other => other.clone(),
    }
}

pub(crate) fn plain_doc(text: &str) -> Document {
    let mut parsed = parse(text.as_bytes(), "application/json");
    assert_eq!(parsed.format, BodyFormat::PlainJson, "{text}");
    parsed.documents.remove(0)
}

pub(crate) fn content_fp(doc: &Document, exclude: &[KeyPath]) -> Option<String> {
    let root = [KeyPath::parse("$").unwrap()];
    let spec = FingerprintSpec {
        message_type: "shop.order",
        key_fields: &root,
        exclude_fields: exclude,
        scope: edihub_core::FingerprintScope::NONE,
    };
    let fp = fingerprint(doc, &spec);
    assert_eq!(fp.basis, Basis::Content);
    fp.hex
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn plain_json_content_fingerprint_ignores_key_order_and_whitespace(value in plain_object(), a in any::<u64>(), b in any::<u64>()) {
        let (mut ra, mut rb) = (Seeded::new(a), Seeded::new(b));
        let (mut ta, mut tb) = (String::new(), String::new());
        write_json(&value, &mut ra, &mut ta);
        write_json(&value, &mut rb, &mut tb);
        let (da, db) = (plain_doc(&ta), plain_doc(&tb));
        prop_assert_eq!(da.value(), db.value());
        let exclude = keys(&["$.sent".to_string(), "$..lines[0]".to_string()]);
        prop_assert_eq!(content_fp(&da, &[]), content_fp(&db, &[]));
        prop_assert_eq!(content_fp(&da, &exclude), content_fp(&db, &exclude));
        for key in ["$.id", "$.order", "$..a", "$.lines[*]"] {
            let k = keys(&[key.to_string()]);
            let spec = FingerprintSpec { message_type: "shop.order", key_fields: &k, exclude_fields: &[], scope: edihub_core::FingerprintScope::NONE };
            prop_assert_eq!(fingerprint(&da, &spec), fingerprint(&db, &spec), "{}", key);
        }
    }

    #[test]
    fn plain_json_content_fingerprint_ignores_how_numbers_are_spelled(value in plain_object(), seed in any::<u64>()) {
        let mut rng = Seeded::new(seed);
        let respelled = respell_numbers(&value, &mut rng);
        let (mut ta, mut tb) = (String::new(), String::new());
        write_json(&value, &mut rng, &mut ta);
        write_json(&respelled, &mut rng, &mut tb);
        prop_assert_eq!(content_fp(&plain_doc(&ta), &[]), content_fp(&plain_doc(&tb), &[]), "{} vs {}", ta, tb);
    }
}

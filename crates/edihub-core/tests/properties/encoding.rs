//! Property 3: key values are encoded unambiguously.

use super::*;

/// Splits `s` at the given cut points (sorted, deduplicated, inside the string).
pub(crate) fn split_at(s: &[char], cuts: &[usize]) -> Vec<String> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| 1 + c % s.len().max(1)).filter(|c| *c < s.len()).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts {
        out.push(s[start..cut].iter().collect());
        start = cut;
    }
    out.push(s[start..].iter().collect());
    out
}

pub(crate) fn key_fp(doc: &Document, key_fields: &[&str], message_type: &str) -> Option<String> {
    let k = keys(&key_fields.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let spec = FingerprintSpec {
        message_type,
        key_fields: &k,
        exclude_fields: &[],
        scope: edihub_core::FingerprintScope::NONE,
    };
    fingerprint(doc, &spec).hex
}

/// An IDoc whose `E1EDK01` segments carry `belnrs` and whose `E1EDK02` carries `refs`.
pub(crate) fn idoc_with(belnrs: &[String], refs: &[String]) -> Document {
    let segs: Vec<Value> = belnrs.iter().map(|b| json!({"BELNR": b})).collect();
    let refs: Vec<Value> = refs.iter().map(|r| json!({"QUALF": "001", "BELNR": r})).collect();
    let body = json!({"ORDERS05": {"IDOC": {
        "EDI_DC40": {"DOCNUM": "1", "IDOCTYP": "ORDERS05", "MESTYP": "ORDERS"},
        "E1EDK01": segs,
        "E1EDK02": refs,
    }}});
    let mut parsed = parse(body.to_string().as_bytes(), "application/json");
    parsed.documents.remove(0)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn different_splits_of_the_same_characters_never_collide(
        s in "[a-zA-Z0-9,\\[\\]\"\\\\:ä😀]{2,12}",
        cuts_a in prop::collection::vec(any::<usize>(), 0..4),
        cuts_b in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        let chars: Vec<char> = s.chars().collect();
        let (a, b) = (split_at(&chars, &cuts_a), split_at(&chars, &cuts_b));
        prop_assume!(a != b);

        // Several values of one field: a repeated segment, a JSON array.
        prop_assert_ne!(key_fp(&idoc_with(&a, &[]), &["E1EDK01.BELNR"], "ORDERS05"),
            key_fp(&idoc_with(&b, &[]), &["E1EDK01.BELNR"], "ORDERS05"), "{:?} vs {:?}", a, b);
        let plain = |parts: &[String]| plain_doc(&json!({"docnum": "1", "k": parts}).to_string());
        prop_assert_ne!(key_fp(&plain(&a), &["$.k[*]"], "T"), key_fp(&plain(&b), &["$.k[*]"], "T"));
        prop_assert_ne!(key_fp(&plain(&a), &["$.k"], "T"), key_fp(&plain(&b), &["$.k"], "T"));
        prop_assert_ne!(content_fp(&plain(&a), &[]), content_fp(&plain(&b), &[]));

        // The same characters across two fields: where one ends and the next begins matters.
        let (head_a, tail_a) = (a[..1].to_vec(), a[1..].to_vec());
        let (head_b, tail_b) = (b[..1].to_vec(), b[1..].to_vec());
        let fields = ["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"];
        prop_assert_ne!(key_fp(&idoc_with(&head_a, &tail_a), &fields, "ORDERS05"),
            key_fp(&idoc_with(&head_b, &tail_b), &fields, "ORDERS05"), "{:?}|{:?} vs {:?}|{:?}", head_a, tail_a, head_b, tail_b);
        let two = |h: &[String], t: &[String]| plain_doc(&json!({"a": h.concat(), "b": t.concat()}).to_string());
        if (a[0].clone(), a[1..].concat()) != (b[0].clone(), b[1..].concat()) {
            prop_assert_ne!(key_fp(&two(&head_a, &tail_a), &["$.a", "$.b"], "T"),
                key_fp(&two(&head_b, &tail_b), &["$.a", "$.b"], "T"));
        }
        // A value moving from one field to the other (presence is part of the identity).
        prop_assert_ne!(key_fp(&idoc_with(&a, &[]), &fields, "ORDERS05"),
            key_fp(&idoc_with(&[], &a), &fields, "ORDERS05"));
    }
}

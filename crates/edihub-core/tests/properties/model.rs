//! The model of an IDoc packet the properties generate, the paths into it
//! with the values they must find (the oracle), and the seeded RNG that
//! makes every rendering choice replayable.

use super::*;

/// Segment names (never field names, so a path step is unambiguous).
pub(crate) const SEGMENTS: &[&str] = &["E1EDK01", "E1EDK02", "E1EDKA1", "E1EDP01", "E1EDP19", "Z1CUSTOM"];
/// Field names; `QUALF` is the qualifier the generated filters use.
pub(crate) const FIELDS: &[&str] = &["BELNR", "QUALF", "DATUM", "NAME1", "IDTNR", "MENGE"];
/// Attribute names besides `SEGMENT`.
pub(crate) const ATTRS: &[&str] = &["NOTE", "LEVEL"];

/// One segment of the model.
#[derive(Debug, Clone)]
pub(crate) struct Seg {
    pub(crate) name: &'static str,
    pub(crate) attrs: Vec<(&'static str, String)>,
    pub(crate) fields: Vec<(&'static str, String)>,
    pub(crate) children: Vec<Seg>,
}

/// One IDoc: control record values and top-level segments.
#[derive(Debug, Clone)]
pub(crate) struct Idoc {
    pub(crate) idoctyp: &'static str,
    pub(crate) mestyp: String,
    pub(crate) docnum: String,
    pub(crate) sndprn: String,
    pub(crate) segs: Vec<Seg>,
}

/// A body: the root element's name (`None`: the root is `IDOC` itself) and its IDocs.
#[derive(Debug, Clone)]
pub(crate) struct Packet {
    pub(crate) root: Option<&'static str>,
    pub(crate) idocs: Vec<Idoc>,
}

/// Field text: letters, digits, XML-special, non-ASCII and whitespace characters.
pub(crate) fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 <>&\"'/;=\\-äöüßé€漢字😀\t\n\r]{0,12}"
}

/// Attribute text (no tab/LF/CR, which attribute-value normalisation turns into spaces).
pub(crate) fn attr_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 <>&\"'äöü€😀]{0,8}"
}

/// Qualifier values: short codes that can be written in a path filter.
pub(crate) fn qualifier() -> impl Strategy<Value = String> {
    prop_oneof!["00[1-3]", "[A-Z]{1,3}"]
}

pub(crate) fn field() -> impl Strategy<Value = (&'static str, String)> {
    (prop::sample::select(FIELDS), any::<bool>(), text(), qualifier()).prop_map(|(name, pad, text, q)| {
        // A qualifier field holds a qualifier, sometimes padded (values are trimmed).
        if name == "QUALF" { (name, if pad { format!(" {q}\t") } else { q }) } else { (name, text) }
    })
}

pub(crate) fn segment() -> impl Strategy<Value = Seg> {
    let leaf = (
        prop::sample::select(SEGMENTS),
        prop::collection::vec((prop::sample::select(ATTRS), attr_text()), 0..2),
        any::<bool>(),
        prop::collection::vec(field(), 0..5),
    )
        .prop_map(|(name, extra, segment_attr, fields)| {
            let mut attrs: Vec<(&'static str, String)> = Vec::new();
            if segment_attr {
                attrs.push(("SEGMENT", "1".to_string()));
            }
            for (n, v) in extra {
                if !attrs.iter().any(|(a, _)| *a == n) {
                    attrs.push((n, v));
                }
            }
            Seg { name, attrs, fields, children: Vec::new() }
        });
    leaf.prop_recursive(3, 24, 4, |inner| {
        (inner.clone(), prop::collection::vec(inner, 0..4)).prop_map(|(mut seg, children)| {
            seg.children = children;
            seg
        })
    })
}

pub(crate) fn idoc() -> impl Strategy<Value = Idoc> {
    (
        prop::sample::select(&["ORDERS05", "INVOIC02", "DELVRY07"][..]),
        prop::sample::select(&["ORDERS", "ORDCHG", "ORDRSP", ""][..]),
        "0{0,6}[1-9][0-9]{0,9}",
        "[A-Z0-9]{1,10}",
        prop::collection::vec(segment(), 0..6),
    )
        .prop_map(|(idoctyp, mestyp, docnum, sndprn, segs)| Idoc {
            idoctyp,
            mestyp: mestyp.to_string(),
            docnum,
            sndprn,
            segs,
        })
}

pub(crate) fn packet() -> impl Strategy<Value = Packet> {
    prop_oneof![
        3 => (prop::sample::select(&["ORDERS05", "ZORDERS5", "INVOIC02"][..]), prop::collection::vec(idoc(), 1..4))
            .prop_map(|(root, idocs)| Packet { root: Some(root), idocs }),
        1 => idoc().prop_map(|i| Packet { root: None, idocs: vec![i] }),
    ]
}

impl Idoc {
    /// The control record as a segment, first among the IDoc's children.
    pub(crate) fn elements(&self) -> Vec<Seg> {
        let mut control = Seg {
            name: "EDI_DC40",
            attrs: vec![("SEGMENT", "1".to_string())],
            fields: vec![("TABNAM", "EDI_DC40".to_string()), ("MANDT", "100".to_string())],
            children: Vec::new(),
        };
        control.fields.push(("DOCNUM", self.docnum.clone()));
        control.fields.push(("IDOCTYP", self.idoctyp.to_string()));
        control.fields.push(("MESTYP", self.mestyp.clone()));
        control.fields.push(("SNDPRN", self.sndprn.clone()));
        let mut all = vec![control];
        all.extend(self.segs.iter().cloned());
        all
    }
}

// ------------------------------------------------------------------ paths and the oracle

/// A generated IDoc path: steps of (segment name, optional QUALF filter), then a field.
#[derive(Debug, Clone)]
pub(crate) struct GenPath {
    pub(crate) steps: Vec<(&'static str, Option<String>)>,
    pub(crate) field: &'static str,
}

impl GenPath {
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for (name, filter) in &self.steps {
            out.push_str(name);
            if let Some(q) = filter {
                out.push_str(&format!("[QUALF={q}]"));
            }
            out.push('.');
        }
        out.push_str(self.field);
        out
    }

    /// The values the model says this path selects, in document order.
    pub(crate) fn expected(&self, idoc: &Idoc) -> Vec<Value> {
        let mut current: Vec<Seg> =
            vec![Seg { name: "IDOC", attrs: vec![], fields: vec![], children: idoc.elements() }];
        for (name, filter) in &self.steps {
            current = current
                .iter()
                .flat_map(|s| s.children.iter().filter(|c| c.name == *name))
                .filter(|c| match filter {
                    None => true,
                    Some(q) => c.fields.iter().any(|(f, v)| *f == "QUALF" && v.trim() == q),
                })
                .cloned()
                .collect();
        }
        current
            .iter()
            .flat_map(|s| s.fields.iter().filter(|(f, _)| *f == self.field))
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
            .map(|v| json!(v))
            .collect()
    }
}

/// Every field path of a tree, each segment step also with its qualifier filters.
pub(crate) fn gen_paths(idoc: &Idoc) -> Vec<GenPath> {
    pub(crate) fn walk(prefix: &[(&'static str, Option<String>)], segs: &[Seg], out: &mut Vec<GenPath>) {
        for seg in segs {
            let mut variants = vec![None];
            variants.extend(
                seg.fields.iter().filter(|(f, _)| *f == "QUALF").map(|(_, v)| Some(v.trim().to_string())),
            );
            for filter in variants {
                let mut steps = prefix.to_vec();
                steps.push((seg.name, filter));
                for (f, _) in &seg.fields {
                    let path = GenPath { steps: steps.clone(), field: f };
                    if !out.iter().any(|p| p.text() == path.text()) {
                        out.push(path);
                    }
                }
                if out.len() < 200 {
                    walk(&steps, &seg.children, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(&[], &idoc.elements(), &mut out);
    out
}

// ------------------------------------------------------------------ a tiny deterministic RNG for rendering choices

/// xorshift64*: rendering choices come from a generated seed, so a failing
/// case replays exactly and proptest can shrink the seed too.
pub(crate) struct Seeded(u64);

impl Seeded {
    pub(crate) fn new(seed: u64) -> Seeded {
        Seeded(seed | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

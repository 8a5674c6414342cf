//! Renders a model packet as IDoc-JSON with random member order,
//! whitespace and string escapes.

use super::*;

/// JSON with members in a chosen order (serde_json's map sorts its keys).
#[derive(Debug, Clone)]
pub(crate) enum J {
    Str(String),
    /// A number, boolean or null, written as is.
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// Writes `j` with shuffled members, random whitespace and random string escapes.
pub(crate) fn write_json(j: &J, rng: &mut Seeded, out: &mut String) {
    let ws = |rng: &mut Seeded| *rng.pick(&["", "", " ", "\n", "\n  ", "\t", " \r\n"]);
    match j {
        J::Str(s) => write_json_string(s, rng, out),
        J::Raw(r) => out.push_str(r),
        J::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws(rng));
                write_json(item, rng, out);
                out.push_str(ws(rng));
            }
            out.push(']');
        }
        J::Obj(members) => {
            let mut members = members.clone();
            rng.shuffle(&mut members);
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws(rng));
                write_json_string(k, rng, out);
                out.push_str(ws(rng));
                out.push(':');
                out.push_str(ws(rng));
                write_json(v, rng, out);
            }
            out.push_str(ws(rng));
            out.push('}');
        }
    }
}

/// A JSON string with each character written plainly or as a `\u` escape.
pub(crate) fn write_json_string(s: &str, rng: &mut Seeded, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if rng.chance(2) => out.push_str("\\/"),
            '\n' if rng.chance(2) => out.push_str("\\n"),
            '\t' if rng.chance(2) => out.push_str("\\t"),
            '\r' if rng.chance(2) => out.push_str("\\r"),
            c if (c as u32) < 0x20 || rng.chance(6) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Random padding around a JSON field value (the hub trims values).
pub(crate) fn padded(rng: &mut Seeded, text: &str) -> String {
    match rng.below(5) {
        0 => format!(" {text}"),
        1 => format!("{text}\n"),
        _ => text.to_string(),
    }
}

/// A segment as IDoc-JSON: attributes as `@NAME`, fields as strings, repeats as arrays.
pub(crate) fn seg_json(seg: &Seg, rng: &mut Seeded) -> J {
    if seg.attrs.is_empty() && seg.fields.is_empty() && seg.children.is_empty() {
        return if rng.chance(2) { J::Str(String::new()) } else { J::Obj(Vec::new()) };
    }
    let mut members: Vec<(String, J)> =
        seg.attrs.iter().map(|(n, v)| (format!("@{n}"), J::Str(padded(rng, v)))).collect();
    let mut groups: Vec<(&str, Vec<J>)> = Vec::new();
    let mut push = |name: &'static str, value: J| match groups.iter_mut().find(|(n, _)| *n == name) {
        Some((_, items)) => items.push(value),
        None => groups.push((name, vec![value])),
    };
    for (f, v) in &seg.fields {
        let value = if rng.chance(8) {
            J::Obj(vec![("#text".to_string(), J::Str(padded(rng, v)))])
        } else {
            J::Str(padded(rng, v))
        };
        push(f, value);
    }
    for child in &seg.children {
        push(child.name, seg_json(child, rng));
    }
    for (name, mut items) in groups {
        let value = if items.len() == 1 && !rng.chance(3) { items.remove(0) } else { J::Arr(items) };
        members.push((name.to_string(), value));
    }
    J::Obj(members)
}

/// Renders a packet as IDoc-JSON text.
pub(crate) fn render_json(packet: &Packet, seed: u64) -> String {
    let mut rng = Seeded::new(seed ^ 0x9E37_79B9_7F4A_7C15);
    let idocs: Vec<J> = packet
        .idocs
        .iter()
        .map(|idoc| {
            let mut members = vec![("@BEGIN".to_string(), J::Str("1".to_string()))];
            let mut groups: Vec<(&str, Vec<J>)> = Vec::new();
            for seg in idoc.elements() {
                let value = seg_json(&seg, &mut rng);
                match groups.iter_mut().find(|(n, _)| *n == seg.name) {
                    Some((_, items)) => items.push(value),
                    None => groups.push((seg.name, vec![value])),
                }
            }
            for (name, mut items) in groups {
                let value = if items.len() == 1 && !rng.chance(4) { items.remove(0) } else { J::Arr(items) };
                members.push((name.to_string(), value));
            }
            J::Obj(members)
        })
        .collect();
    let idoc = if idocs.len() == 1 && !rng.chance(4) { idocs[0].clone() } else { J::Arr(idocs) };
    let mut top = match packet.root {
        Some(root) => vec![(root.to_string(), J::Obj(vec![("IDOC".to_string(), idoc)]))],
        None => vec![("IDOC".to_string(), idoc)],
    };
    if rng.chance(4) {
        top.push(("idempotencyKey".to_string(), J::Str("key-1".to_string())));
    }
    let mut out = String::new();
    write_json(&J::Obj(top), &mut rng, &mut out);
    out
}

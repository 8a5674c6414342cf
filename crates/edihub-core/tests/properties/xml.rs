//! Renders a model packet as IDoc-XML with random layout, prefixes,
//! envelope, escapes and encoding.

use super::*;

/// The encoding an XML rendering is written in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum XmlEncoding {
    Utf8,
    Latin1,
    Utf16Le,
    Utf16Be,
}

pub(crate) struct XmlWriter {
    pub(crate) rng: Seeded,
    pub(crate) out: String,
    pub(crate) encoding: XmlEncoding,
    pub(crate) prefixes: Vec<&'static str>,
}

impl XmlWriter {
    /// Whitespace between elements (never inside a value).
    pub(crate) fn gap(&mut self, depth: usize) {
        let gap = match self.rng.below(5) {
            0 => String::new(),
            1 => format!("\n{}", "  ".repeat(depth)),
            2 => format!("\r\n{}", "\t".repeat(depth)),
            3 => " ".to_string(),
            _ => "\n".to_string(),
        };
        self.out.push_str(&gap);
    }

    pub(crate) fn prefix(&mut self) -> &'static str {
        let i = self.rng.below(self.prefixes.len());
        self.prefixes[i]
    }

    /// A character that must be (or may be) written as a reference.
    pub(crate) fn char_ref(&mut self, c: char) -> String {
        if self.rng.chance(2) { format!("&#x{:X};", c as u32) } else { format!("&#{};", c as u32) }
    }

    /// Escapes text content: the specials, CR always, and non-ASCII when the
    /// encoding cannot hold it (or at random).
    pub(crate) fn escape_text(&mut self, text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' if self.rng.chance(2) || out.ends_with("]]") => out.push_str("&gt;"),
                '"' if self.rng.chance(2) => out.push_str("&quot;"),
                '\'' if self.rng.chance(2) => out.push_str("&apos;"),
                // XML normalises a literal CR to LF; a reference keeps it.
                '\r' => out.push_str(&self.char_ref(c)),
                c if !self.representable(c) || (!c.is_ascii() && self.rng.chance(4)) => {
                    out.push_str(&self.char_ref(c))
                }
                c => out.push(c),
            }
        }
        out
    }

    pub(crate) fn representable(&self, c: char) -> bool {
        match self.encoding {
            XmlEncoding::Latin1 => (c as u32) < 0x80 || (0xA0..=0xFF).contains(&(c as u32)),
            _ => true,
        }
    }

    /// Writes a value: escaped, in CDATA, or split by a comment.
    pub(crate) fn value(&mut self, text: &str) {
        let padded = match self.rng.below(4) {
            0 => format!("  {text}\n"),
            1 => format!("\t{text} "),
            _ => text.to_string(),
        };
        let cdata_ok = !padded.contains("]]>")
            && !padded.contains('\r')
            && padded.chars().all(|c| self.representable(c));
        match self.rng.below(5) {
            0 if cdata_ok => {
                self.out.push_str("<![CDATA[");
                self.out.push_str(&padded);
                self.out.push_str("]]>");
            }
            1 if padded.chars().count() > 1 => {
                let cut =
                    padded.char_indices().nth(1 + self.rng.below(padded.chars().count() - 1)).unwrap().0;
                let (a, b) = padded.split_at(cut);
                let a = self.escape_text(a);
                let b = self.escape_text(b);
                self.out.push_str(&a);
                self.out.push_str("<!-- split -->");
                self.out.push_str(&b);
            }
            _ => {
                let escaped = self.escape_text(&padded);
                self.out.push_str(&escaped);
            }
        }
    }

    pub(crate) fn attr(&mut self, name: &str, value: &str) {
        let quote = if self.rng.chance(2) { '"' } else { '\'' };
        let prefix = if self.rng.chance(4) { self.prefix() } else { "" };
        let mut escaped = String::new();
        for c in value.chars() {
            match c {
                '&' => escaped.push_str("&amp;"),
                '<' => escaped.push_str("&lt;"),
                c if c == quote => escaped.push_str(if c == '"' { "&quot;" } else { "&apos;" }),
                c if !self.representable(c) => escaped.push_str(&self.char_ref(c)),
                c => escaped.push(c),
            }
        }
        self.out.push_str(&format!(" {prefix}{name}={quote}{escaped}{quote}"));
    }

    pub(crate) fn open(&mut self, name: &str, attrs: &[(&str, String)]) -> String {
        let qualified = format!("{}{name}", self.prefix());
        self.out.push('<');
        self.out.push_str(&qualified);
        if self.rng.chance(8) {
            self.out.push_str(" xmlns:zz=\"urn:ignored\"");
        }
        for (n, v) in attrs {
            self.attr(n, v);
        }
        qualified
    }

    pub(crate) fn segment(&mut self, seg: &Seg, depth: usize) {
        let name = self.open(seg.name, &seg.attrs);
        let mut items: Vec<Result<&(&'static str, String), &Seg>> =
            seg.fields.iter().map(Ok).chain(seg.children.iter().map(Err)).collect();
        // Fields and child segments interleave freely; only the order among
        // equal names is the document order the paths see.
        stable_interleave(&mut self.rng, &mut items);
        if items.is_empty() && self.rng.chance(2) {
            self.out.push_str("/>");
            return;
        }
        self.out.push('>');
        for item in items {
            self.gap(depth + 1);
            match item {
                Ok((field, text)) => {
                    let field_name = self.open(field, &[]);
                    if text.is_empty() && self.rng.chance(2) {
                        self.out.push_str("/>");
                    } else {
                        self.out.push('>');
                        self.value(text);
                        self.out.push_str(&format!("</{field_name}>"));
                    }
                }
                Err(child) => self.segment(child, depth + 1),
            }
        }
        self.gap(depth);
        self.out.push_str(&format!("</{name}>"));
    }
}

/// Shuffles items while keeping the relative order of items with the same name.
pub(crate) fn stable_interleave<'a>(
    rng: &mut Seeded,
    items: &mut Vec<Result<&'a (&'static str, String), &'a Seg>>,
) {
    let name = |i: &Result<&(&'static str, String), &Seg>| match i {
        Ok((n, _)) => *n,
        Err(s) => s.name,
    };
    let mut slots: Vec<&'static str> = items.iter().map(name).collect();
    rng.shuffle(&mut slots);
    let mut queues: Vec<(&'static str, std::collections::VecDeque<_>)> = Vec::new();
    for item in items.drain(..) {
        let n = name(&item);
        match queues.iter_mut().find(|(q, _)| *q == n) {
            Some((_, queue)) => queue.push_back(item),
            None => queues.push((n, std::collections::VecDeque::from([item]))),
        }
    }
    for slot in slots {
        let queue = &mut queues.iter_mut().find(|(q, _)| *q == slot).expect("queue").1;
        items.push(queue.pop_front().expect("item"));
    }
}

/// Renders a packet as IDoc-XML bytes with random layout, prefixes, envelope and encoding.
pub(crate) fn render_xml(packet: &Packet, seed: u64) -> Vec<u8> {
    let mut rng = Seeded::new(seed);
    let encoding = *rng.pick(&[
        XmlEncoding::Utf8,
        XmlEncoding::Utf8,
        XmlEncoding::Latin1,
        XmlEncoding::Utf16Le,
        XmlEncoding::Utf16Be,
    ]);
    let prefixes = match rng.below(3) {
        0 => vec![""],
        1 => vec!["ns0:"],
        _ => vec!["", "ns0:", "idoc:"],
    };
    let mut w = XmlWriter { rng, out: String::new(), encoding, prefixes };
    let label = match encoding {
        XmlEncoding::Utf8 => "UTF-8",
        XmlEncoding::Latin1 => "ISO-8859-1",
        XmlEncoding::Utf16Le | XmlEncoding::Utf16Be => "UTF-16",
    };
    if encoding != XmlEncoding::Utf8 || w.rng.chance(2) {
        w.out.push_str(&format!("<?xml version=\"1.0\" encoding=\"{label}\"?>"));
        w.gap(0);
    }
    let soap = w.rng.chance(3);
    if soap {
        let (env, ns) = *w.rng.pick(&[
            ("soapenv", "http://schemas.xmlsoap.org/soap/envelope/"),
            ("env", "http://www.w3.org/2003/05/soap-envelope"),
        ]);
        w.out.push_str(&format!("<{env}:Envelope xmlns:{env}=\"{ns}\">"));
        w.gap(1);
        if w.rng.chance(2) {
            w.out.push_str(&format!("<{env}:Header/>"));
        }
        w.out.push_str(&format!("<{env}:Body>"));
    }
    let declarations = " xmlns:ns0=\"urn:sap-com:document:sap:idoc:soap:messages\" xmlns:idoc=\"urn:x-idoc\"";
    let idoc_attrs = [("BEGIN", "1".to_string())];
    let write_idoc = |w: &mut XmlWriter, idoc: &Idoc, depth: usize, declare: bool| {
        let name = w.open("IDOC", &idoc_attrs);
        if declare {
            w.out.push_str(declarations);
        }
        w.out.push('>');
        let elements = idoc.elements();
        for seg in &elements {
            w.gap(depth + 1);
            w.segment(seg, depth + 1);
        }
        w.gap(depth);
        w.out.push_str(&format!("</{name}>"));
    };
    match packet.root {
        Some(root) => {
            let name = w.open(root, &[]);
            w.out.push_str(declarations);
            if w.rng.chance(3) {
                w.out.push_str(" xmlns=\"urn:sap-com:document:sap:idoc\"");
            }
            w.out.push('>');
            for idoc in &packet.idocs {
                w.gap(1);
                write_idoc(&mut w, idoc, 1, false);
            }
            w.gap(0);
            w.out.push_str(&format!("</{name}>"));
        }
        None => write_idoc(&mut w, &packet.idocs[0], 0, true),
    }
    if soap {
        let env = if w.out.contains("<env:") { "env" } else { "soapenv" };
        w.out.push_str(&format!("</{env}:Body></{env}:Envelope>"));
    }
    w.gap(0);
    match encoding {
        XmlEncoding::Utf8 => w.out.into_bytes(),
        XmlEncoding::Latin1 => w.out.chars().map(|c| u8::try_from(c as u32).expect("latin-1")).collect(),
        XmlEncoding::Utf16Le => {
            let mut bytes = vec![0xFF, 0xFE];
            bytes.extend(w.out.encode_utf16().flat_map(u16::to_le_bytes));
            bytes
        }
        XmlEncoding::Utf16Be => {
            let mut bytes = vec![0xFE, 0xFF];
            bytes.extend(w.out.encode_utf16().flat_map(u16::to_be_bytes));
            bytes
        }
    }
}

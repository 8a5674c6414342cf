//! A check of IDoc-XML against the rules of SAP's inbound IDoc-XML service,
//! for test receivers standing in for a SAP system (none is available to
//! the tests). Built with the `testing` feature only.
//!
//! It reads the XML with quick-xml directly, not with the hub's own
//! reader or writer, and returns every problem it finds, each naming the
//! IDoc and element. The rules come from SAP's IDoc-XML format as
//! Software AG documents it for its SAP adapter ("XML Format for IDocs",
//! <https://documentation.softwareag.com/webmethods/adapters_estandards/Adapters/SAP/SAP_10-1/10-1_Adapter_for_SAP_webhelp/sap-webhelp/to-ifr_xml_18.html>:
//! root named after the IDoc type, `IDOC` with `BEGIN="1"`, `EDI_DC40` and
//! segments with `SEGMENT="1"`, fields as elements, nesting as the
//! hierarchy), the service and its `sap-client` as SAP note 1487606 and
//! SAP's community describe it
//! (<https://blogs.sap.com/2014/07/22/xml-idoc-in-sap-ecc-without-middleware-and-rfc/>),
//! the EDI_DC40 layout (see `idoc::layout`) and the profile:
//!
//! 1. UTF-8 (a declaration, if any, says so); no DOCTYPE; one root element
//!    named after the IDoc type (CIMTYP if given, else IDOCTYP), no
//!    namespace prefixes, no attributes, no text outside fields.
//! 2. The root holds only `IDOC` elements with exactly `BEGIN="1"`.
//! 3. Each `IDOC` starts with one `EDI_DC40` with exactly `SEGMENT="1"`,
//!    whose children are known control record fields, each once, in the
//!    EDI_DC40 order, within their lengths; TABNAM is `EDI_DC40`, DIRECT
//!    `2` (inbound to SAP); DOCNUM, IDOCTYP, MESTYP and the addressing are
//!    present, and client, receiver and sender are the profile's.
//! 4. Every other element under `IDOC` is a segment with exactly
//!    `SEGMENT="1"`: its children are fields (no attributes, no children,
//!    at most 1000 characters) or segments; names have at most 30
//!    characters; a field appears once per segment.
//! 5. With a description of the IDoc type: every segment is one it
//!    defines, siblings come in its order, fields are its own, in its
//!    order and within its lengths.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::{SapIdoc, SapProfile, SapSegment};
use crate::idoc::description::{IdocDescription, IdocDescriptions};
use crate::idoc::layout::{CONTROL_FIELDS, CONTROL_RECORD, NAME_LEN, SDATA_LEN};

/// What a SAP system expects: its profile and the IDoc types it has described.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The SAP system the IDoc-XML is addressed to (and the hub as its sender).
    pub profile: &'a SapProfile,
    /// Descriptions of the IDoc types whose segments are checked too.
    pub descriptions: &'a IdocDescriptions,
}

/// Checks IDoc-XML; the IDocs read when it keeps every rule, else every problem.
pub fn check_idoc_xml(xml: &[u8], expected: &Expected<'_>) -> Result<Vec<SapIdoc>, Vec<String>> {
    let mut check = Check::default();
    match std::str::from_utf8(xml) {
        Ok(text) => check.read(text),
        Err(e) => check.problems.push(format!("not UTF-8 at byte {}", e.valid_up_to())),
    }
    if check.root.is_none() {
        check.problems.push("no root element".into());
    } else if check.idocs.is_empty() && check.problems.is_empty() {
        check.problems.push("the root holds no IDOC".into());
    }
    for (i, idoc) in check.idocs.iter().enumerate() {
        control_rules(i + 1, idoc, expected.profile, &mut check.problems);
        let control = |n: &str| idoc.control_field(n);
        if let Some(d) = expected.descriptions.for_types(control("CIMTYP"), control("IDOCTYP")) {
            described(&format!("IDoc {}", i + 1), &idoc.segments, d, &mut check.problems);
        }
    }
    if check.problems.is_empty() { Ok(check.idocs) } else { Err(check.problems) }
}

/// The `sap-client` of a query string, checked against the profile's client.
pub fn check_sap_client(query: &str, profile: &SapProfile) -> Result<(), String> {
    let clients: Vec<&str> = query.split('&').filter_map(|p| p.strip_prefix("sap-client=")).collect();
    match clients.as_slice() {
        [one] if *one == profile.client => Ok(()),
        [one] => Err(format!("sap-client {one} is not the profile's client {}", profile.client)),
        [] => Err("no sap-client parameter".into()),
        _ => Err("sap-client given more than once".into()),
    }
}

/// An element being read.
enum Frame {
    Root,
    Idoc {
        control: Option<Vec<(&'static str, String)>>,
        segments: Vec<SapSegment>,
    },
    Control {
        fields: Vec<(String, String)>,
    },
    Segment(SapSegment),
    Field {
        name: String,
        text: String,
    },
    /// An element already reported; its content is not checked further.
    Skip,
}

#[derive(Default)]
struct Check {
    problems: Vec<String>,
    root: Option<String>,
    idocs: Vec<SapIdoc>,
    stack: Vec<Frame>,
}

impl Check {
    fn read(&mut self, xml: &str) {
        let mut reader = Reader::from_str(xml);
        loop {
            let event = match reader.read_event() {
                Ok(event) => event,
                Err(e) => {
                    self.problems
                        .push(format!("not well-formed XML at byte {}: {e}", reader.buffer_position()));
                    return;
                }
            };
            match event {
                Event::Eof => break,
                Event::Decl(decl) => {
                    let encoding = decl.encoding().and_then(Result::ok).map(|e| e.to_string());
                    if encoding.is_some_and(|e| !e.eq_ignore_ascii_case("UTF-8")) {
                        self.problems.push("the XML declaration names an encoding other than UTF-8".into());
                    }
                }
                Event::DocType(_) => self.problems.push("a DOCTYPE is not IDoc-XML".into()),
                Event::Start(e) => self.start(&e),
                Event::Empty(e) => {
                    self.start(&e);
                    self.end();
                }
                Event::End(_) => self.end(),
                Event::Text(t) => self.text(&t.xml10_content()),
                Event::CData(t) => self.text(&t.xml10_content()),
                Event::GeneralRef(r) => {
                    let name = r.xml10_content().to_string();
                    match reference(&name) {
                        Some(c) => self.text(&c.to_string()),
                        None => self.problems.push(format!("unknown entity &{name};")),
                    }
                }
                Event::Comment(_) | Event::PI(_) => {}
            }
        }
        if !self.stack.is_empty() {
            self.problems.push("the XML ends inside an element".into());
        }
    }

    fn start(&mut self, e: &BytesStart<'_>) {
        let name = e.name().as_ref().to_string();
        let mut attrs = Vec::new();
        for a in e.attributes() {
            match a {
                Ok(a) => attrs.push((a.key.as_ref().to_string(), a.value.to_string())),
                Err(err) => self.problems.push(format!("<{name}>: bad attribute: {err}")),
            }
        }
        if name.contains(':') {
            self.problems.push(format!("<{name}> has a namespace prefix"));
        }
        let only = |key: &str| attrs.len() == 1 && attrs[0] == (key.to_string(), "1".to_string());
        let frame = match self.stack.last_mut() {
            None if self.root.is_some() => self.problem(format!("a second root element <{name}>")),
            None => {
                self.root = Some(name.clone());
                if !attrs.is_empty() {
                    self.problems.push(format!("the root <{name}> has attributes"));
                }
                Frame::Root
            }
            Some(Frame::Root) if name == "IDOC" && only("BEGIN") => {
                Frame::Idoc { control: None, segments: Vec::new() }
            }
            Some(Frame::Root) => {
                self.problem(format!("<{name}> under the root: only <IDOC BEGIN=\"1\"> belongs there"))
            }
            Some(Frame::Idoc { control: None, .. }) if name == CONTROL_RECORD && only("SEGMENT") => {
                Frame::Control { fields: Vec::new() }
            }
            Some(Frame::Idoc { control: None, .. }) => self
                .problem(format!("<{name}> comes before <EDI_DC40 SEGMENT=\"1\">, which opens every IDOC")),
            Some(Frame::Idoc { .. }) if name == CONTROL_RECORD => {
                self.problem("a second EDI_DC40 in one IDOC".into())
            }
            Some(Frame::Idoc { .. }) | Some(Frame::Segment(_)) if only("SEGMENT") => {
                Frame::Segment(SapSegment { name, fields: Vec::new(), children: Vec::new() })
            }
            Some(Frame::Idoc { .. }) => self.problem(format!("segment <{name}> lacks exactly SEGMENT=\"1\"")),
            Some(Frame::Control { .. }) | Some(Frame::Segment(_)) if attrs.is_empty() => {
                Frame::Field { name, text: String::new() }
            }
            Some(Frame::Control { .. }) | Some(Frame::Segment(_)) => {
                self.problem(format!("field <{name}> has attributes other than a segment's SEGMENT=\"1\""))
            }
            Some(Frame::Field { name: field, .. }) => {
                let field = field.clone();
                self.problem(format!("field <{field}> holds an element <{name}>"))
            }
            Some(Frame::Skip) => Frame::Skip,
        };
        self.stack.push(frame);
    }

    fn problem(&mut self, text: String) -> Frame {
        self.problems.push(text);
        Frame::Skip
    }

    fn text(&mut self, text: &str) {
        match self.stack.last_mut() {
            Some(Frame::Field { text: field_text, .. }) => field_text.push_str(text),
            Some(Frame::Skip) => {}
            _ if text.trim().is_empty() => {}
            _ => self.problems.push(format!("text `{}` outside a field", text.trim())),
        }
    }

    fn end(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        match frame {
            Frame::Root | Frame::Skip => {}
            Frame::Field { name, text } => self.field(name, text),
            Frame::Segment(segment) => {
                if segment.name.chars().count() > NAME_LEN {
                    self.problems.push(format!("segment name {} is longer than {NAME_LEN}", segment.name));
                }
                match self.stack.last_mut() {
                    Some(Frame::Segment(parent)) => parent.children.push(segment),
                    Some(Frame::Idoc { segments, .. }) => segments.push(segment),
                    _ => {}
                }
            }
            Frame::Control { fields } => {
                let control = self.control(fields);
                if let Some(Frame::Idoc { control: slot, .. }) = self.stack.last_mut() {
                    *slot = Some(control);
                }
            }
            Frame::Idoc { control, segments } => {
                let root = self.root.clone().unwrap_or_default();
                self.idocs.push(SapIdoc { root, control: control.unwrap_or_default(), segments });
            }
        }
    }

    /// A field closed: into its segment (once) or the control record.
    fn field(&mut self, name: String, text: String) {
        if name.chars().count() > NAME_LEN || text.chars().count() > SDATA_LEN {
            self.problems.push(format!(
                "field {name} has a name over {NAME_LEN} or a value over {SDATA_LEN} characters"
            ));
        }
        let fields = match self.stack.last_mut() {
            Some(Frame::Segment(segment)) => &mut segment.fields,
            Some(Frame::Control { fields }) => fields,
            _ => return,
        };
        if fields.iter().any(|(n, _)| *n == name) {
            self.problems.push(format!("field {name} appears twice in one segment"));
        }
        fields.push((name, text));
    }

    /// The control record's fields: known, once, in order, within length.
    fn control(&mut self, fields: Vec<(String, String)>) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut last = None;
        for (name, value) in fields {
            let Some(index) = CONTROL_FIELDS.iter().position(|(n, _)| *n == name) else {
                self.problems.push(format!("EDI_DC40 has no field {name}"));
                continue;
            };
            let (known, length) = CONTROL_FIELDS[index];
            if last.is_some_and(|l| index <= l) {
                self.problems
                    .push(format!("EDI_DC40.{name} is out of the control record's order or repeated"));
            }
            last = Some(index);
            if value.chars().count() > length {
                self.problems
                    .push(format!("EDI_DC40.{name} `{value}` is longer than its {length} characters"));
            }
            out.push((known, value));
        }
        out
    }
}

/// The five predefined entities and character references.
fn reference(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let code = name
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| name.strip_prefix('#').map(str::parse));
            char::from_u32(code?.ok()?)
        }
    }
}

/// Rule 3 on one IDoc's control record, and the root's name.
fn control_rules(index: usize, idoc: &SapIdoc, profile: &SapProfile, problems: &mut Vec<String>) {
    let field = |n: &str| idoc.control_field(n);
    let mut problem = |text: String| problems.push(format!("IDoc {index}: {text}"));
    if field("TABNAM") != Some(CONTROL_RECORD) {
        problem(format!("TABNAM is {:?}, not EDI_DC40", field("TABNAM")));
    }
    if field("DIRECT") != Some("2") {
        problem(format!("DIRECT is {:?}, not 2 (inbound to SAP)", field("DIRECT")));
    }
    for required in ["DOCNUM", "IDOCTYP", "MESTYP"] {
        if field(required).is_none() {
            problem(format!("EDI_DC40 has no {required}"));
        }
    }
    for (name, want) in profile.addressing() {
        if field(name) != Some(want) {
            problem(format!("{name} is {:?}, the profile says {want}", field(name)));
        }
    }
    let root = field("CIMTYP").or(field("IDOCTYP"));
    if root.is_some_and(|r| r != idoc.root) {
        problem(format!("the root <{}> is not the IDoc type {}", idoc.root, root.unwrap_or_default()));
    }
}

/// Rule 5: segments, their order and fields against a description (no recursion limit needed: depth is the XML's).
fn described(at: &str, segments: &[SapSegment], d: &IdocDescription, problems: &mut Vec<String>) {
    let mut last = 0;
    for segment in segments {
        let path = format!("{at}, {}", segment.name);
        let Some(position) = d
            .position(&segment.name)
            .filter(|_| d.segment(&segment.name).is_some_and(|l| l.segment_type == segment.name))
        else {
            problems.push(format!("{path}: not a segment of {}", d.name()));
            continue;
        };
        if position < last {
            problems.push(format!("{path}: out of the definition's order"));
        }
        last = position;
        let layout = &d.segments()[position];
        let mut last_field = 0;
        for (name, value) in &segment.fields {
            let Some(i) = layout.fields.iter().position(|f| f.name == *name) else {
                problems.push(format!("{path}: {} defines no field {name}", layout.segment_type));
                continue;
            };
            if i < last_field {
                problems.push(format!("{path}: field {name} out of the definition's order"));
            }
            last_field = i;
            if value.chars().count() > layout.fields[i].length {
                problems.push(format!("{path}: {name} `{value}` is longer than {}", layout.fields[i].length));
            }
        }
        described(&path, &segment.children, d, problems);
    }
}

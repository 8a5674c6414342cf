//! ANSI X12: separators from the fixed-width ISA, and the envelope.
//!
//! `ISA` is 106 characters: the element separator is the character at
//! offset 3, ISA16 (offset 104) is the component separator and the character
//! after it (offset 105) the segment terminator. From version 00402 on,
//! ISA11 (offset 82) is the repetition separator; before, it is the
//! standards identifier `U`. The ISA is read by counting its 16 element
//! separators rather than by offsets, so a sender that pads a field wrongly
//! still gets a precise error instead of garbled separators.
//!
//! The envelope is `ISA`, optional `TA1` interchange acknowledgements,
//! `GS…GE` groups, `ST…SE` transaction sets, `IEA`.
//! Checked: SE01 counts the set's segments including ST and SE, SE02 repeats
//! ST02, GE01/GE02 count the group's sets and repeat GS06, IEA01/IEA02
//! count the groups and repeat ISA13. The body is read as UTF-8.

use std::sync::Arc;

use super::envelope::{Envelope, GS, GroupRef, MessageRef};
use super::refusal::{Failure, Fault, Located, Mismatch, refused, syntax, trailer};
use super::segments::{tokenize, tokenize_located};
use super::{
    EdiHeader, EdiSyntax, Interchange, Party, RawMessage, Segment, Separators, Text, count, disagree,
    malformed,
};
use crate::CoreError;

const SYNTAX: EdiSyntax = EdiSyntax::X12;

/// Reads an X12 interchange into its envelope and messages; a failure
/// after the ISA carries what an acknowledgement of the refusal needs.
pub(super) fn parse(bytes: &[u8]) -> Result<(Vec<RawMessage>, Envelope), Failure> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[start..])
        .map_err(|e| CoreError::InvalidText { encoding: "UTF-8", offset: start + e.valid_up_to() })?;
    let (seps, isa_len) = separators(text)?;
    let isa = tokenize(SYNTAX, &text[..isa_len], Separators { repetition: None, ..seps }, 1)?;
    let isa = isa.segment(0);
    let interchange = Interchange {
        syntax: SYNTAX,
        control_number: required(&isa, 13)?,
        sender: party(&isa, 5, 6),
        receiver: party(&isa, 7, 8),
    };
    let envelope = Envelope::x12(&isa, interchange, seps);
    match tokenize_located(SYNTAX, &text[isa_len..], seps, 2) {
        Ok(segments) => Walk::new(envelope, &Arc::new(segments)).run(),
        Err(located) => Err(refused(&envelope, None, located)),
    }
}

/// The separators, and the length of the ISA segment with its terminator.
fn separators(text: &str) -> Result<(Separators, usize), CoreError> {
    if !text.starts_with("ISA") {
        return Err(malformed(SYNTAX, "the interchange must start with ISA".into()));
    }
    let mut chars = text.char_indices().skip(3);
    let Some((_, element)) = chars.next().filter(|(_, c)| !c.is_alphanumeric() && !c.is_whitespace()) else {
        return Err(malformed(SYNTAX, "ISA: the character after `ISA` must be the element separator".into()));
    };
    let mut elements = vec![String::new()];
    let (mut component, mut segment) = (None, None);
    for (i, c) in chars {
        if elements.len() == 16 {
            match component {
                None => component = Some(c),
                Some(_) => {
                    segment = Some((c, i + c.len_utf8()));
                    break;
                }
            }
        } else if c == element {
            elements.push(String::new());
        } else {
            elements.last_mut().expect("never empty").push(c);
        }
    }
    let (Some(component), Some((segment, isa_len))) = (component, segment) else {
        return Err(malformed(
            SYNTAX,
            "ISA is truncated: it needs 16 elements, ISA16 and a segment terminator".into(),
        ));
    };
    // ISA12 is the interchange control version: 00402 and later repeat with
    // ISA11. A letter, digit or space there is no separator (the `U` of the
    // versions before, which some senders keep): it is not read as one.
    let version: u32 = elements[11].trim().parse().unwrap_or(0);
    let repetition =
        elements[10].chars().next().filter(|c| version >= 402 && !c.is_alphanumeric() && *c != ' ');
    let seps = Separators { element, component, repetition, segment, release: None };
    check_delimiters(&seps)?;
    Ok((seps, isa_len))
}

/// Each delimiter has one role, and none is a letter, a digit or a space.
fn check_delimiters(seps: &Separators) -> Result<(), CoreError> {
    let Separators { element, component, repetition, segment, .. } = *seps;
    let used = [Some(element), Some(component), Some(segment), repetition];
    let used: Vec<char> = used.into_iter().flatten().collect();
    if (1..used.len()).any(|i| used[..i].contains(&used[i])) || component.is_alphanumeric() {
        return Err(malformed(
            SYNTAX,
            format!(
                "ISA names one character for two roles (element `{element}`, ISA16 component `{component}`, terminator `{}`)",
                segment.escape_default()
            ),
        ));
    }
    // Tags and codes are letters and digits, and the ISA pads its fields
    // with spaces: a delimiter among them would split them, and an
    // acknowledgement written with it would not read back.
    let roles = [
        ("segment terminator", segment),
        ("element separator", element),
        ("ISA16 component separator", component),
    ];
    if let Some((role, c)) = roles.into_iter().find(|(_, c)| c.is_alphanumeric() || *c == ' ') {
        return Err(malformed(
            SYNTAX,
            format!(
                "ISA's {role} is `{c}`, a letter, digit or space: X12 delimiters must not occur in tags, \
                 codes or the ISA's padded fields"
            ),
        ));
    }
    Ok(())
}

fn party(seg: &Segment, qualifier: usize, id: usize) -> Party {
    Party {
        id: seg.el(id).to_string(),
        qualifier: Some(seg.el(qualifier).to_string()).filter(|q| !q.is_empty()),
    }
}

/// An element that must not be empty.
fn required(seg: &Segment, e: usize) -> Result<String, CoreError> {
    match seg.el(e) {
        "" => Err(malformed(
            SYNTAX,
            format!("segment {} ({}): {}{e:02} is empty", seg.number, seg.tag(), seg.tag()),
        )),
        v => Ok(v.to_string()),
    }
}

/// An open group: GS, its version and the sets seen in it.
struct Group<'a> {
    gs: Segment<'a>,
    control: String,
    sets: GroupRef,
}

/// The walk through the envelope, keeping what it read so a refusal can
/// say where it stopped.
struct Walk<'a> {
    envelope: Envelope,
    /// The interchange its messages' headers share.
    interchange: Arc<Interchange>,
    /// The segments after the ISA, which its messages share.
    text: &'a Arc<Text>,
    messages: Vec<RawMessage>,
    group: Option<Group<'a>>,
    /// The ST of the transaction set being read.
    open: Option<Segment<'a>>,
}

impl<'a> Walk<'a> {
    fn new(envelope: Envelope, text: &'a Arc<Text>) -> Walk<'a> {
        let interchange = Arc::new(envelope.interchange.clone());
        Walk { envelope, interchange, text, messages: Vec::new(), group: None, open: None }
    }

    /// Walks the segments after the ISA and checks counts and references.
    fn run(mut self) -> Result<(Vec<RawMessage>, Envelope), Failure> {
        let text: &'a Text = self.text;
        let mut segs = text.segments(0..text.len());
        while let Some(seg) = segs.next() {
            let done = self.step(seg).map_err(|e| self.refused(e))?;
            if done {
                return match segs.next() {
                    None => Ok((self.messages, self.envelope)),
                    Some(after) => {
                        let e = malformed(
                            SYNTAX,
                            format!("segment {} ({}) after IEA", after.number, after.tag()),
                        );
                        Err(self.refused(syntax(e)))
                    }
                };
            }
        }
        let e = malformed(SYNTAX, "the interchange ends without IEA".into());
        Err(self.refused((e, Fault::Syntax { premature_end: true })))
    }

    fn refused(&self, located: Located) -> Failure {
        refused(&self.envelope, self.group.as_ref().map(|g| &g.sets), located)
    }

    /// One segment; true after the IEA.
    fn step(&mut self, seg: Segment<'a>) -> Result<bool, Located> {
        match (seg.tag(), &mut self.open, &mut self.group) {
            ("SE", Some(_), Some(g)) => {
                let st = self.open.take().expect("open");
                let shared = (&self.interchange, self.text);
                let set = transaction_set(shared, g, st, &seg)?;
                self.messages.push(set);
            }
            ("ST" | "GS" | "GE" | "IEA" | "ISA", Some(st), _) => {
                return Err(syntax(malformed(
                    SYNTAX,
                    format!(
                        "segment {} ({}) inside transaction set {} (ST at segment {}): SE is missing",
                        seg.number,
                        seg.tag(),
                        st.el(2),
                        st.number
                    ),
                )));
            }
            // A segment of the open set: the set is the range from ST to SE.
            (_, Some(_), _) => {}
            ("ST", None, Some(_)) => self.open = Some(seg),
            // Interchange acknowledgements come before the groups; they
            // are part of the envelope, not messages.
            ("TA1", None, None) if self.envelope.groups.is_empty() => {}
            ("GS", None, None) => {
                let sets = GroupRef::open(Some(&seg), GS);
                let control = required(&seg, 6).map_err(syntax)?;
                self.group = Some(Group { control, gs: seg, sets });
            }
            ("GE", None, Some(g)) => {
                close_group(g, &seg)?;
                let group = self.group.take().expect("group");
                self.envelope.groups.push(group.sets);
            }
            ("IEA", None, None) => {
                check_iea(&self.envelope.interchange, &seg, self.envelope.groups.len())?;
                return Ok(true);
            }
            _ => {
                let place = if self.group.is_some() {
                    "inside a group, outside a transaction set"
                } else {
                    "outside a group"
                };
                return Err(syntax(malformed(
                    SYNTAX,
                    format!("segment {} ({}) is out of place ({place})", seg.number, seg.tag()),
                )));
            }
        }
        Ok(false)
    }
}

/// Checks SE against its ST and builds the message, adding its
/// reference to the group (also when it disagrees, for the refusal).
fn transaction_set(
    (interchange, text): (&Arc<Interchange>, &Arc<Text>),
    group: &mut Group,
    st: Segment,
    se: &Segment,
) -> Result<RawMessage, Located> {
    let body = st.index() + 1..se.index();
    let message_type = required(&st, 1).map_err(syntax)?;
    let control = required(&st, 2).map_err(syntax)?;
    group.sets.messages.push(MessageRef::of(&st, &message_type, &control));
    let counted = body.len() + 2;
    let declared = count(SYNTAX, se, 1, "SE01 (number of included segments)").map_err(syntax)?;
    if declared != counted {
        let e = disagree(
            SYNTAX,
            format!(
                "SE01 of transaction set {control} says {declared} segments, the set has {counted} (ST to SE)"
            ),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Count, site: trailer(se, counted, 1) }));
    }
    if se.el(2) != control {
        let e = disagree(
            SYNTAX,
            format!("SE02 `{}` does not match ST02 `{control}` (segment {})", se.el(2), se.number),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Reference, site: trailer(se, counted, 2) }));
    }
    let header = EdiHeader {
        interchange: Arc::clone(interchange),
        message_type,
        version: group.gs.el(8).to_string(),
        group_control: Some(group.control.clone()),
        control_number: control,
    };
    Ok(RawMessage { header, text: Arc::clone(text), body })
}

fn close_group(group: &Group, ge: &Segment) -> Result<(), Located> {
    let declared = count(SYNTAX, ge, 1, "GE01 (number of transaction sets)").map_err(syntax)?;
    let sets = group.sets.messages.len();
    if declared != sets {
        let e = disagree(
            SYNTAX,
            format!(
                "GE01 of group {} says {declared} transaction sets, the group has {}",
                group.control, sets
            ),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Count, declared }));
    }
    if ge.el(2) != group.control {
        let e = disagree(SYNTAX, format!("GE02 `{}` does not match GS06 `{}`", ge.el(2), group.control));
        return Err((e, Fault::Group { mismatch: Mismatch::Reference, declared }));
    }
    Ok(())
}

fn check_iea(interchange: &Interchange, iea: &Segment, groups: usize) -> Result<(), Located> {
    let declared = count(SYNTAX, iea, 1, "IEA01 (number of functional groups)").map_err(syntax)?;
    if declared != groups {
        let e = disagree(
            SYNTAX,
            format!("IEA01 says {declared} functional groups, the interchange has {groups}"),
        );
        return Err((e, Fault::Interchange(Mismatch::Count)));
    }
    if iea.el(2) != interchange.control_number {
        let e = disagree(
            SYNTAX,
            format!("IEA02 `{}` does not match ISA13 `{}`", iea.el(2), interchange.control_number),
        );
        return Err((e, Fault::Interchange(Mismatch::Reference)));
    }
    Ok(())
}

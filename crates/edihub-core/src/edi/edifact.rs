//! UN/EDIFACT: service string advice, syntax identifier, and the envelope.
//!
//! `UNA` (exactly nine characters) announces the separators; without it the
//! defaults `:+.? '` apply. The syntax identifier in `UNB` (0001) decides
//! how the bytes are read: UNOA, UNOB and UNOC as ISO 8859-1 (A and B are
//! subsets of it), UNOW and UNOY as UTF-8. Other identifiers (the other ISO
//! 8859 parts, UCS-2) are refused by name rather than misread.
//!
//! The envelope is `UNB`, optional `UNG…UNE` groups, `UNH…UNT` messages,
//! `UNZ`. Checked: UNT 0074 counts the message's segments including UNH and
//! UNT, UNT 0062 repeats UNH 0062, UNE 0060/0048 count the group's messages
//! and repeat UNG 0048, UNZ 0036/0020 count the groups (or the messages when
//! there are none) and repeat UNB 0020.

use std::borrow::Cow;

use std::sync::Arc;

use super::envelope::{Envelope, GroupRef, MessageRef, UNG};
use super::refusal::{Failure, Fault, Located, Mismatch, refused, syntax, trailer};
use super::segment::trim;
use super::segments::{tokenize, tokenize_located};
use super::{
    EdiHeader, EdiSyntax, Interchange, Party, RawMessage, Segment, Separators, Text, count, disagree,
    malformed,
};
use crate::CoreError;

const SYNTAX: EdiSyntax = EdiSyntax::Edifact;

/// Separators when there is no `UNA`.
const DEFAULT: Separators =
    Separators { element: '+', component: ':', repetition: None, segment: '\'', release: Some('?') };

/// Reads an EDIFACT interchange into its envelope and messages; a failure
/// after the UNB carries what an acknowledgement of the refusal needs.
pub(super) fn parse(bytes: &[u8]) -> Result<(Vec<RawMessage>, Envelope), Failure> {
    let bytes = trim_start(bytes);
    let (seps, rest, una) = match bytes.strip_prefix(b"UNA") {
        Some(una) => {
            (service_string_advice(una)?, &una[6..], Some(una[..6].iter().map(|&b| char::from(b)).collect()))
        }
        None => (DEFAULT, bytes, None),
    };
    let text = decode(trim_start(rest), seps)?;
    match tokenize_located(SYNTAX, &text, seps, 1) {
        Ok(segments) => walk(&Arc::new(segments), seps, una),
        Err(located) => Err(match header(&text, seps, una) {
            Some(envelope) => refused(&envelope, None, located),
            None => Failure::bare(located.0),
        }),
    }
}

/// The envelope of an interchange whose segments do not all tokenize,
/// from its UNB alone (when that one is whole and has its reference).
fn header(text: &str, seps: Separators, una: Option<String>) -> Option<Envelope> {
    let end = text.find(seps.segment)?;
    let unb = tokenize(SYNTAX, &text[..=end], seps, 1).ok()?;
    let unb = unb.segment(unb.len().checked_sub(1)?);
    let interchange = interchange(&unb).ok()?;
    Some(Envelope::edifact(&unb, interchange, seps, una))
}

/// Skips a UTF-8 byte order mark and leading whitespace.
fn trim_start(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    &bytes[start..]
}

/// The six characters after `UNA`: component, element, decimal mark,
/// release, repetition (a space: none), segment terminator.
fn service_string_advice(una: &[u8]) -> Result<Separators, CoreError> {
    let Some(chars) = una.get(..6).filter(|c| c.iter().all(u8::is_ascii)) else {
        return Err(malformed(SYNTAX, "UNA must be followed by six ASCII service characters".into()));
    };
    let c = |i: usize| char::from(chars[i]);
    let seps = Separators {
        component: c(0),
        element: c(1),
        release: (c(3) != ' ').then(|| c(3)),
        repetition: (c(4) != ' ').then(|| c(4)),
        segment: c(5),
    };
    let used = [Some(seps.component), Some(seps.element), seps.release, seps.repetition, Some(seps.segment)];
    let used: Vec<char> = used.into_iter().flatten().collect();
    if (1..used.len()).any(|i| used[..i].contains(&used[i])) {
        return Err(malformed(
            SYNTAX,
            format!("UNA names one character for two roles: `UNA{}`", chars.escape_ascii()),
        ));
    }
    // Tags and codes are letters and digits: a separator among them would
    // split them, and a CONTRL written with it would not read back.
    if used.iter().any(char::is_ascii_alphanumeric) {
        return Err(malformed(
            SYNTAX,
            format!("UNA names a letter or digit as a separator: `UNA{}`", chars.escape_ascii()),
        ));
    }
    Ok(seps)
}

/// Decodes the body as the UNB syntax identifier says.
fn decode(rest: &[u8], seps: Separators) -> Result<Cow<'_, str>, CoreError> {
    let mut head = [0u8; 4];
    head[..3].copy_from_slice(b"UNB");
    head[3] = u8::try_from(u32::from(seps.element)).unwrap_or(0);
    if !rest.starts_with(&head) {
        return Err(malformed(SYNTAX, "the interchange must start with UNB (after an optional UNA)".into()));
    }
    let ident = &rest[4..rest.len().min(8)];
    match ident {
        // ISO 8859-1 maps each byte to the character of that number; ASCII is read as it is.
        b"UNOA" | b"UNOB" | b"UNOC" => Ok(match std::str::from_utf8(rest) {
            Ok(ascii) if rest.is_ascii() => Cow::Borrowed(ascii),
            _ => Cow::Owned(rest.iter().map(|&b| char::from(b)).collect()),
        }),
        b"UNOW" | b"UNOY" => match std::str::from_utf8(rest) {
            Ok(text) => Ok(Cow::Borrowed(text)),
            Err(e) => Err(CoreError::InvalidText { encoding: "UTF-8", offset: e.valid_up_to() }),
        },
        other => {
            let other: String = other.iter().map(|&b| char::from(b)).collect();
            Err(malformed(
                SYNTAX,
                format!(
                    "UNB 0001 syntax identifier `{}` is not supported (UNOA, UNOB, UNOC, UNOW, UNOY are)",
                    other.escape_default()
                ),
            ))
        }
    }
}

/// A party from a composite: id in component 1, qualifier in component 2.
fn party(seg: &Segment, e: usize) -> Party {
    let qualifier = Some(trim(seg.text(e, 1)).to_string()).filter(|q| !q.is_empty());
    Party { id: seg.el(e).to_string(), qualifier }
}

/// An open group: UNG 0048 and the messages seen in it.
struct Group {
    reference: String,
    messages: GroupRef,
    number: usize,
}

/// UNB's control reference and parties.
fn interchange(unb: &Segment) -> Result<Interchange, CoreError> {
    Ok(Interchange {
        syntax: SYNTAX,
        control_number: required(unb, 5, "UNB 0020 (interchange control reference)")?,
        sender: party(unb, 2),
        receiver: party(unb, 3),
    })
}

/// Walks the envelope and checks its counts and references.
fn walk(
    text: &Arc<Text>,
    seps: Separators,
    una: Option<String>,
) -> Result<(Vec<RawMessage>, Envelope), Failure> {
    let mut segs = text.segments(0..text.len());
    let unb =
        segs.next().filter(|s| s.tag() == "UNB").ok_or_else(|| malformed(SYNTAX, "no UNB segment".into()))?;
    let interchange = interchange(&unb)?;
    let mut walk = Walk {
        interchange: Arc::new(interchange.clone()),
        text,
        envelope: Envelope::edifact(&unb, interchange, seps, una),
        loose: GroupRef::open(None, UNG),
        messages: Vec::new(),
        group: None,
        open: None,
    };
    while let Some(seg) = segs.next() {
        let done = walk.step(seg).map_err(|e| walk.refused(e))?;
        if done {
            return match segs.next() {
                None => {
                    if walk.envelope.groups.is_empty() {
                        walk.envelope.groups.push(walk.loose);
                    }
                    Ok((walk.messages, walk.envelope))
                }
                Some(after) => {
                    let e =
                        malformed(SYNTAX, format!("segment {} ({}) after UNZ", after.number, after.tag()));
                    Err(walk.refused(syntax(e)))
                }
            };
        }
    }
    let e = malformed(SYNTAX, "the interchange ends without UNZ".into());
    Err(walk.refused((e, Fault::Syntax { premature_end: true })))
}

/// The walk through the envelope, keeping what it read so a refusal can
/// say where it stopped.
struct Walk<'a> {
    envelope: Envelope,
    /// The interchange its messages' headers share.
    interchange: Arc<Interchange>,
    /// The interchange's segments, which its messages share.
    text: &'a Arc<Text>,
    /// The messages outside UNG.
    loose: GroupRef,
    messages: Vec<RawMessage>,
    group: Option<Group>,
    /// The UNH of the message being read.
    open: Option<Segment<'a>>,
}

impl<'a> Walk<'a> {
    fn refused(&self, located: Located) -> Failure {
        let open = match &self.group {
            Some(g) => Some(&g.messages),
            None => {
                (self.envelope.groups.is_empty() && !self.loose.messages.is_empty()).then_some(&self.loose)
            }
        };
        refused(&self.envelope, open, located)
    }

    /// One segment; true after the UNZ.
    fn step(&mut self, seg: Segment<'a>) -> Result<bool, Located> {
        let groups = self.envelope.groups.len();
        match (seg.tag(), &mut self.open) {
            ("UNT", Some(_)) => {
                let unh = self.open.take().expect("open");
                let reference = self.group.as_ref().map(|g| g.reference.clone());
                let refs = match self.group.as_mut() {
                    Some(g) => &mut g.messages,
                    None => &mut self.loose,
                };
                let raw = message((&self.interchange, self.text), reference, refs, unh, &seg)?;
                self.messages.push(raw);
            }
            ("UNH" | "UNG" | "UNE" | "UNZ" | "UNB", Some(unh)) => {
                return Err(syntax(malformed(
                    SYNTAX,
                    format!(
                        "segment {} ({}) inside message {} (UNH at segment {}): UNT is missing",
                        seg.number,
                        seg.tag(),
                        unh.el(1),
                        unh.number
                    ),
                )));
            }
            // A segment of the open message: the message is the range from UNH to UNT.
            (_, Some(_)) => {}
            ("UNH", None) => {
                if self.group.is_none() && groups > 0 {
                    return Err(syntax(malformed(
                        SYNTAX,
                        format!("segment {} (UNH) outside a group after groups", seg.number),
                    )));
                }
                self.open = Some(seg);
            }
            ("UNG", None) if self.group.is_none() && (groups > 0 || self.messages.is_empty()) => {
                let reference = required(&seg, 5, "UNG 0048 (group reference number)").map_err(syntax)?;
                let messages = GroupRef::open(Some(&seg), UNG);
                self.group = Some(Group { reference, messages, number: seg.number });
            }
            ("UNE", None) if self.group.is_some() => {
                close_group(self.group.as_ref().expect("group"), &seg)?;
                let group = self.group.take().expect("group");
                self.envelope.groups.push(group.messages);
            }
            ("UNZ", None) if self.group.is_none() => {
                let units = if groups > 0 { groups } else { self.messages.len() };
                check_unz(&self.envelope.interchange, &seg, units, groups > 0)?;
                return Ok(true);
            }
            _ => {
                let context = self
                    .group
                    .as_ref()
                    .map_or(String::new(), |g| format!(" in the group opened at segment {}", g.number));
                return Err(syntax(malformed(
                    SYNTAX,
                    format!("segment {} ({}) is out of place{context}", seg.number, seg.tag()),
                )));
            }
        }
        Ok(false)
    }
}

/// An element that must not be empty.
fn required(seg: &Segment, e: usize, name: &str) -> Result<String, CoreError> {
    match seg.el(e) {
        "" => Err(malformed(SYNTAX, format!("segment {} ({}): {name} is empty", seg.number, seg.tag()))),
        v => Ok(v.to_string()),
    }
}

/// Checks UNT against its UNH and builds the message, adding its
/// reference to `refs`, its group's (also when it disagrees, for the refusal).
fn message(
    (interchange, text): (&Arc<Interchange>, &Arc<Text>),
    group_reference: Option<String>,
    refs: &mut GroupRef,
    unh: Segment,
    unt: &Segment,
) -> Result<RawMessage, Located> {
    let body = unh.index() + 1..unt.index();
    let reference = required(&unh, 1, "UNH 0062 (message reference number)").map_err(syntax)?;
    let message_type = unh.el(2).to_string();
    if message_type.is_empty() {
        return Err(syntax(malformed(
            SYNTAX,
            format!("segment {} (UNH): S009 0065 (message type) is empty", unh.number),
        )));
    }
    refs.messages.push(MessageRef::of(&unh, &message_type, &reference));
    // Concatenated: `format!` cost as much as reading the rest of the UNH.
    let version = [trim(unh.text(2, 1)), trim(unh.text(2, 2))].concat();
    let counted = body.len() + 2;
    let declared = count(SYNTAX, unt, 1, "UNT 0074 (number of segments)").map_err(syntax)?;
    if declared != counted {
        let e = disagree(
            SYNTAX,
            format!(
                "UNT 0074 of message {reference} says {declared} segments, the message has {counted} (UNH to UNT)"
            ),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Count, site: trailer(unt, counted, 1) }));
    }
    if unt.el(2) != reference {
        let e = disagree(
            SYNTAX,
            format!(
                "UNT 0062 `{}` does not match UNH 0062 `{reference}` (segment {})",
                unt.el(2),
                unt.number
            ),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Reference, site: trailer(unt, counted, 2) }));
    }
    let header = EdiHeader {
        interchange: Arc::clone(interchange),
        message_type,
        version,
        group_control: group_reference,
        control_number: reference,
    };
    Ok(RawMessage { header, text: Arc::clone(text), body })
}

fn close_group(group: &Group, une: &Segment) -> Result<(), Located> {
    let declared = count(SYNTAX, une, 1, "UNE 0060 (number of messages)").map_err(syntax)?;
    let messages = group.messages.messages.len();
    if declared != messages {
        let e = disagree(
            SYNTAX,
            format!(
                "UNE 0060 of group {} says {declared} messages, the group has {}",
                group.reference, messages
            ),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Count, declared }));
    }
    if une.el(2) != group.reference {
        let e = disagree(
            SYNTAX,
            format!("UNE 0048 `{}` does not match UNG 0048 `{}`", une.el(2), group.reference),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Reference, declared }));
    }
    Ok(())
}

fn check_unz(interchange: &Interchange, unz: &Segment, units: usize, groups: bool) -> Result<(), Located> {
    let what = if groups { "groups" } else { "messages" };
    let declared = count(SYNTAX, unz, 1, "UNZ 0036 (interchange control count)").map_err(syntax)?;
    if declared != units {
        let e = disagree(SYNTAX, format!("UNZ 0036 says {declared} {what}, the interchange has {units}"));
        return Err((e, Fault::Interchange(Mismatch::Count)));
    }
    if unz.el(2) != interchange.control_number {
        let e = disagree(
            SYNTAX,
            format!("UNZ 0020 `{}` does not match UNB 0020 `{}`", unz.el(2), interchange.control_number),
        );
        return Err((e, Fault::Interchange(Mismatch::Reference)));
    }
    Ok(())
}

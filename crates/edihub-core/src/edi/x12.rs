//! ANSI X12: separators from the fixed-width ISA, and the envelope.
//!
//! `ISA` is 106 characters: the element separator is the character at
//! offset 3, ISA16 (offset 104) is the component separator and the character
//! after it (offset 105) the segment terminator. From version 00402 on,
//! ISA11 (offset 82) is the repetition separator; before, it is the
//! standards identifier `U`. The ISA is read by counting its 16 element
//! separators rather than by offsets, and then each field's width is
//! checked: a field padded wrongly or broken by a line break (an ISA of
//! 105 or 107 characters) is refused naming the field, and, since the
//! header could still be read, with a TA1 whose note code names it too.
//! Delimiters are never guessed from a misplaced ISA.
//!
//! The envelope is `ISA`, optional `TA1` interchange acknowledgements,
//! `GS…GE` groups, `ST…SE` transaction sets, `IEA`.
//! Checked: SE01 counts the set's segments including ST and SE, SE02 repeats
//! ST02, GE01/GE02 count the group's sets and repeat GS06, IEA01/IEA02
//! count the groups and repeat ISA13. The body is read as UTF-8.

use std::sync::Arc;

use super::envelope::Envelope;
use super::model::{EdiSyntax, Interchange, Party, RawMessage, Separators, malformed};
use super::refusal::{Failure, Fault, refused};
use super::segment::Segment;
use super::segments::{tokenize, tokenize_located, trim_trailing};
use crate::CoreError;

mod walk;

use walk::Walk;

const SYNTAX: EdiSyntax = EdiSyntax::X12;

/// Reads an X12 interchange into its envelope and messages, refusing it at
/// its message `max_messages + 1`; a failure after the ISA carries what an
/// acknowledgement of the refusal needs.
pub(super) fn parse(bytes: &[u8], max_messages: usize) -> Result<(Vec<RawMessage>, Envelope), Failure> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    let text = std::str::from_utf8(&bytes[start..])
        .map_err(|e| CoreError::InvalidText { encoding: "UTF-8", offset: start + e.valid_up_to() })?;
    let (seps, isa_len, fields) = separators(text)?;
    let isa = tokenize(SYNTAX, &text[..isa_len], Separators { repetition: None, ..seps }, 1)?;
    let isa = isa.segment(0);
    let interchange = Interchange {
        syntax: SYNTAX,
        control_number: required(&isa, 13)?,
        sender: party(&isa, 5, 6),
        receiver: party(&isa, 7, 8),
    };
    let envelope = Envelope::x12(&isa, interchange, seps);
    if let Some(located) = check_widths(&fields) {
        return Err(refused(&envelope, None, located));
    }
    match tokenize_located(SYNTAX, trim_trailing(&text[isa_len..], seps.segment), seps, 2) {
        Ok(segments) => Walk::new(envelope, &Arc::new(segments)).run(max_messages),
        Err(located) => Err(refused(&envelope, None, located)),
    }
}

/// The separators, the length of the ISA segment with its terminator, and
/// ISA01 to ISA15 as sent (for their widths).
fn separators(text: &str) -> Result<(Separators, usize, Vec<String>), CoreError> {
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
    elements.truncate(15);
    Ok((seps, isa_len, elements))
}

/// The widths X12 fixes for ISA01 to ISA15 (ISA16 is one character by
/// how it is read): with the tag, 16 separators, ISA16 and the terminator,
/// 106 characters.
const ISA_WIDTHS: [usize; 15] = [2, 10, 2, 10, 2, 15, 2, 15, 6, 4, 1, 5, 9, 1, 1];

/// The first ISA field whose width is not the fixed one, or that holds a
/// line break, as a refusal of the header (400).
fn check_widths(fields: &[String]) -> Option<super::refusal::Located> {
    let (i, field, width) = fields.iter().zip(ISA_WIDTHS).enumerate().find_map(|(i, (field, width))| {
        let sent = field.chars().count();
        (sent != width || field.contains(['\r', '\n'])).then_some((i, field, sent))
    })?;
    let element = i + 1;
    let line_break = if field.contains(['\r', '\n']) { ", with a line break" } else { "" };
    let error = malformed(
        SYNTAX,
        format!(
            "ISA{element:02} has {width} characters{line_break}; X12 fixes it at {} (the ISA is 106 characters, \
             its fields padded with spaces, on one line)",
            ISA_WIDTHS[i]
        ),
    );
    Some((error, Fault::Header { element, component: 1 }))
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

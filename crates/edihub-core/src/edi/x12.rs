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

use super::envelope::Envelope;
use super::refusal::{Failure, refused};
use super::segments::{tokenize, tokenize_located};
use super::{EdiSyntax, Interchange, Party, RawMessage, Segment, Separators, malformed};
use crate::CoreError;

mod walk;

use walk::Walk;

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

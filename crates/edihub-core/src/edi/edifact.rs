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

use super::envelope::Envelope;
use super::model::{EdiSyntax, Interchange, Party, RawMessage, Separators, malformed};
use super::refusal::{Failure, refused};
use super::segment::Segment;
use super::segment::trim;
use super::segments::{tokenize, tokenize_located, trim_trailing};
use crate::CoreError;

mod walk;

use walk::walk;

const SYNTAX: EdiSyntax = EdiSyntax::Edifact;

/// Separators when there is no `UNA`.
const DEFAULT: Separators =
    Separators { element: '+', component: ':', repetition: None, segment: '\'', release: Some('?') };

/// Reads an EDIFACT interchange into its envelope and messages, refusing
/// it at its message `max_messages + 1`; a failure after the UNB carries
/// what an acknowledgement of the refusal needs.
pub(super) fn parse(bytes: &[u8], max_messages: usize) -> Result<(Vec<RawMessage>, Envelope), Failure> {
    let bytes = trim_start(bytes);
    let (seps, rest, una) = match bytes.strip_prefix(b"UNA") {
        Some(una) => {
            (service_string_advice(una)?, &una[6..], Some(una[..6].iter().map(|&b| char::from(b)).collect()))
        }
        None => (DEFAULT, bytes, None),
    };
    let decoded = decode(trim_start(rest), seps)?;
    let text = trim_trailing(&decoded, seps.segment);
    match tokenize_located(SYNTAX, text, seps, 1) {
        Ok(segments) => walk(&Arc::new(segments), seps, una, max_messages),
        Err(located) => Err(match header(text, seps, una) {
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

/// UNB's control reference and parties.
fn interchange(unb: &Segment) -> Result<Interchange, CoreError> {
    Ok(Interchange {
        syntax: SYNTAX,
        control_number: required(unb, 5, "UNB 0020 (interchange control reference)")?,
        sender: party(unb, 2),
        receiver: party(unb, 3),
    })
}

/// An element that must not be empty.
fn required(seg: &Segment, e: usize, name: &str) -> Result<String, CoreError> {
    match seg.el(e) {
        "" => Err(malformed(SYNTAX, format!("segment {} ({}): {name} is empty", seg.number, seg.tag()))),
        v => Ok(v.to_string()),
    }
}

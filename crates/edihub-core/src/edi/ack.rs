//! Acknowledgements of a received interchange: X12 997 or 999, a TA1 for a
//! repeated interchange, and EDIFACT CONTRL.
//!
//! An acknowledgement is an interchange of its own, sent back to the
//! partner: it is written with the received interchange's separators,
//! syntax identifier and version and test flag, with sender and receiver
//! swapped, and enveloped with counts that add up (SE01, GE01, IEA01; UNT,
//! UNZ). Its control number (ISA13 and GS06; UNB 0020) comes from the
//! caller, who keeps one counter per partner (the store's
//! `next_ack_number`): a partner's translator checks acknowledgements for
//! repeated control numbers like any other interchange.
//!
//! What it says: every message of a stored interchange is acknowledged as
//! accepted (AK5/IK5 `A`, UCM action `7`), a message that was already held
//! from an earlier interchange included, since the hub has it and the
//! partner must not send it again. A repeated interchange (same control
//! number from the same sender to the same receiver) is answered with its
//! rejection as a duplicate: X12 TA1 with TA104 `R` and TA105 `025`
//! (Duplicate Interchange Control Number), EDIFACT UCI with action `4` and
//! syntax error `26` (Duplicate detected). The original interchange stays
//! accepted; only the copy is refused. An X12 sender that sets ISA14 `1`
//! gets a TA1 on its interchange envelope too (`A`, note `000`).
//!
//! A refused interchange (nothing stored) whose header could be read is
//! answered in kind ([`acknowledge_refusal`]): an error in the interchange
//! envelope (IEA, UNZ, a syntax error) by a TA1 with TA104 `R` and its note
//! code or a UCI with action `4` and its syntax error code; an error in a
//! group or transaction set by a 997/999 that rejects every group and set
//! read (AK5/IK5 `R`, AK9 `R` with nothing accepted), the one in error with
//! its X12 codes, or by a CONTRL rejecting the interchange (UCI action `4`)
//! with the UCF or UCM/UCS/UCD of the group or message in error.

mod edifact;
mod x12;

use super::envelope::Envelope;
use super::refusal::{Fault, Refusal};
use super::{EdiSyntax, Separators};

/// Which acknowledgement is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckKind {
    /// X12 997 Functional Acknowledgment.
    X12Functional,
    /// X12 999 Implementation Acknowledgment (005010X231A1).
    X12Implementation,
    /// EDIFACT CONTRL (syntax and service report).
    Contrl,
}

impl AckKind {
    /// `997`, `999` or `contrl` (any case), the values of `?ack=`.
    pub fn parse(name: &str) -> Option<AckKind> {
        match name.to_ascii_lowercase().as_str() {
            "997" => Some(AckKind::X12Functional),
            "999" => Some(AckKind::X12Implementation),
            "contrl" => Some(AckKind::Contrl),
            _ => None,
        }
    }

    /// The default acknowledgement of a syntax: 997 for X12, CONTRL for EDIFACT.
    pub fn default_for(syntax: EdiSyntax) -> AckKind {
        match syntax {
            EdiSyntax::X12 => AckKind::X12Functional,
            EdiSyntax::Edifact => AckKind::Contrl,
        }
    }

    /// The syntax this acknowledgement is written in.
    pub fn syntax(self) -> EdiSyntax {
        match self {
            AckKind::X12Functional | AckKind::X12Implementation => EdiSyntax::X12,
            AckKind::Contrl => EdiSyntax::Edifact,
        }
    }

    /// `997`, `999`, `CONTRL`.
    pub fn as_str(self) -> &'static str {
        match self {
            AckKind::X12Functional => "997",
            AckKind::X12Implementation => "999",
            AckKind::Contrl => "CONTRL",
        }
    }
}

/// When the acknowledgement is made (UTC), for its envelope's date and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckTime {
    /// Four-digit year.
    pub year: u16,
    /// 1–12.
    pub month: u8,
    /// 1–31.
    pub day: u8,
    /// 0–23.
    pub hour: u8,
    /// 0–59.
    pub minute: u8,
}

impl AckTime {
    /// `CCYYMMDD`.
    fn long_date(&self) -> String {
        format!("{:04}{:02}{:02}", self.year, self.month, self.day)
    }

    /// `YYMMDD`.
    fn short_date(&self) -> String {
        format!("{:02}{:02}{:02}", self.year % 100, self.month, self.day)
    }

    /// `HHMM`.
    fn hhmm(&self) -> String {
        format!("{:02}{:02}", self.hour, self.minute)
    }
}

/// What an acknowledgement says about the interchange.
#[derive(Debug, Clone, Copy)]
enum Verdict<'a> {
    /// Stored: every message accepted.
    Accepted,
    /// A repeated interchange, rejected as a duplicate.
    Duplicate,
    /// Refused (nothing stored) for `Fault`.
    Refused(&'a Fault),
}

/// The acknowledgement of `envelope`: `kind`, numbered from the counter
/// value `number` (1, 2, …; wrapped to the syntax's width), made `at`.
/// `duplicate` marks a repeated interchange (TA1 / rejecting UCI).
/// `None` when `kind` is not written in the interchange's syntax.
///
/// The bytes are in the interchange's encoding: ISO 8859-1 for EDIFACT
/// UNOA–UNOC (whose values were read as such, so every character fits),
/// UTF-8 otherwise, so a party named with a non-ASCII character comes back
/// as the partner wrote it.
pub fn acknowledge(
    envelope: &Envelope,
    kind: AckKind,
    duplicate: bool,
    number: i64,
    at: AckTime,
) -> Option<Vec<u8>> {
    let verdict = if duplicate { Verdict::Duplicate } else { Verdict::Accepted };
    write(envelope, kind, verdict, number, at)
}

/// The acknowledgement of a refused interchange (see [`Refusal`]): a TA1
/// or a 997/999 rejecting what was read, or a CONTRL with action `4`;
/// otherwise as [`acknowledge`].
pub fn acknowledge_refusal(refusal: &Refusal, kind: AckKind, number: i64, at: AckTime) -> Option<Vec<u8>> {
    write(&refusal.envelope, kind, Verdict::Refused(&refusal.fault), number, at)
}

fn write(
    envelope: &Envelope,
    kind: AckKind,
    verdict: Verdict<'_>,
    number: i64,
    at: AckTime,
) -> Option<Vec<u8>> {
    if kind.syntax() != envelope.interchange.syntax {
        return None;
    }
    Some(match kind {
        AckKind::Contrl => {
            let text = edifact::contrl(envelope, verdict, number, at);
            // The first four characters decide, as when the interchange was read.
            match envelope.syntax_id.get(..4) {
                Some("UNOA" | "UNOB" | "UNOC") => {
                    text.chars().map(|c| u8::try_from(c).unwrap_or(b'?')).collect()
                }
                _ => text.into_bytes(),
            }
        }
        _ => x12::acknowledgement(envelope, kind, verdict, number, at).into_bytes(),
    })
}

/// `number` wrapped into `1..=max`: counters never stop, control numbers
/// have a fixed width (X12: 9 digits, EDIFACT 0020: 14 characters).
fn wrap(number: i64, max: i64) -> i64 {
    (number.max(1) - 1) % max + 1
}

/// Writes segments with an interchange's separators, counting them.
struct Writer<'a> {
    seps: &'a Separators,
    out: String,
    /// Segments written so far.
    count: usize,
}

impl<'a> Writer<'a> {
    fn new(seps: &'a Separators) -> Self {
        Writer { seps, out: String::new(), count: 0 }
    }

    /// One segment; each element is its components. Trailing empty
    /// elements and components are left out, as both standards ask.
    fn segment(&mut self, tag: &str, elements: &[&[&str]]) {
        let trimmed = |cs: &[&str]| cs.len() - cs.iter().rev().take_while(|c| c.is_empty()).count();
        let used = elements.len() - elements.iter().rev().take_while(|e| trimmed(e) == 0).count();
        self.out.push_str(tag);
        for element in &elements[..used] {
            self.out.push(self.seps.element);
            for (i, component) in element[..trimmed(element)].iter().enumerate() {
                if i > 0 {
                    self.out.push(self.seps.component);
                }
                self.push_escaped(component);
            }
        }
        self.out.push(self.seps.segment);
        self.count += 1;
    }

    /// A value with the release character before any service character
    /// (EDIFACT); X12 has none, and its values cannot hold its separators.
    fn push_escaped(&mut self, value: &str) {
        let s = self.seps;
        for c in value.chars() {
            let special = [Some(s.element), Some(s.component), Some(s.segment), s.repetition, s.release];
            if let Some(release) = s.release
                && special.contains(&Some(c))
            {
                self.out.push(release);
            }
            self.out.push(c);
        }
    }
}

#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod tests;

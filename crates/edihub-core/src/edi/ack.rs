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
mod kind;
mod writer;
mod x12;

use kind::Verdict;
pub use kind::{AckKind, AckTime};

use super::envelope::Envelope;
use super::refusal::Refusal;

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

#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod tests;

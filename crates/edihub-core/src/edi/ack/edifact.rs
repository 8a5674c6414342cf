//! EDIFACT CONTRL: a UCI for the interchange, then a UCM per message (in a
//! UCF per group when the interchange had groups), all acknowledged with
//! action `7`; for a repeated interchange the UCI alone, action `4`
//! (rejected) with syntax error `26` (duplicate detected).
//!
//! A refused interchange is rejected as a whole (UCI action `4`: this level
//! and all lower levels); the error is named where it lies: in the UCI
//! (`29` a count that does not match, `28` references that do not match,
//! `32` no message, `13` a missing trailer or unterminated segment, `18`
//! another syntax error; `13` with the UNB element, 0013 `UNB` and S011,
//! for a missing syntax version), in a UCF (the group's trailer, or `26`
//! for a UNG 0048 repeated in the interchange), or in a UCM with a UCS (the
//! trailer's position) and UCD (the element) for a message, or with `26`
//! (duplicate detected) alone for a UNH 0062 repeated in the interchange.
//!
//! The envelope repeats the received UNA (when there was one), syntax
//! identifier and version (when the UNB had none, which is refused: `4` for
//! UNOW and UNOY, the version that defines them, else `3`), and test
//! indicator (0035), with sender and recipient swapped. The CONTRL message is `CONTRL:D:3:UN` for syntax
//! versions up to 3 and `CONTRL:4:1:UN` for version 4, whose dates also
//! have a century (S004 `CCYYMMDD`).

use super::super::envelope::Envelope;
use super::super::model::{Party, Separators};
use super::super::refusal::{Fault, Mismatch};
use super::kind::{AckTime, Verdict};
use super::writer::{Writer, wrap};

/// The largest interchange control reference (0020 is up to 14 characters).
const MAX_CONTROL: i64 = 99_999_999_999_999;

/// The CONTRL interchange (UNA? UNB … UNZ).
pub(super) fn contrl(envelope: &Envelope, verdict: Verdict<'_>, number: i64, at: AckTime) -> String {
    let control = wrap(number, MAX_CONTROL).to_string();
    let seps: &Separators = &envelope.separators;
    let mut w = Writer::new(seps);
    if let Some(una) = &envelope.una {
        w.out.push_str("UNA");
        w.out.push_str(una);
    }
    let syntax_version = match envelope.syntax_version.as_str() {
        "" if matches!(envelope.syntax_id.as_str(), "UNOW" | "UNOY") => "4",
        "" => "3",
        given => given,
    };
    let version4 = syntax_version == "4";
    let date = if version4 { at.long_date() } else { at.short_date() };
    let ic = &envelope.interchange;
    let (recipient, sender) = (party(&ic.receiver), party(&ic.sender));
    let test = if envelope.test { "1" } else { "" };
    w.segment(
        "UNB",
        &[
            &[&envelope.syntax_id, syntax_version],
            &as_strs(&recipient),
            &as_strs(&sender),
            &[&date, &at.hhmm()],
            &[&control],
            &[],
            &[],
            &[],
            &[],
            &[],
            &[test],
        ],
    );
    let start = w.count;
    let identifier: &[&str] =
        if version4 { &["CONTRL", "4", "1", "UN"] } else { &["CONTRL", "D", "3", "UN"] };
    w.segment("UNH", &[&["1"], identifier]);
    let uci = |w: &mut Writer<'_>, action: &str, code: &str, site: &[&[&str]]| {
        let head: [&[&str]; 5] =
            [&[&ic.control_number], &as_strs(&sender), &as_strs(&recipient), &[action], &[code]];
        w.segment("UCI", &[&head[..], site].concat());
    };
    match verdict {
        Verdict::Duplicate => uci(&mut w, "4", "26", &[]),
        Verdict::Accepted => {
            uci(&mut w, "7", "", &[]);
            messages(&mut w, envelope);
        }
        Verdict::Refused(Fault::Header { element, component }) => {
            // 0013 names the segment, S011 the element and component.
            let (element, component) = (element.to_string(), component.to_string());
            uci(&mut w, "4", "13", &[&["UNB"], &[&element, &component]]);
        }
        Verdict::Refused(fault) => {
            uci(&mut w, "4", interchange_code(fault), &[]);
            located(&mut w, envelope, fault);
        }
    }
    let unt = (w.count - start + 1).to_string();
    w.segment("UNT", &[&[&unt], &["1"]]);
    w.segment("UNZ", &[&["1"], &[&control]]);
    w.out
}

/// UCF per group (when there were groups) and UCM per message.
fn messages(w: &mut Writer<'_>, envelope: &Envelope) {
    for group in &envelope.groups {
        if let Some(reference) = &group.reference {
            let (sender, recipient) = (as_strs(&group.sender), as_strs(&group.receiver));
            w.segment("UCF", &[&[reference], &sender, &recipient, &["7"]]);
        }
        for message in &group.messages {
            w.segment("UCM", &[&[&message.control], &as_strs(&message.identifier), &["7"]]);
        }
    }
}

/// The UCI's syntax error code of a refusal; empty when the error lies
/// in a group or message.
fn interchange_code(fault: &Fault) -> &'static str {
    match fault {
        Fault::Syntax { premature_end: true } => "13",
        Fault::Syntax { premature_end: false } => "18",
        Fault::Header { .. } => "13",
        Fault::Interchange(mismatch) => code(*mismatch),
        Fault::Group { .. } | Fault::Message { .. } => "",
    }
}

/// 29 (control count does not match), 28 (references do not match), 32
/// (lower level empty), 26 (duplicate detected).
fn code(mismatch: Mismatch) -> &'static str {
    match mismatch {
        Mismatch::Count => "29",
        Mismatch::Reference => "28",
        Mismatch::Empty => "32",
        Mismatch::Repeated => "26",
    }
}

/// The UCF, or UCM with UCS and UCD, of the group or message in error
/// (the envelope's last group, and its last message).
fn located(w: &mut Writer<'_>, envelope: &Envelope, fault: &Fault) {
    let Some(group) = envelope.groups.last() else { return };
    let group_code = match fault {
        Fault::Group { mismatch, .. } => code(*mismatch),
        Fault::Message { .. } => "",
        _ => return,
    };
    if let Some(reference) = &group.reference {
        let (sender, recipient) = (as_strs(&group.sender), as_strs(&group.receiver));
        w.segment("UCF", &[&[reference], &sender, &recipient, &["4"], &[group_code]]);
    }
    let (Fault::Message { mismatch, site }, Some(message)) = (fault, group.messages.last()) else { return };
    let error = code(*mismatch);
    w.segment("UCM", &[&[&message.control], &as_strs(&message.identifier), &["4"], &[error]]);
    // A repeated reference is an error of the message as a whole, reported
    // in its UCM; a trailer's error is located by UCS and UCD.
    if *mismatch == Mismatch::Repeated {
        return;
    }
    w.segment("UCS", &[&[&site.position.to_string()]]);
    w.segment("UCD", &[&[error], &[&site.element.to_string()]]);
}

/// A party as the components of S002/S003: id, then its qualifier.
fn party(p: &Party) -> Vec<String> {
    let mut out = vec![p.id.clone()];
    out.extend(p.qualifier.clone());
    out
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

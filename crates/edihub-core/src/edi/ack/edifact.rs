//! EDIFACT CONTRL: a UCI for the interchange, then a UCM per message (in a
//! UCF per group when the interchange had groups), all acknowledged with
//! action `7`; for a repeated interchange the UCI alone, action `4`
//! (rejected) with syntax error `26` (duplicate detected).
//!
//! The envelope repeats the received UNA (when there was one), syntax
//! identifier and version, and test indicator (0035), with sender and
//! recipient swapped. The CONTRL message is `CONTRL:D:3:UN` for syntax
//! versions up to 3 and `CONTRL:4:1:UN` for version 4, whose dates also
//! have a century (S004 `CCYYMMDD`).

use super::super::envelope::Envelope;
use super::super::{Party, Separators};
use super::{AckTime, Writer, wrap};

/// The largest interchange control reference (0020 is up to 14 characters).
const MAX_CONTROL: i64 = 99_999_999_999_999;

/// The CONTRL interchange (UNA? UNB … UNZ).
pub(super) fn contrl(envelope: &Envelope, duplicate: bool, number: i64, at: AckTime) -> String {
    let control = wrap(number, MAX_CONTROL).to_string();
    let seps: &Separators = &envelope.separators;
    let mut w = Writer::new(seps);
    if let Some(una) = &envelope.una {
        w.out.push_str("UNA");
        w.out.push_str(una);
    }
    let version4 = envelope.syntax_version == "4";
    let date = if version4 { at.long_date() } else { at.short_date() };
    let ic = &envelope.interchange;
    let (recipient, sender) = (party(&ic.receiver), party(&ic.sender));
    let test = if envelope.test { "1" } else { "" };
    w.segment(
        "UNB",
        &[
            &[&envelope.syntax_id, &envelope.syntax_version],
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
    if duplicate {
        w.segment("UCI", &[&[&ic.control_number], &as_strs(&sender), &as_strs(&recipient), &["4"], &["26"]]);
    } else {
        w.segment("UCI", &[&[&ic.control_number], &as_strs(&sender), &as_strs(&recipient), &["7"]]);
        messages(&mut w, envelope);
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

/// A party as the components of S002/S003: id, then its qualifier.
fn party(p: &Party) -> Vec<String> {
    let mut out = vec![p.id.clone()];
    out.extend(p.qualifier.clone());
    out
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

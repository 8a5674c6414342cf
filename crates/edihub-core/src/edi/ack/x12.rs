//! X12 acknowledgements: 997 and 999 with one transaction set per received
//! functional group (AK1…AK9, with AK2 and AK5/IK5 per transaction set),
//! all in one `FA` group; a TA1 alone for a repeated interchange.
//!
//! The envelope mirrors the received one: its ISA11 and ISA12 (a 999 is
//! a 005010 transaction, so its ISA12 is `00501`), its separators and its
//! usage indicator (ISA15), with the interchange sender and receiver (ISA05
//! to ISA08) and the group's application sender and receiver (GS02, GS03)
//! swapped. ISA13 and GS06 both carry the acknowledgement's number.

use super::super::envelope::{Envelope, GroupRef};
use super::{AckKind, AckTime, Writer, wrap};

/// The largest X12 interchange control number (ISA13, nine digits).
const MAX_CONTROL: i64 = 999_999_999;

/// The implementation guide a 999 follows (its ST03 and GS08).
const IMPLEMENTATION_999: &str = "005010X231A1";

/// The acknowledgement interchange (ISA … IEA).
pub(super) fn acknowledgement(
    envelope: &Envelope,
    kind: AckKind,
    duplicate: bool,
    number: i64,
    at: AckTime,
) -> String {
    let control = wrap(number, MAX_CONTROL);
    let implementation = kind == AckKind::X12Implementation;
    let mut seps = envelope.separators;
    let (isa11, isa12) = if implementation && envelope.syntax_version.as_str() < "00501" {
        let repetition = free_repetition(&seps);
        seps.repetition = Some(repetition);
        (repetition.to_string(), "00501".to_string())
    } else {
        (envelope.syntax_id.clone(), envelope.syntax_version.clone())
    };
    let mut w = Writer::new(&seps);
    let ic = &envelope.interchange;
    let qualifier = |q: &Option<String>| format!("{:<2}", q.as_deref().unwrap_or("ZZ"));
    let (rq, sq) = (qualifier(&ic.receiver.qualifier), qualifier(&ic.sender.qualifier));
    let (rid, sid) = (format!("{:<15}", ic.receiver.id), format!("{:<15}", ic.sender.id));
    let isa13 = format!("{control:09}");
    let component = seps.component.to_string();
    let usage = if envelope.test { "T" } else { "P" };
    let blank = " ".repeat(10);
    w.segment(
        "ISA",
        &[
            &["00"],
            &[&blank],
            &["00"],
            &[&blank],
            &[&rq],
            &[&rid],
            &[&sq],
            &[&sid],
            &[&at.short_date()],
            &[&at.hhmm()],
            &[&isa11],
            &[&isa12],
            &[&isa13],
            &["0"],
            &[usage],
            &[&component],
        ],
    );
    let groups = if duplicate {
        // TA101–TA105: the received ISA13, ISA09, ISA10; rejected; 025.
        w.segment("TA1", &[&[&ic.control_number], &[&envelope.date], &[&envelope.time], &["R"], &["025"]]);
        0
    } else {
        functional_group(&mut w, envelope, implementation, control, at);
        1
    };
    w.segment("IEA", &[&[&groups.to_string()], &[&isa13]]);
    w.out
}

/// A repetition separator for a 00501 envelope when the received one
/// (before 00402) had none: the first that is not already a separator.
fn free_repetition(seps: &super::Separators) -> char {
    let used = [seps.element, seps.component, seps.segment];
    ['^', '|', '!', '`', '{'].into_iter().find(|c| !used.contains(c)).unwrap_or('^')
}

/// GS*FA … GE with one 997/999 per received group.
fn functional_group(
    w: &mut Writer<'_>,
    envelope: &Envelope,
    implementation: bool,
    control: i64,
    at: AckTime,
) {
    let first = envelope.groups.first();
    let app = |pick: fn(&GroupRef) -> &Vec<String>| first.map(|g| pick(g).join("")).unwrap_or_default();
    let version = if implementation {
        IMPLEMENTATION_999.to_string()
    } else {
        first.map(|g| g.version.clone()).unwrap_or_default()
    };
    let gs06 = control.to_string();
    w.segment(
        "GS",
        &[
            &["FA"],
            &[&app(|g| &g.receiver)],
            &[&app(|g| &g.sender)],
            &[&at.long_date()],
            &[&at.hhmm()],
            &[&gs06],
            &["X"],
            &[&version],
        ],
    );
    for (i, group) in envelope.groups.iter().enumerate() {
        transaction_set(w, group, implementation, i + 1);
    }
    w.segment("GE", &[&[&envelope.groups.len().to_string()], &[&gs06]]);
}

/// One 997/999 acknowledging `group`, as transaction set number `n`.
fn transaction_set(w: &mut Writer<'_>, group: &GroupRef, implementation: bool, n: usize) {
    let st02 = format!("{n:04}");
    let start = w.count;
    let reference = group.reference.as_deref().unwrap_or("");
    if implementation {
        w.segment("ST", &[&["999"], &[&st02], &[IMPLEMENTATION_999]]);
        w.segment("AK1", &[&[&group.functional_id], &[reference], &[&group.version]]);
    } else {
        w.segment("ST", &[&["997"], &[&st02]]);
        w.segment("AK1", &[&[&group.functional_id], &[reference]]);
    }
    for set in &group.messages {
        let convention = if implementation { set.identifier.first().map_or("", String::as_str) } else { "" };
        w.segment("AK2", &[&[&set.message_type], &[&set.control], &[convention]]);
        w.segment(if implementation { "IK5" } else { "AK5" }, &[&["A"]]);
    }
    let n_sets = group.messages.len().to_string();
    w.segment("AK9", &[&["A"], &[&n_sets], &[&n_sets], &[&n_sets]]);
    let se01 = (w.count - start + 1).to_string();
    w.segment("SE", &[&[&se01], &[&st02]]);
}

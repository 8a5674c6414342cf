//! X12 acknowledgements: 997 and 999 with one transaction set per received
//! functional group (AK1…AK9, with AK2 and AK5/IK5 per transaction set),
//! all in one `FA` group, after a TA1 when ISA14 asked for one; a TA1 alone
//! for a repeated interchange or an interchange envelope in error.
//!
//! Codes of a refusal: TA105 `001` (ISA13/IEA02 differ), `021` (IEA01
//! count), `023` (premature end), `024` (other invalid content), and for an
//! ISA field of the wrong width the field's own note (`005`–`020`, see
//! [`header_note`]); AK905 `5` (GE01 count), `4` (GE02/GS06 differ) and
//! `19` (GS06 repeated in the interchange; from 005010 on, the versions
//! that define it); AK502/IK502 `4` (SE01 count) and `3` (SE02/ST02
//! differ), with AK3/IK3 naming the SE and its position (code `8`, data
//! element errors) and AK4/IK4 the element (data element 96 or 329, code
//! `7`, the value as sent), and `23` (ST02 repeated in the group). AK902
//! is the group's GE01 as sent when the interchange holds it, else the sets
//! read; AK903 the sets read (each named by an AK2).
//!
//! The envelope mirrors the received one: its ISA11 and ISA12 (a 999 is
//! a 005010 transaction, so its ISA12 is `00501`, with the received
//! repetition separator in ISA11 when there was one), its separators and
//! its usage indicator (ISA15), with the interchange sender and receiver
//! (ISA05 to ISA08) and the group's application sender and receiver (GS02,
//! GS03) swapped. ISA13 and GS06 both carry the acknowledgement's number.
//! GS08 is the version of the acknowledgement itself: the 999's
//! implementation guide `005010X231A1`, or for a 997 the received
//! group's version without an implementation guide suffix (`005010X279A1`
//! → `005010`), as the 997 follows the base standard.

use super::super::envelope::{Envelope, GroupRef};
use super::super::refusal::{Fault, Mismatch, TrailerSite};
use super::kind::{AckKind, AckTime, Verdict};
use super::writer::{Writer, wrap};

/// The largest X12 interchange control number (ISA13, nine digits).
const MAX_CONTROL: i64 = 999_999_999;

/// The implementation guide a 999 follows (its ST03 and GS08).
const IMPLEMENTATION_999: &str = "005010X231A1";

/// The acknowledgement interchange (ISA … IEA).
pub(super) fn acknowledgement(
    envelope: &Envelope,
    kind: AckKind,
    verdict: Verdict<'_>,
    number: i64,
    at: AckTime,
) -> String {
    let control = wrap(number, MAX_CONTROL);
    let implementation = kind == AckKind::X12Implementation;
    let mut seps = envelope.separators;
    let (isa11, isa12) = if implementation && envelope.syntax_version.as_str() < "00501" {
        let repetition = seps.repetition.unwrap_or_else(|| free_repetition(&seps));
        seps.repetition = Some(repetition);
        (repetition.to_string(), "00501".to_string())
    } else {
        (fit(&envelope.syntax_id, 1), fit(&envelope.syntax_version, 5))
    };
    let mut w = Writer::new(&seps);
    let ic = &envelope.interchange;
    let qualifier = |q: &Option<String>| fit(q.as_deref().unwrap_or("ZZ"), 2);
    let (rq, sq) = (qualifier(&ic.receiver.qualifier), qualifier(&ic.sender.qualifier));
    let (rid, sid) = (fit(&ic.receiver.id, 15), fit(&ic.sender.id, 15));
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
    let groups = match interchange_note(verdict) {
        Some(note) => {
            ta1(&mut w, envelope, "R", note);
            0
        }
        None => {
            if envelope.ta1_requested {
                ta1(&mut w, envelope, "A", "000");
            }
            let fault = match verdict {
                Verdict::Refused(fault) => Some(fault),
                _ => None,
            };
            functional_group(&mut w, envelope, implementation, control, at, fault);
            1
        }
    };
    w.segment("IEA", &[&[&groups.to_string()], &[&isa13]]);
    w.out
}

/// A value for an ISA field of `width` characters: padded with spaces, cut
/// when longer, without control characters. The received ISA may be
/// refused for a field of the wrong width; its TA1 still has to be an ISA
/// of 106 characters the partner can read.
fn fit(value: &str, width: usize) -> String {
    let mut out: String = value.chars().filter(|c| !c.is_control()).take(width).collect();
    let len = out.chars().count();
    out.extend(std::iter::repeat_n(' ', width - len));
    out
}

/// TA105 of an interchange rejected as a whole (a TA1 alone), or `None`
/// when groups are acknowledged.
fn interchange_note(verdict: Verdict<'_>) -> Option<&'static str> {
    match verdict {
        Verdict::Accepted | Verdict::Refused(Fault::Group { .. } | Fault::Message { .. }) => None,
        Verdict::Duplicate => Some("025"),
        Verdict::Refused(Fault::Syntax { premature_end: true }) => Some("023"),
        Verdict::Refused(Fault::Header { element, .. }) => Some(header_note(*element)),
        Verdict::Refused(Fault::Interchange(Mismatch::Count)) => Some("021"),
        Verdict::Refused(Fault::Interchange(Mismatch::Reference)) => Some("001"),
        Verdict::Refused(
            Fault::Syntax { premature_end: false } | Fault::Interchange(Mismatch::Empty | Mismatch::Repeated),
        ) => Some("024"),
    }
}

/// The TA1 note of an ISA field in error: each field has its own ("Invalid
/// Interchange Sender ID" for ISA06, …); `022` (Invalid Control Structure)
/// for any other.
fn header_note(element: usize) -> &'static str {
    const NOTES: [&str; 16] = [
        "010", "011", "012", "013", "005", "006", "007", "008", "014", "015", "016", "017", "018", "019",
        "020", "027",
    ];
    element.checked_sub(1).and_then(|i| NOTES.get(i)).copied().unwrap_or("022")
}

/// TA101–TA105: the received ISA13, ISA09, ISA10; `status`; `note`.
/// TA101 has nine digits: a received ISA13 of another width (refused with
/// note `018`) is written as its number in nine digits when it has one.
fn ta1(w: &mut Writer<'_>, envelope: &Envelope, status: &str, note: &str) {
    let sent = envelope.interchange.control_number.as_str();
    let number = sent.trim_start_matches('0');
    let control = match number.len() {
        len if len <= 9 && sent.bytes().all(|b| b.is_ascii_digit()) => format!("{number:0>9}"),
        _ => sent.to_string(),
    };
    w.segment("TA1", &[&[&control], &[&envelope.date], &[&envelope.time], &[status], &[note]]);
}

/// A repetition separator for a 00501 envelope when the received one
/// (before 00402) had none: the first that is not already a separator.
fn free_repetition(seps: &super::super::model::Separators) -> char {
    let used = [seps.element, seps.component, seps.segment];
    ['^', '|', '!', '`', '{'].into_iter().find(|c| !used.contains(c)).unwrap_or('^')
}

/// GS*FA … GE with one 997/999 per received group; a refusal's `fault`
/// rejects them all, and locates the error in the last one.
fn functional_group(
    w: &mut Writer<'_>,
    envelope: &Envelope,
    implementation: bool,
    control: i64,
    at: AckTime,
    fault: Option<&Fault>,
) {
    let first = envelope.groups.first();
    let app = |pick: fn(&GroupRef) -> &Vec<String>| first.map(|g| pick(g).join("")).unwrap_or_default();
    let version = if implementation {
        IMPLEMENTATION_999.to_string()
    } else {
        first.map(|g| base_version(&g.version).to_string()).unwrap_or_default()
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
    let last = envelope.groups.len();
    for (i, group) in envelope.groups.iter().enumerate() {
        let status = match fault {
            None => Status::Accepted,
            Some(fault) if i + 1 == last => Status::Rejected(Some(fault)),
            Some(_) => Status::Rejected(None),
        };
        transaction_set(w, group, (implementation, &version), i + 1, status);
    }
    w.segment("GE", &[&[&envelope.groups.len().to_string()], &[&gs06]]);
}

/// A GS08 without its implementation guide suffix: the version, release
/// and subrelease (`005010X279A1` → `005010`); as sent when it does not
/// start with those six digits.
fn base_version(gs08: &str) -> &str {
    match gs08.get(..6) {
        Some(base) if base.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => gs08,
    }
}

/// How a group is acknowledged.
#[derive(Clone, Copy)]
enum Status<'a> {
    Accepted,
    /// Rejected, with the refusal's fault when it lies in this group.
    Rejected(Option<&'a Fault>),
}

/// One 997/999 acknowledging `group`, as transaction set number `n`;
/// `kind` is whether it is a 999, and the acknowledgement's own GS08.
fn transaction_set(
    w: &mut Writer<'_>,
    group: &GroupRef,
    (implementation, version): (bool, &str),
    n: usize,
    status: Status<'_>,
) {
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
    let prefix = if implementation { "IK" } else { "AK" };
    let sets = group.messages.len();
    for (i, set) in group.messages.iter().enumerate() {
        let convention = if implementation { set.identifier.first().map_or("", String::as_str) } else { "" };
        w.segment("AK2", &[&[&set.message_type], &[&set.control], &[convention]]);
        match status {
            Status::Accepted => w.segment(&format!("{prefix}5"), &[&["A"]]),
            Status::Rejected(Some(Fault::Message { mismatch, site })) if i + 1 == sets => {
                set_error(w, prefix, *mismatch, site);
            }
            Status::Rejected(_) => w.segment(&format!("{prefix}5"), &[&["R"]]),
        }
    }
    let n_sets = sets.to_string();
    let included = group.declared.unwrap_or(sets).to_string();
    match status {
        Status::Accepted => w.segment("AK9", &[&["A"], &[&n_sets], &[&n_sets], &[&n_sets]]),
        Status::Rejected(Some(Fault::Group { mismatch })) => {
            let code = group_code(*mismatch, version);
            w.segment("AK9", &[&["R"], &[&included], &[&n_sets], &["0"], &[code]]);
        }
        Status::Rejected(_) => w.segment("AK9", &[&["R"], &[&included], &[&n_sets], &["0"]]),
    }
    let se01 = (w.count - start + 1).to_string();
    w.segment("SE", &[&[&se01], &[&st02]]);
}

/// AK905 of a group in error: `5` (GE01 count), `4` (GE02/GS06 differ),
/// `19` (GS06 not unique within the interchange) in acknowledgements of
/// version 005010 and later, the versions that define it; none before.
fn group_code(mismatch: Mismatch, version: &str) -> &'static str {
    match mismatch {
        Mismatch::Count => "5",
        Mismatch::Reference => "4",
        Mismatch::Repeated if version >= "005010" => "19",
        Mismatch::Repeated | Mismatch::Empty => "",
    }
}

/// AK3/AK4/AK5 (IK3/IK4/IK5) of the transaction set in error: a trailer
/// that disagrees is named with its element; a repeated ST02 is an error
/// of the set as a whole (AK5 code `23`, "Transaction Set Control Number
/// Not Unique within the Functional Group").
fn set_error(w: &mut Writer<'_>, prefix: &str, mismatch: Mismatch, site: &TrailerSite) {
    // SE01 is data element 96, SE02 data element 329.
    let (element_ref, code) = match mismatch {
        Mismatch::Count => ("96", "4"),
        Mismatch::Reference => ("329", "3"),
        // `Empty` names no message; it is listed for completeness.
        Mismatch::Repeated | Mismatch::Empty => {
            w.segment(&format!("{prefix}5"), &[&["R"], &["23"]]);
            return;
        }
    };
    let position = site.position.to_string();
    w.segment(&format!("{prefix}3"), &[&[&site.tag], &[&position], &[""], &["8"]]);
    w.segment(&format!("{prefix}4"), &[&[&site.element.to_string()], &[element_ref], &["7"], &[&site.value]]);
    w.segment(&format!("{prefix}5"), &[&["R"], &[code]]);
}

//! The walk through an X12 envelope after its ISA: optional `TA1`s,
//! `GS…GE` groups, `ST…SE` transaction sets, IEA, each count and reference
//! checked where its trailer stands, so a refusal names the segment and
//! carries what a 999 or TA1 of it needs.

use std::collections::HashSet;
use std::sync::Arc;

use super::{SYNTAX, required};
use crate::CoreError;
use crate::edi::envelope::{Envelope, GS, GroupRef, MessageRef};
use crate::edi::model::{EdiHeader, Interchange, RawMessage, count, disagree, malformed};
use crate::edi::refusal::{Failure, Fault, Located, Mismatch, refused, repeated_message, syntax, trailer};
use crate::edi::segment::{Segment, Text};

/// An open group: GS, its version and the sets seen in it.
struct Group<'a> {
    gs: Segment<'a>,
    control: String,
    sets: GroupRef,
    /// The ST02s of `sets`, so that a repeat is found in one probe: a
    /// scan of the earlier sets made an interchange of n sets cost n²
    /// comparisons.
    controls: HashSet<String>,
}

/// The walk through the envelope, keeping what it read so a refusal can
/// say where it stopped.
pub(super) struct Walk<'a> {
    envelope: Envelope,
    /// The interchange its messages' headers share.
    interchange: Arc<Interchange>,
    /// The segments after the ISA, which its messages share.
    text: &'a Arc<Text>,
    messages: Vec<RawMessage>,
    group: Option<Group<'a>>,
    /// The GS06s of the groups closed so far (see [`Group::controls`]).
    group_controls: HashSet<String>,
    /// The ST of the transaction set being read.
    open: Option<Segment<'a>>,
    /// The index of the segment being read (in `text`).
    at: usize,
}

impl<'a> Walk<'a> {
    pub(super) fn new(envelope: Envelope, text: &'a Arc<Text>) -> Walk<'a> {
        let interchange = Arc::new(envelope.interchange.clone());
        Walk {
            envelope,
            interchange,
            text,
            messages: Vec::new(),
            group: None,
            group_controls: HashSet::new(),
            open: None,
            at: 0,
        }
    }

    /// Walks the segments after the ISA and checks counts and references,
    /// stopping at transaction set `max_messages + 1` (a refusal without an
    /// acknowledgement: the request is too large, not wrong).
    pub(super) fn run(mut self, max_messages: usize) -> Result<(Vec<RawMessage>, Envelope), Failure> {
        let text: &'a Text = self.text;
        let mut segs = text.segments(0..text.len());
        while let Some(seg) = segs.next() {
            self.at = seg.index();
            let done = self.step(seg).map_err(|e| self.refused(e))?;
            if self.messages.len() > max_messages {
                return Err(Failure::bare(CoreError::TooManyMessages { limit: max_messages }));
            }
            if done {
                return match segs.next() {
                    None => Ok((self.messages, self.envelope)),
                    Some(after) => {
                        let e = malformed(
                            SYNTAX,
                            format!("segment {} ({}) after IEA", after.number, after.tag()),
                        );
                        Err(self.refused(syntax(e)))
                    }
                };
            }
        }
        let e = malformed(SYNTAX, "the interchange ends without IEA".into());
        Err(self.refused((e, Fault::Syntax { premature_end: true })))
    }

    /// The refusal of the interchange at the segment being read. An open
    /// group takes the count its GE declares, when the interchange holds
    /// that GE: a 997/999 reports it (AK902) although the walk stops before it.
    fn refused(&self, located: Located) -> Failure {
        let open = self.group.as_ref().map(|g| {
            let mut sets = g.sets.clone();
            sets.declared = sets.declared.or_else(|| self.declared_ahead());
            sets
        });
        refused(&self.envelope, open.as_ref(), located)
    }

    /// GE01 of the open group's GE, when the segments after the one being
    /// read hold it (before any other GS or IEA) and it is a number.
    fn declared_ahead(&self) -> Option<usize> {
        let mut after = self.text.segments(self.at + 1..self.text.len());
        let ge = after.find(|s| matches!(s.tag(), "GE" | "GS" | "IEA")).filter(|s| s.tag() == "GE")?;
        ge.el(1).parse().ok()
    }

    /// One segment; true after the IEA.
    fn step(&mut self, seg: Segment<'a>) -> Result<bool, Located> {
        match (seg.tag(), &mut self.open, &mut self.group) {
            ("SE", Some(_), Some(g)) => {
                let st = self.open.take().expect("open");
                let shared = (&self.interchange, self.text);
                let set = transaction_set(shared, g, st, &seg)?;
                self.messages.push(set);
            }
            ("ST" | "GS" | "GE" | "IEA" | "ISA", Some(st), _) => {
                return Err(syntax(malformed(
                    SYNTAX,
                    format!(
                        "segment {} ({}) inside transaction set {} (ST at segment {}): SE is missing",
                        seg.number,
                        seg.tag(),
                        st.el(2),
                        st.number
                    ),
                )));
            }
            // A segment of the open set: the set is the range from ST to SE.
            (_, Some(_), _) => {}
            ("ST", None, Some(_)) => self.open = Some(seg),
            // Interchange acknowledgements come before the groups; they
            // are part of the envelope, not messages.
            ("TA1", None, None) if self.envelope.groups.is_empty() => {}
            ("GS", None, None) => {
                let sets = GroupRef::open(Some(&seg), GS);
                let control = required(&seg, 6).map_err(syntax)?;
                self.group = Some(Group { control, gs: seg, sets, controls: HashSet::new() });
            }
            ("GE", None, Some(g)) => {
                close_group(g, &seg, &mut self.group_controls)?;
                let group = self.group.take().expect("group");
                self.envelope.groups.push(group.sets);
            }
            ("IEA", None, None) => {
                check_iea(&self.envelope.interchange, &seg, self.envelope.groups.len())?;
                return Ok(true);
            }
            _ => {
                let place = if self.group.is_some() {
                    "inside a group, outside a transaction set"
                } else {
                    "outside a group"
                };
                return Err(syntax(malformed(
                    SYNTAX,
                    format!("segment {} ({}) is out of place ({place})", seg.number, seg.tag()),
                )));
            }
        }
        Ok(false)
    }
}

/// Checks SE against its ST and builds the message, adding its
/// reference to the group (also when it disagrees, for the refusal).
fn transaction_set(
    (interchange, text): (&Arc<Interchange>, &Arc<Text>),
    group: &mut Group,
    st: Segment,
    se: &Segment,
) -> Result<RawMessage, Located> {
    let body = st.index() + 1..se.index();
    let message_type = required(&st, 1).map_err(syntax)?;
    let control = required(&st, 2).map_err(syntax)?;
    group.sets.messages.push(MessageRef::of(&st, &message_type, &control));
    let counted = body.len() + 2;
    let declared = count(SYNTAX, se, 1, "SE01 (number of included segments)").map_err(syntax)?;
    if declared != counted {
        let e = disagree(
            SYNTAX,
            format!(
                "SE01 of transaction set {control} says {declared} segments, the set has {counted} (ST to SE)"
            ),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Count, site: trailer(se, counted, 1) }));
    }
    if se.el(2) != control {
        let e = disagree(
            SYNTAX,
            format!("SE02 `{}` does not match ST02 `{control}` (segment {})", se.el(2), se.number),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Reference, site: trailer(se, counted, 2) }));
    }
    if !group.controls.insert(control.clone()) {
        let e = disagree(
            SYNTAX,
            format!(
                "ST02 `{control}` (segment {}) repeats the control number of an earlier transaction set in group {}: \
                 X12 makes it unique within its group",
                st.number, group.control
            ),
        );
        return Err(repeated_message(&st, 2, e));
    }
    let header = EdiHeader {
        interchange: Arc::clone(interchange),
        message_type,
        version: group.gs.el(8).to_string(),
        group_control: Some(group.control.clone()),
        control_number: control,
    };
    Ok(RawMessage { header, text: Arc::clone(text), body })
}

/// Checks GE against its GS and the interchange's earlier groups (their
/// GS06s, `earlier`, to which it adds this one), keeping GE01 in the
/// group's reference for its acknowledgement.
fn close_group(group: &mut Group, ge: &Segment, earlier: &mut HashSet<String>) -> Result<(), Located> {
    let declared = count(SYNTAX, ge, 1, "GE01 (number of transaction sets)").map_err(syntax)?;
    group.sets.declared = Some(declared);
    let sets = group.sets.messages.len();
    if declared != sets {
        let e = disagree(
            SYNTAX,
            format!(
                "GE01 of group {} says {declared} transaction sets, the group has {}",
                group.control, sets
            ),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Count }));
    }
    if ge.el(2) != group.control {
        let e = disagree(SYNTAX, format!("GE02 `{}` does not match GS06 `{}`", ge.el(2), group.control));
        return Err((e, Fault::Group { mismatch: Mismatch::Reference }));
    }
    if !earlier.insert(group.control.clone()) {
        let e = disagree(
            SYNTAX,
            format!(
                "GS06 `{}` (segment {}) repeats the control number of an earlier group: X12 makes it unique \
                 within its interchange",
                group.control, group.gs.number
            ),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Repeated }));
    }
    Ok(())
}

fn check_iea(interchange: &Interchange, iea: &Segment, groups: usize) -> Result<(), Located> {
    let declared = count(SYNTAX, iea, 1, "IEA01 (number of functional groups)").map_err(syntax)?;
    if declared != groups {
        let e = disagree(
            SYNTAX,
            format!("IEA01 says {declared} functional groups, the interchange has {groups}"),
        );
        return Err((e, Fault::Interchange(Mismatch::Count)));
    }
    if iea.el(2) != interchange.control_number {
        let e = disagree(
            SYNTAX,
            format!("IEA02 `{}` does not match ISA13 `{}`", iea.el(2), interchange.control_number),
        );
        return Err((e, Fault::Interchange(Mismatch::Reference)));
    }
    Ok(())
}

//! The walk through an EDIFACT envelope once its segments are read: UNB,
//! optional `UNG…UNE` groups, `UNH…UNT` messages, UNZ, each count and
//! reference checked where its trailer stands, so a refusal names the
//! segment and carries what a CONTRL of it needs.

use std::collections::HashSet;
use std::sync::Arc;

use super::{SYNTAX, interchange, required};
use crate::CoreError;
use crate::edi::envelope::{Envelope, GroupRef, MessageRef, UNG};
use crate::edi::model::{EdiHeader, Interchange, RawMessage, Separators, count, disagree, malformed};
use crate::edi::refusal::{Failure, Fault, Located, Mismatch, refused, repeated_message, syntax, trailer};
use crate::edi::segment::trim;
use crate::edi::segment::{Segment, Text};

/// An open group: UNG 0048 and the messages seen in it.
struct Group {
    reference: String,
    messages: GroupRef,
    number: usize,
}

/// Walks the envelope and checks its counts and references, stopping at
/// message `max_messages + 1` (a refusal without an acknowledgement: the
/// request is too large, not wrong).
pub(super) fn walk(
    text: &Arc<Text>,
    seps: Separators,
    una: Option<String>,
    max_messages: usize,
) -> Result<(Vec<RawMessage>, Envelope), Failure> {
    let mut segs = text.segments(0..text.len());
    let unb =
        segs.next().filter(|s| s.tag() == "UNB").ok_or_else(|| malformed(SYNTAX, "no UNB segment".into()))?;
    let interchange = interchange(&unb)?;
    let envelope = Envelope::edifact(&unb, interchange.clone(), seps, una);
    // The version is mandatory (it decides the syntax rules, and the
    // CONTRL's version): refused rather than assumed.
    if envelope.syntax_version.is_empty() {
        let e = malformed(
            SYNTAX,
            format!("segment {} (UNB): S001 0002 (syntax version number) is missing", unb.number),
        );
        return Err(refused(&envelope, None, (e, Fault::Header { element: 1, component: 2 })));
    }
    let mut walk = Walk {
        interchange: Arc::new(interchange),
        text,
        envelope,
        loose: GroupRef::open(None, UNG),
        messages: Vec::new(),
        controls: HashSet::new(),
        group: None,
        group_references: HashSet::new(),
        open: None,
    };
    while let Some(seg) = segs.next() {
        let done = walk.step(seg).map_err(|e| walk.refused(e))?;
        if walk.messages.len() > max_messages {
            return Err(Failure::bare(CoreError::TooManyMessages { limit: max_messages }));
        }
        if done {
            return match segs.next() {
                None => {
                    if walk.envelope.groups.is_empty() {
                        walk.envelope.groups.push(walk.loose);
                    }
                    Ok((walk.messages, walk.envelope))
                }
                Some(after) => {
                    let e =
                        malformed(SYNTAX, format!("segment {} ({}) after UNZ", after.number, after.tag()));
                    Err(walk.refused(syntax(e)))
                }
            };
        }
    }
    let e = malformed(SYNTAX, "the interchange ends without UNZ".into());
    Err(walk.refused((e, Fault::Syntax { premature_end: true })))
}

/// The walk through the envelope, keeping what it read so a refusal can
/// say where it stopped.
struct Walk<'a> {
    envelope: Envelope,
    /// The interchange its messages' headers share.
    interchange: Arc<Interchange>,
    /// The interchange's segments, which its messages share.
    text: &'a Arc<Text>,
    /// The messages outside UNG.
    loose: GroupRef,
    messages: Vec<RawMessage>,
    /// The UNH 0062s of `messages`, so that a repeat is found in one
    /// probe: a scan of the earlier messages made an interchange of n
    /// messages cost n² comparisons.
    controls: HashSet<String>,
    group: Option<Group>,
    /// The UNG 0048s of the groups closed so far.
    group_references: HashSet<String>,
    /// The UNH of the message being read.
    open: Option<Segment<'a>>,
}

impl<'a> Walk<'a> {
    fn refused(&self, located: Located) -> Failure {
        let open = match &self.group {
            Some(g) => Some(&g.messages),
            None => {
                (self.envelope.groups.is_empty() && !self.loose.messages.is_empty()).then_some(&self.loose)
            }
        };
        refused(&self.envelope, open, located)
    }

    /// One segment; true after the UNZ.
    fn step(&mut self, seg: Segment<'a>) -> Result<bool, Located> {
        let groups = self.envelope.groups.len();
        match (seg.tag(), &mut self.open) {
            ("UNT", Some(_)) => {
                let unh = self.open.take().expect("open");
                let reference = self.group.as_ref().map(|g| g.reference.clone());
                let refs = match self.group.as_mut() {
                    Some(g) => &mut g.messages,
                    None => &mut self.loose,
                };
                let raw = message((&self.interchange, self.text), reference, refs, unh, &seg)?;
                let control = &raw.header.control_number;
                if !self.controls.insert(control.clone()) {
                    let e = disagree(
                        SYNTAX,
                        format!(
                            "UNH 0062 `{control}` (segment {}) repeats the reference of an earlier message: \
                             EDIFACT makes it unique within its interchange",
                            unh.number
                        ),
                    );
                    return Err(repeated_message(&unh, 1, e));
                }
                self.messages.push(raw);
            }
            ("UNH" | "UNG" | "UNE" | "UNZ" | "UNB", Some(unh)) => {
                return Err(syntax(malformed(
                    SYNTAX,
                    format!(
                        "segment {} ({}) inside message {} (UNH at segment {}): UNT is missing",
                        seg.number,
                        seg.tag(),
                        unh.el(1),
                        unh.number
                    ),
                )));
            }
            // A segment of the open message: the message is the range from UNH to UNT.
            (_, Some(_)) => {}
            ("UNH", None) => {
                if self.group.is_none() && groups > 0 {
                    return Err(syntax(malformed(
                        SYNTAX,
                        format!("segment {} (UNH) outside a group after groups", seg.number),
                    )));
                }
                self.open = Some(seg);
            }
            ("UNG", None) if self.group.is_none() && (groups > 0 || self.messages.is_empty()) => {
                let reference = required(&seg, 5, "UNG 0048 (group reference number)").map_err(syntax)?;
                let messages = GroupRef::open(Some(&seg), UNG);
                self.group = Some(Group { reference, messages, number: seg.number });
            }
            ("UNE", None) if self.group.is_some() => {
                close_group(self.group.as_mut().expect("group"), &seg, &mut self.group_references)?;
                let group = self.group.take().expect("group");
                self.envelope.groups.push(group.messages);
            }
            ("UNZ", None) if self.group.is_none() => {
                let units = if groups > 0 { groups } else { self.messages.len() };
                check_unz(&self.envelope.interchange, &seg, units, groups > 0)?;
                return Ok(true);
            }
            _ => {
                let context = self
                    .group
                    .as_ref()
                    .map_or(String::new(), |g| format!(" in the group opened at segment {}", g.number));
                return Err(syntax(malformed(
                    SYNTAX,
                    format!("segment {} ({}) is out of place{context}", seg.number, seg.tag()),
                )));
            }
        }
        Ok(false)
    }
}

/// Checks UNT against its UNH and builds the message, adding its
/// reference to `refs`, its group's (also when it disagrees, for the refusal).
fn message(
    (interchange, text): (&Arc<Interchange>, &Arc<Text>),
    group_reference: Option<String>,
    refs: &mut GroupRef,
    unh: Segment,
    unt: &Segment,
) -> Result<RawMessage, Located> {
    let body = unh.index() + 1..unt.index();
    let reference = required(&unh, 1, "UNH 0062 (message reference number)").map_err(syntax)?;
    let message_type = unh.el(2).to_string();
    if message_type.is_empty() {
        return Err(syntax(malformed(
            SYNTAX,
            format!("segment {} (UNH): S009 0065 (message type) is empty", unh.number),
        )));
    }
    refs.messages.push(MessageRef::of(&unh, &message_type, &reference));
    // Concatenated: `format!` cost as much as reading the rest of the UNH.
    let version = [trim(unh.text(2, 1)), trim(unh.text(2, 2))].concat();
    let counted = body.len() + 2;
    let declared = count(SYNTAX, unt, 1, "UNT 0074 (number of segments)").map_err(syntax)?;
    if declared != counted {
        let e = disagree(
            SYNTAX,
            format!(
                "UNT 0074 of message {reference} says {declared} segments, the message has {counted} (UNH to UNT)"
            ),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Count, site: trailer(unt, counted, 1) }));
    }
    if unt.el(2) != reference {
        let e = disagree(
            SYNTAX,
            format!(
                "UNT 0062 `{}` does not match UNH 0062 `{reference}` (segment {})",
                unt.el(2),
                unt.number
            ),
        );
        return Err((e, Fault::Message { mismatch: Mismatch::Reference, site: trailer(unt, counted, 2) }));
    }
    let header = EdiHeader {
        interchange: Arc::clone(interchange),
        message_type,
        version,
        group_control: group_reference,
        control_number: reference,
    };
    Ok(RawMessage { header, text: Arc::clone(text), body })
}

/// Checks UNE against its UNG and the interchange's earlier groups (their
/// references, `earlier`, to which it adds this one), keeping UNE 0060 in
/// the group's reference.
fn close_group(group: &mut Group, une: &Segment, earlier: &mut HashSet<String>) -> Result<(), Located> {
    let declared = count(SYNTAX, une, 1, "UNE 0060 (number of messages)").map_err(syntax)?;
    group.messages.declared = Some(declared);
    let messages = group.messages.messages.len();
    if declared != messages {
        let e = disagree(
            SYNTAX,
            format!(
                "UNE 0060 of group {} says {declared} messages, the group has {}",
                group.reference, messages
            ),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Count }));
    }
    if une.el(2) != group.reference {
        let e = disagree(
            SYNTAX,
            format!("UNE 0048 `{}` does not match UNG 0048 `{}`", une.el(2), group.reference),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Reference }));
    }
    if !earlier.insert(group.reference.clone()) {
        let e = disagree(
            SYNTAX,
            format!(
                "UNG 0048 `{}` (segment {}) repeats the reference of an earlier group: EDIFACT makes it \
                 unique within its interchange",
                group.reference, group.number
            ),
        );
        return Err((e, Fault::Group { mismatch: Mismatch::Repeated }));
    }
    Ok(())
}

fn check_unz(interchange: &Interchange, unz: &Segment, units: usize, groups: bool) -> Result<(), Located> {
    let what = if groups { "groups" } else { "messages" };
    let declared = count(SYNTAX, unz, 1, "UNZ 0036 (interchange control count)").map_err(syntax)?;
    if declared != units {
        let e = disagree(SYNTAX, format!("UNZ 0036 says {declared} {what}, the interchange has {units}"));
        return Err((e, Fault::Interchange(Mismatch::Count)));
    }
    if unz.el(2) != interchange.control_number {
        let e = disagree(
            SYNTAX,
            format!("UNZ 0020 `{}` does not match UNB 0020 `{}`", unz.el(2), interchange.control_number),
        );
        return Err((e, Fault::Interchange(Mismatch::Reference)));
    }
    Ok(())
}

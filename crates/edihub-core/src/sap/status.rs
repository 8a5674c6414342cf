//! Status IDocs: telling a sending SAP system what became of its IDocs.
//!
//! An IDoc posted over an XML-HTTP port stays at status 03 ("data passed
//! to port OK") in the sender until a status IDoc moves it on. Two IDoc
//! types carry statuses back (their layouts are below, with their sources):
//!
//! - **ALEAUD01**, the ALE audit confirmation SAP's report RBDSTATE sends:
//!   `E1ADHDR` per logical message (MESTYP, MESCOD, MESFCT), under it one
//!   `E1STATE` per confirmed IDoc (the sender's DOCNUM, the status in the
//!   receiving system, the status text and its four parameters), under that
//!   an optional `E1PRTOB` naming what the receiver made of it. SAP puts at
//!   most 500 confirmations in one IDoc. E1STATE reports the *receiver's*
//!   inbound status (53 posted, 51 not posted, 64 ready to be passed on);
//!   the sender records 41, 40 or 39 on its IDoc from it.
//! - **SYSTAT01**, the status message of EDI subsystems: one `E1STATS` per
//!   IDoc with the status to record on the sender's IDoc (39, 40, 41)
//!   directly, its date and time, text, parameters and ARCKEY.
//!
//! [`SapStatus`] is what the hub knows of a message (stored and passed on
//! is 39, delivered and confirmed by the destination 41, refused or
//! finally failed 40), and each type writes it in its own terms. Texts are
//! cut to SAP's field lengths (STATXT 70, STAPA1–4 20, ALEAUD01's
//! STAPA1_LNG–4_LNG 50 characters), a cut text ending in `…`, and line
//! breaks and other control characters become spaces.
//!
//! Sources: SAP Help, "Segments of Audit IDoc ALEAUD01"
//! (<https://help.sap.com/SAPhelp_nw73/helpdata/en/4a/b7ba066dbe6d8be10000000a42189c/content.htm>:
//! the three segments, 500 confirmations, E1STATE's sender DOCNUM and
//! receiver status, MESTYP of 6 and MESTYP_LNG of 30 characters, STAPA1–4
//! grown to 50 in STAPA1_LNG–4_LNG, STACOD split into STATYP, STAMQU,
//! STAMID, STAMNO); SAP Help, "E2STATS - EDI Status Record"
//! (<https://help.sap.com/saphelp_46c/helpdata/en/1a/0e38aa539911d1898b0000e8322d00/content.htm>:
//! SYSTAT01's segment with its fields and lengths, STACOD 8, STATXT 70,
//! STAPA1–4 20); the status record EDIDS as WE60 documents it
//! (<https://saptechblogspot.blogspot.com/2017/09/status-record-edids-structure.html>:
//! STATYP 1, STAMQU 3, STAMID 20, STAMNO 3); the IDoc status list
//! (<http://sapxitutorials.blogspot.com/2009/06/idoc-statuses.html>: 39,
//! 40, 41, 51, 53, 64). E1STATE's field order is the order public ABAP
//! programs fill it in. E1PRTOB's fields (DOCNUM, LOGSYS, OBJTYPE, OBJKEY)
//! are read from such programs too, with the lengths of the data elements
//! they hold (IDoc number 16, logical system 10, object type 10, object
//! key 70); no SAP document of that segment was found. How a sending system
//! maps a confirmation's receiver status to 39, 40 or 41 is read from the
//! statuses' meanings; it was not checked against a SAP system.

use super::tree::{SapSegment, unwritable};
use super::{SapIdoc, SapProfile, SapTimestamp};
use crate::CoreError;
use crate::idoc::description::{FieldLayout, IdocDescription, SegmentLayout};

/// Most confirmations one status IDoc carries (SAP's limit for ALEAUD01;
/// SYSTAT01 documents none and is given the same).
pub const MAX_CONFIRMATIONS: usize = 500;

/// Which status IDoc to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusIdocType {
    /// ALEAUD01 (logical message ALEAUD), the ALE audit confirmation.
    Aleaud01,
    /// SYSTAT01 (logical message STATUS), an EDI subsystem's status report.
    Systat01,
}

/// What became of a message, in the terms a sending SAP system records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SapStatus {
    /// Stored by the hub and to be passed on: the sender's IDoc goes to 39
    /// ("IDoc is in the target system").
    InTarget,
    /// The destination confirmed it: 41 ("application document created in
    /// target system").
    Created,
    /// Refused, or its delivery finally failed: 40 ("application document
    /// not created in target system").
    NotCreated,
}

impl SapStatus {
    /// The status recorded on the sender's IDoc (SYSTAT01's STATUS).
    pub fn sender_status(self) -> &'static str {
        match self {
            SapStatus::InTarget => "39",
            SapStatus::Created => "41",
            SapStatus::NotCreated => "40",
        }
    }

    /// The receiving system's inbound status an audit confirmation reports
    /// (ALEAUD01's E1STATE-STATUS).
    pub fn receiver_status(self) -> &'static str {
        match self {
            SapStatus::InTarget => "64",
            SapStatus::Created => "53",
            SapStatus::NotCreated => "51",
        }
    }

    /// The message category (STATYP): `S` success, `E` error.
    fn category(self) -> &'static str {
        match self {
            SapStatus::InTarget | SapStatus::Created => "S",
            SapStatus::NotCreated => "E",
        }
    }
}

/// A status text and up to four parameters (SAP shows them in place of
/// `&1`–`&4` in the text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusText {
    /// The text (STATXT).
    pub text: String,
    /// The parameters (STAPA1–STAPA4), at most four.
    pub params: Vec<String>,
}

/// One change of state of one IDoc from the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusChange {
    /// The sender's IDoc number (digits; padded to SAP's 16).
    pub docnum: String,
    /// The IDoc's logical message (MESTYP).
    pub mestyp: String,
    /// Its message code (MESCOD), if any.
    pub mescod: Option<String>,
    /// Its message function (MESFCT), if any.
    pub mesfct: Option<String>,
    /// What became of it.
    pub status: SapStatus,
    /// Why, for people reading the status in SAP (WE05, BD87).
    pub text: StatusText,
    /// When the state changed (SYSTAT01's LOGDAT and LOGTIM).
    pub at: SapTimestamp,
    /// The sender's ARCKEY, echoed by SYSTAT01.
    pub arckey: Option<String>,
    /// What the hub made of the IDoc (its message id), written to ALEAUD01's
    /// E1PRTOB as OBJKEY when given.
    pub object_key: Option<String>,
}

impl StatusIdocType {
    /// Both types, ALEAUD01 first (the default).
    pub const ALL: [StatusIdocType; 2] = [StatusIdocType::Aleaud01, StatusIdocType::Systat01];

    /// The type named by its IDoc type (IDOCTYP), exactly as SAP spells it.
    pub fn from_idoc_type(idoc_type: &str) -> Option<StatusIdocType> {
        Self::ALL.into_iter().find(|t| t.idoc_type() == idoc_type)
    }

    /// Whether `mestyp` is a status IDoc's logical message (ALEAUD or
    /// STATUS): such an IDoc reports a status and is owed none.
    pub fn is_status_mestyp(mestyp: &str) -> bool {
        Self::ALL.into_iter().any(|t| t.mestyp() == mestyp)
    }

    /// The IDoc type (IDOCTYP).
    pub fn idoc_type(self) -> &'static str {
        match self {
            StatusIdocType::Aleaud01 => "ALEAUD01",
            StatusIdocType::Systat01 => "SYSTAT01",
        }
    }

    /// The logical message (MESTYP).
    pub fn mestyp(self) -> &'static str {
        match self {
            StatusIdocType::Aleaud01 => "ALEAUD",
            StatusIdocType::Systat01 => "STATUS",
        }
    }

    /// The segment layout the hub writes, as a description (for checks and ordering).
    pub fn description(self) -> IdocDescription {
        let segments = match self {
            StatusIdocType::Aleaud01 => {
                vec![layout("E1ADHDR", &E1ADHDR), layout("E1STATE", &E1STATE), layout("E1PRTOB", &E1PRTOB)]
            }
            StatusIdocType::Systat01 => vec![layout("E1STATS", &E1STATS)],
        };
        IdocDescription::new(self.idoc_type().to_string(), None, segments)
            .unwrap_or_else(|e| unreachable!("the built-in {} layout is valid: {e}", self.idoc_type()))
    }
}

/// E1ADHDR: the logical message the confirmations below it are about.
const E1ADHDR: [(&str, usize); 4] = [("MESTYP", 6), ("MESCOD", 3), ("MESFCT", 3), ("MESTYP_LNG", 30)];

/// E1STATE: one confirmed IDoc (release 4.0 layout with the long parameters).
const E1STATE: [(&str, usize); 16] = [
    ("DOCNUM", 16),
    ("STATUS", 2),
    ("STACOD", 8),
    ("STATXT", 70),
    ("STAPA1", 20),
    ("STAPA2", 20),
    ("STAPA3", 20),
    ("STAPA4", 20),
    ("STATYP", 1),
    ("STAMQU", 3),
    ("STAMID", 20),
    ("STAMNO", 3),
    ("STAPA1_LNG", 50),
    ("STAPA2_LNG", 50),
    ("STAPA3_LNG", 50),
    ("STAPA4_LNG", 50),
];

/// E1PRTOB: the receiver's IDoc and the application object it made.
const E1PRTOB: [(&str, usize); 4] = [("DOCNUM", 16), ("LOGSYS", 10), ("OBJTYPE", 10), ("OBJKEY", 70)];

/// E1STATS (SYSTAT01): one status record.
const E1STATS: [(&str, usize); 22] = [
    ("TABNAM", 10),
    ("MANDT", 3),
    ("DOCNUM", 16),
    ("LOGDAT", 8),
    ("LOGTIM", 6),
    ("STATUS", 2),
    ("UNAME", 12),
    ("REPID", 8),
    ("ROUTID", 30),
    ("STACOD", 8),
    ("STATXT", 70),
    ("SEGNUM", 6),
    ("SEGFLD", 10),
    ("STAPA1", 20),
    ("STAPA2", 20),
    ("STAPA3", 20),
    ("STAPA4", 20),
    ("REFINT", 14),
    ("REFGRP", 14),
    ("REFMES", 14),
    ("ARCKEY", 70),
    ("STATYP", 1),
];

fn layout(name: &str, fields: &[(&str, usize)]) -> SegmentLayout {
    let mut offset = 0;
    let fields = fields
        .iter()
        .map(|(field, length)| {
            let f = FieldLayout { name: field.to_string(), offset, length: *length };
            offset += length;
            f
        })
        .collect();
    SegmentLayout { segment_type: name.to_string(), definition: None, fields }
}

/// The status IDocs for `changes`, at most [`MAX_CONFIRMATIONS`] each, in
/// order; numbered from `first_docnum` (one number per IDoc, the caller
/// keeps them unique) and created at `created`.
pub fn status_idocs(
    kind: StatusIdocType,
    profile: &SapProfile,
    created: &SapTimestamp,
    first_docnum: u64,
    changes: &[StatusChange],
) -> Result<Vec<SapIdoc>, CoreError> {
    profile.check()?;
    changes
        .chunks(MAX_CONFIRMATIONS)
        .zip(first_docnum..)
        .map(|(chunk, docnum)| {
            let mut fields: Vec<(&'static str, String)> = vec![
                ("DOCNUM", format!("{docnum:016}")),
                ("IDOCTYP", kind.idoc_type().to_string()),
                ("MESTYP", kind.mestyp().to_string()),
                ("CREDAT", created.date().to_string()),
                ("CRETIM", created.time().to_string()),
            ];
            fields.extend(profile.addressing().map(|(n, v)| (n, v.to_string())));
            let segments = match kind {
                StatusIdocType::Aleaud01 => aleaud(profile, chunk)?,
                StatusIdocType::Systat01 => {
                    chunk.iter().map(|c| stats(profile, c)).collect::<Result<_, _>>()?
                }
            };
            Ok(SapIdoc {
                root: kind.idoc_type().to_string(),
                control: SapIdoc::control_record(&fields)?,
                segments,
            })
        })
        .collect()
}

/// A logical message: MESTYP, MESCOD, MESFCT.
type Message<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// ALEAUD01: one E1ADHDR per logical message, in order of first appearance.
fn aleaud(profile: &SapProfile, changes: &[StatusChange]) -> Result<Vec<SapSegment>, CoreError> {
    let mut headers: Vec<(Message<'_>, SapSegment)> = Vec::new();
    for change in changes {
        let key = (change.mestyp.as_str(), change.mescod.as_deref(), change.mesfct.as_deref());
        let state = state(profile, change)?;
        match headers.iter_mut().find(|(k, _)| *k == key) {
            Some((_, header)) => header.children.push(state),
            None => {
                // MESTYP holds six characters: longer names go in MESTYP_LNG alone.
                let short = if change.mestyp.chars().count() <= 6 { change.mestyp.as_str() } else { "" };
                let header = segment(
                    "E1ADHDR",
                    &E1ADHDR,
                    &[
                        ("MESTYP", short),
                        ("MESCOD", change.mescod.as_deref().unwrap_or("")),
                        ("MESFCT", change.mesfct.as_deref().unwrap_or("")),
                        ("MESTYP_LNG", &change.mestyp),
                    ],
                    vec![state],
                )?;
                headers.push((key, header));
            }
        }
    }
    Ok(headers.into_iter().map(|(_, h)| h).collect())
}

/// E1STATE (with E1PRTOB when the change names an object).
fn state(profile: &SapProfile, change: &StatusChange) -> Result<SapSegment, CoreError> {
    let docnum = sap_docnum(&change.docnum)?;
    let text = cut(&change.text.text, 70);
    let params = params(&change.text)?;
    let short: Vec<String> = params.iter().map(|p| cut(p, 20)).collect();
    let long: Vec<String> = params.iter().map(|p| cut(p, 50)).collect();
    let at = |v: &[String], i: usize| v.get(i).cloned().unwrap_or_default();
    let values = [
        ("DOCNUM", docnum),
        ("STATUS", change.status.receiver_status().to_string()),
        ("STATXT", text),
        ("STAPA1", at(&short, 0)),
        ("STAPA2", at(&short, 1)),
        ("STAPA3", at(&short, 2)),
        ("STAPA4", at(&short, 3)),
        ("STATYP", change.status.category().to_string()),
        ("STAPA1_LNG", at(&long, 0)),
        ("STAPA2_LNG", at(&long, 1)),
        ("STAPA3_LNG", at(&long, 2)),
        ("STAPA4_LNG", at(&long, 3)),
    ];
    let values: Vec<(&str, &str)> = values.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let children = match &change.object_key {
        Some(key) => vec![segment(
            "E1PRTOB",
            &E1PRTOB,
            &[("LOGSYS", &profile.hub_partner), ("OBJKEY", &cut(key, 70))],
            Vec::new(),
        )?],
        None => Vec::new(),
    };
    segment("E1STATE", &E1STATE, &values, children)
}

/// E1STATS: one SYSTAT01 status record.
fn stats(profile: &SapProfile, change: &StatusChange) -> Result<SapSegment, CoreError> {
    let docnum = sap_docnum(&change.docnum)?;
    let text = cut(&change.text.text, 70);
    let params: Vec<String> = params(&change.text)?.iter().map(|p| cut(p, 20)).collect();
    let param = |i: usize| params.get(i).map_or("", String::as_str);
    let arckey = change.arckey.as_deref().map(|a| cut(a, 70)).unwrap_or_default();
    segment(
        "E1STATS",
        &E1STATS,
        &[
            ("MANDT", &profile.client),
            ("DOCNUM", &docnum),
            ("LOGDAT", change.at.date()),
            ("LOGTIM", change.at.time()),
            ("STATUS", change.status.sender_status()),
            ("STATXT", &text),
            ("STAPA1", param(0)),
            ("STAPA2", param(1)),
            ("STAPA3", param(2)),
            ("STAPA4", param(3)),
            ("ARCKEY", &arckey),
            ("STATYP", change.status.category()),
        ],
        Vec::new(),
    )
}

/// A segment with its non-blank values in layout order; each must fit.
fn segment(
    name: &str,
    layout: &[(&str, usize)],
    values: &[(&str, &str)],
    children: Vec<SapSegment>,
) -> Result<SapSegment, CoreError> {
    let mut fields = Vec::new();
    for (field, length) in layout {
        let Some((_, value)) = values.iter().find(|(n, _)| n == field) else {
            continue;
        };
        if value.chars().count() > *length {
            return Err(unwritable(format!(
                "{name}.{field} `{value}` is longer than SAP's {length} characters"
            )));
        }
        if !value.is_empty() {
            fields.push((field.to_string(), value.to_string()));
        }
    }
    Ok(SapSegment { name: name.to_string(), fields, children })
}

/// The sender's DOCNUM as SAP keeps it: 16 digits, zero-padded.
fn sap_docnum(docnum: &str) -> Result<String, CoreError> {
    let d = docnum.trim();
    if d.is_empty() || d.len() > 16 || !d.bytes().all(|b| b.is_ascii_digit()) {
        return Err(unwritable(format!("DOCNUM `{docnum}` is not a SAP IDoc number (1 to 16 digits)")));
    }
    Ok(format!("{d:0>16}"))
}

/// At most four parameters.
fn params(text: &StatusText) -> Result<&[String], CoreError> {
    if text.params.len() > 4 {
        return Err(unwritable(format!("a status has at most 4 parameters, not {}", text.params.len())));
    }
    Ok(&text.params)
}

/// `text` with control characters as spaces, runs of white space as one,
/// cut to `max` characters: a cut text ends in `…`.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let clean: String = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if clean.chars().count() <= max {
        return clean;
    }
    let mut out: String = clean.chars().take(max - 1).collect();
    out.push('…');
    out
}

//! What an acknowledgement is asked for and what it says: the kind
//! (997, 999, CONTRL), the time it is made, and the verdict on the
//! interchange. A leaf the two writers share.

use crate::edi::model::EdiSyntax;
use crate::edi::refusal::Fault;

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
    pub(super) fn long_date(&self) -> String {
        format!("{:04}{:02}{:02}", self.year, self.month, self.day)
    }

    /// `YYMMDD`.
    pub(super) fn short_date(&self) -> String {
        format!("{:02}{:02}{:02}", self.year % 100, self.month, self.day)
    }

    /// `HHMM`.
    pub(super) fn hhmm(&self) -> String {
        format!("{:02}{:02}", self.hour, self.minute)
    }
}

/// What an acknowledgement says about the interchange.
#[derive(Debug, Clone, Copy)]
pub(super) enum Verdict<'a> {
    /// Stored: every message accepted.
    Accepted,
    /// A repeated interchange, rejected as a duplicate.
    Duplicate,
    /// Refused (nothing stored) for `Fault`.
    Refused(&'a Fault),
}

//! The syntax and shape a body was read as: a leaf named by the readers,
//! the refusals and the answers alike.

use serde::Serialize;

/// The syntax and shape a body was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyFormat {
    /// IDoc-XML (possibly in a SOAP envelope).
    IdocXml,
    /// An IDoc in the JSON converter shape.
    IdocJson,
    /// Any other JSON object.
    PlainJson,
    /// A UN/EDIFACT interchange (one document per message).
    Edifact,
    /// An ANSI X12 interchange (one document per transaction set).
    X12,
    /// SAP's fixed-width flat file (one document per control record).
    IdocFlat,
}

impl std::fmt::Display for BodyFormat {
    /// The name people use: `IDoc-XML`, `IDoc-JSON`, `plain JSON`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BodyFormat::IdocXml => "IDoc-XML",
            BodyFormat::IdocJson => "IDoc-JSON",
            BodyFormat::PlainJson => "plain JSON",
            BodyFormat::Edifact => "EDIFACT",
            BodyFormat::X12 => "X12",
            BodyFormat::IdocFlat => "IDoc flat file",
        })
    }
}

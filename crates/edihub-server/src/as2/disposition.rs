//! What an MDN's `Disposition` says (RFC 3798 §3.2.6 as profiled by RFC 4130
//! §7.4.3 and RFC 5402 §4): processed, or processed with an error or a
//! failure and its modifier. A leaf that the MDN writer, the receipt reader
//! and the failures (`error`) share.

use super::error::As2Error;

/// A processing error an MDN reports (RFC 4130 §7.4.3, RFC 5402 §4):
/// `processed/Error: <modifier>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorModifier {
    /// The signature is not the partner's.
    AuthenticationFailed,
    /// The compressed content could not be decompressed.
    DecompressionFailed,
    /// The encrypted content could not be decrypted.
    DecryptionFailed,
    /// The message lacks a signature or encryption the partner must use.
    InsufficientMessageSecurity,
    /// The content does not match its signature.
    IntegrityCheckFailed,
    /// Anything else.
    UnexpectedProcessingError,
}

impl ErrorModifier {
    /// The modifier's text.
    pub fn text(self) -> &'static str {
        match self {
            ErrorModifier::AuthenticationFailed => "authentication-failed",
            ErrorModifier::DecompressionFailed => "decompression-failed",
            ErrorModifier::DecryptionFailed => "decryption-failed",
            ErrorModifier::InsufficientMessageSecurity => "insufficient-message-security",
            ErrorModifier::IntegrityCheckFailed => "integrity-check-failed",
            ErrorModifier::UnexpectedProcessingError => "unexpected-processing-error",
        }
    }
}

/// A failure of the MDN request itself (RFC 4130 §7.5.3): `failed/Failure: <text>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureModifier {
    /// A required signed-receipt protocol edihub lacks.
    UnsupportedFormat,
    /// A required MIC algorithm edihub lacks.
    UnsupportedMicAlgorithms,
}

impl FailureModifier {
    /// The modifier's text.
    pub fn text(self) -> &'static str {
        match self {
            FailureModifier::UnsupportedFormat => "unsupported format",
            FailureModifier::UnsupportedMicAlgorithms => "unsupported MIC-algorithms",
        }
    }
}

/// The kind of a disposition modifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModifierKind {
    /// `Error`: processed, with an error; nothing was accepted.
    Error,
    /// `Warning`: processed, accepted with a remark.
    Warning,
    /// `Failure`: the MDN request could not be honoured.
    Failure,
}

/// What an MDN says happened to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disposition {
    /// `processed` (true) or `failed` (false; any other type reads as not processed).
    pub processed: bool,
    /// The modifier, with its text (`authentication-failed`, …).
    pub modifier: Option<(ModifierKind, String)>,
}

impl Disposition {
    /// `processed`: the message was received and accepted.
    pub fn processed() -> Self {
        Self { processed: true, modifier: None }
    }

    /// `processed/Error: <modifier>`.
    pub fn error(modifier: ErrorModifier) -> Self {
        Self { processed: true, modifier: Some((ModifierKind::Error, modifier.text().to_string())) }
    }

    /// `failed/Failure: <modifier>`.
    pub fn failed(modifier: FailureModifier) -> Self {
        Self { processed: false, modifier: Some((ModifierKind::Failure, modifier.text().to_string())) }
    }

    /// Whether the message was accepted: processed, with no modifier or a warning.
    pub fn is_positive(&self) -> bool {
        self.processed && matches!(self.modifier, None | Some((ModifierKind::Warning, _)))
    }

    /// Reads a `Disposition` field value
    /// (`automatic-action/MDN-sent-automatically; processed/Error: decryption-failed`).
    pub fn parse(value: &str) -> Result<Self, As2Error> {
        let (_mode, disposition) = value
            .split_once(';')
            .ok_or_else(|| As2Error::malformed(format!("Disposition `{value}` has no `;`")))?;
        let disposition = disposition.trim();
        let (kind, modifier) = match disposition.split_once('/') {
            Some((kind, modifier)) => (kind.trim(), Some(modifier.trim())),
            None => (disposition, None),
        };
        let processed = kind.eq_ignore_ascii_case("processed");
        let modifier = modifier.map(|m| {
            let (level, text) = m.split_once(':').unwrap_or((m, ""));
            let level = match level.trim().to_ascii_lowercase().as_str() {
                "warning" => ModifierKind::Warning,
                "failure" => ModifierKind::Failure,
                _ => ModifierKind::Error,
            };
            (level, text.trim().to_string())
        });
        Ok(Self { processed, modifier })
    }
}

impl std::fmt::Display for Disposition {
    /// `processed`, `processed/Error: <text>`, `failed/Failure: <text>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.processed { "processed" } else { "failed" })?;
        if let Some((kind, text)) = &self.modifier {
            let kind = match kind {
                ModifierKind::Error => "Error",
                ModifierKind::Warning => "Warning",
                ModifierKind::Failure => "Failure",
            };
            write!(f, "/{kind}")?;
            if !text.is_empty() {
                write!(f, ": {text}")?;
            }
        }
        Ok(())
    }
}

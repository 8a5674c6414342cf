//! What can go wrong with an AS2 message, typed by what the sender is told.
//!
//! An AS2 failure is not an HTTP error: the receiver answers it with an MDN
//! whose disposition names the failure (RFC 4130 §7.4.3 and §7.5.3), so
//! every variant maps to one [`Disposition`]. The text of a variant is for
//! the log and the admin; the MDN carries only the disposition.

use super::disposition::{Disposition, ErrorModifier, FailureModifier};

/// Where an algorithm was found that edihub does not accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgorithmUse {
    /// The content encryption of an EnvelopedData.
    Encryption,
    /// The digest of a signature.
    Signature,
    /// The compression of a CompressedData.
    Compression,
    /// The key of a certificate or private key (edihub signs and decrypts with RSA).
    Key,
}

impl std::fmt::Display for AlgorithmUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AlgorithmUse::Encryption => "content encryption",
            AlgorithmUse::Signature => "signature digest",
            AlgorithmUse::Compression => "compression",
            AlgorithmUse::Key => "key",
        })
    }
}

/// A failure while reading or writing an AS2 message or MDN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum As2Error {
    /// The MIME structure or an AS2 header is not what the standards say.
    #[error("malformed AS2 message: {0}")]
    Malformed(String),
    /// The EnvelopedData could not be decrypted with our key.
    #[error("decryption failed: {0}")]
    Decryption(String),
    /// The CompressedData could not be decompressed, or inflates past its bound.
    #[error("decompression failed: {0}")]
    Decompression(String),
    /// The signature is not the partner's: signed by another key, a broken
    /// signature, or the partner's certificate is not valid now.
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// The signature is the partner's but the content does not match its digest.
    #[error("integrity check failed: {0}")]
    Integrity(String),
    /// The message lacks a protection the partner's profile requires.
    #[error("insufficient message security: {0}")]
    InsufficientSecurity(String),
    /// An algorithm edihub does not accept.
    #[error("unsupported {used} algorithm: {name}")]
    UnsupportedAlgorithm {
        /// What the algorithm was used for.
        used: AlgorithmUse,
        /// Its name or OID.
        name: String,
    },
    /// The sender requires a signed MDN over a protocol other than PKCS #7.
    #[error("unsupported format: {0}")]
    UnsupportedFormat(String),
    /// The sender requires a MIC algorithm edihub does not support.
    #[error("unsupported MIC algorithms: {0}")]
    UnsupportedMicAlgorithms(String),
    /// Building a message failed inside the cryptographic library.
    #[error("unexpected processing error: {0}")]
    Processing(String),
}

impl As2Error {
    /// The disposition an MDN answers this failure with.
    pub fn disposition(&self) -> Disposition {
        use ErrorModifier as E;
        let modifier = match self {
            As2Error::Malformed(_) | As2Error::Processing(_) => E::UnexpectedProcessingError,
            As2Error::Decryption(_) => E::DecryptionFailed,
            As2Error::Decompression(_) => E::DecompressionFailed,
            As2Error::Authentication(_) => E::AuthenticationFailed,
            As2Error::Integrity(_) => E::IntegrityCheckFailed,
            As2Error::InsufficientSecurity(_) => E::InsufficientMessageSecurity,
            As2Error::UnsupportedAlgorithm { used, .. } => match used {
                AlgorithmUse::Encryption | AlgorithmUse::Key => E::DecryptionFailed,
                AlgorithmUse::Signature => E::AuthenticationFailed,
                AlgorithmUse::Compression => E::DecompressionFailed,
            },
            As2Error::UnsupportedFormat(_) => return Disposition::failed(FailureModifier::UnsupportedFormat),
            As2Error::UnsupportedMicAlgorithms(_) => {
                return Disposition::failed(FailureModifier::UnsupportedMicAlgorithms);
            }
        };
        Disposition::error(modifier)
    }

    pub(crate) fn malformed(reason: impl Into<String>) -> Self {
        As2Error::Malformed(reason.into())
    }
}

//! The Message Integrity Check (RFC 4130 §7.3.1): the digest a receiver
//! returns in its MDN (`Received-Content-MIC: <base64>, <algorithm>`) so the
//! sender knows the content arrived unchanged.
//!
//! What the MIC covers (computed in `inbound` and `outbound`):
//! - a signed message: the signed MIME entity, headers included, byte for
//!   byte as it was signed (on receipt, by the signature's digest
//!   algorithm, it is the digest the verified signature carries: `signed`);
//! - an unsigned message: the content as received: for an encrypted or
//!   compressed one the innermost MIME entity with its headers, for a plain
//!   one the HTTP body.
//!
//! The algorithm is the one the sender asked for in
//! `signed-receipt-micalg` when edihub supports it, else the signature's
//! digest, else the partner profile's. The same algorithms serve signature
//! digests: SHA-1 stays for old partners only.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::hash::MessageDigest;

use super::error::{AlgorithmUse, As2Error};

/// A digest algorithm for MICs and signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MicAlgorithm {
    /// SHA-1, for partners that support nothing newer.
    Sha1,
    /// SHA-256, the default.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl MicAlgorithm {
    /// Every supported algorithm, strongest first.
    pub const ALL: [MicAlgorithm; 4] =
        [MicAlgorithm::Sha512, MicAlgorithm::Sha384, MicAlgorithm::Sha256, MicAlgorithm::Sha1];

    /// The algorithm named `name`: RFC 5751's `sha-256` or the common
    /// `sha256`, `SHA256`, `sha1` spellings.
    pub fn from_name(name: &str) -> Option<Self> {
        let compact: String =
            name.trim().chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_ascii_lowercase();
        match compact.as_str() {
            "sha1" => Some(MicAlgorithm::Sha1),
            "sha256" => Some(MicAlgorithm::Sha256),
            "sha384" => Some(MicAlgorithm::Sha384),
            "sha512" => Some(MicAlgorithm::Sha512),
            _ => None,
        }
    }

    /// The name written in headers and MDNs (RFC 5751 `micalg` values).
    pub fn name(self) -> &'static str {
        match self {
            MicAlgorithm::Sha1 => "sha-1",
            MicAlgorithm::Sha256 => "sha-256",
            MicAlgorithm::Sha384 => "sha-384",
            MicAlgorithm::Sha512 => "sha-512",
        }
    }

    /// The OpenSSL digest.
    pub fn digest(self) -> MessageDigest {
        match self {
            MicAlgorithm::Sha1 => MessageDigest::sha1(),
            MicAlgorithm::Sha256 => MessageDigest::sha256(),
            MicAlgorithm::Sha384 => MessageDigest::sha384(),
            MicAlgorithm::Sha512 => MessageDigest::sha512(),
        }
    }

    /// The digest's object identifier (RFC 3370, RFC 5754).
    pub fn oid(self) -> &'static str {
        match self {
            MicAlgorithm::Sha1 => "1.3.14.3.2.26",
            MicAlgorithm::Sha256 => "2.16.840.1.101.3.4.2.1",
            MicAlgorithm::Sha384 => "2.16.840.1.101.3.4.2.2",
            MicAlgorithm::Sha512 => "2.16.840.1.101.3.4.2.3",
        }
    }

    /// The algorithm with object identifier `oid`, or the error naming it.
    pub fn from_oid(oid: &str) -> Result<Self, As2Error> {
        Self::ALL.into_iter().find(|a| a.oid() == oid).ok_or_else(|| As2Error::UnsupportedAlgorithm {
            used: AlgorithmUse::Signature,
            name: known_digest_name(oid).map_or_else(|| oid.to_string(), |n| format!("{n} ({oid})")),
        })
    }
}

impl std::fmt::Display for MicAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Names of digests edihub refuses, for a readable error.
fn known_digest_name(oid: &str) -> Option<&'static str> {
    match oid {
        "1.2.840.113549.2.5" => Some("MD5"),
        "2.16.840.1.101.3.4.2.4" => Some("SHA-224"),
        _ => None,
    }
}

/// A MIC: the algorithm and the digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mic {
    /// The digest algorithm.
    pub algorithm: MicAlgorithm,
    /// The digest.
    pub digest: Vec<u8>,
}

impl Mic {
    /// The MIC of `bytes` with `algorithm`.
    pub fn compute(algorithm: MicAlgorithm, bytes: &[u8]) -> Result<Self, As2Error> {
        let digest = openssl::hash::hash(algorithm.digest(), bytes)
            .map_err(|e| As2Error::Processing(format!("digest: {e}")))?;
        Ok(Self { algorithm, digest: digest.to_vec() })
    }

    /// A `Received-Content-MIC` value: `<base64>, <algorithm>`.
    pub fn parse(value: &str) -> Result<Self, As2Error> {
        let (digest, algorithm) = value.split_once(',').ok_or_else(|| {
            As2Error::malformed(format!("Received-Content-MIC `{value}` is not `digest, algorithm`"))
        })?;
        let algorithm = MicAlgorithm::from_name(algorithm).ok_or_else(|| As2Error::UnsupportedAlgorithm {
            used: AlgorithmUse::Signature,
            name: algorithm.trim().to_string(),
        })?;
        let digest = STANDARD
            .decode(digest.trim())
            .map_err(|e| As2Error::malformed(format!("Received-Content-MIC digest is not base64: {e}")))?;
        Ok(Self { algorithm, digest })
    }

    /// The digest in base64.
    pub fn base64(&self) -> String {
        STANDARD.encode(&self.digest)
    }
}

impl std::fmt::Display for Mic {
    /// The `Received-Content-MIC` value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {}", self.base64(), self.algorithm.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_every_common_spelling() {
        for (name, alg) in [
            ("sha-256", MicAlgorithm::Sha256),
            ("SHA256", MicAlgorithm::Sha256),
            ("sha1", MicAlgorithm::Sha1),
            ("sha-1", MicAlgorithm::Sha1),
            (" sha_384 ", MicAlgorithm::Sha384),
            ("sha-512", MicAlgorithm::Sha512),
        ] {
            assert_eq!(MicAlgorithm::from_name(name), Some(alg), "{name}");
        }
        assert_eq!(MicAlgorithm::from_name("md5"), None);
        assert_eq!(MicAlgorithm::from_name("sha-224"), None);
    }

    #[test]
    fn a_mic_round_trips_through_its_header_value() {
        let mic = Mic::compute(MicAlgorithm::Sha256, b"abc").unwrap();
        assert_eq!(mic.base64(), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
        assert_eq!(mic.to_string(), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=, sha-256");
        assert_eq!(Mic::parse("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=, sha256").unwrap(), mic);
        assert!(matches!(Mic::parse("abc"), Err(As2Error::Malformed(_))));
        assert!(matches!(Mic::parse("AAAA, md5"), Err(As2Error::UnsupportedAlgorithm { .. })));
    }

    #[test]
    fn unsupported_digest_oids_are_named() {
        assert_eq!(MicAlgorithm::from_oid("2.16.840.1.101.3.4.2.3").unwrap(), MicAlgorithm::Sha512);
        let err = MicAlgorithm::from_oid("1.2.840.113549.2.5").unwrap_err();
        assert_eq!(err.to_string(), "unsupported signature digest algorithm: MD5 (1.2.840.113549.2.5)");
    }
}

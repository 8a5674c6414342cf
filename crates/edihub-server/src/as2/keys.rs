//! Certificates and private keys, read from PEM (a file, or an environment
//! variable holding the PEM text).
//!
//! A private key never reaches a log line: [`PrivateKey`]'s `Debug` names
//! its algorithm and size only, and nothing here formats its bytes. A
//! certificate's `Debug` shows its subject and validity, which is what an
//! operator needs to tell two apart and to see one expire.

use std::path::Path;

use chrono::{DateTime, Utc};
use openssl::asn1::{Asn1Time, Asn1TimeRef};
use openssl::pkey::{Id, PKey, Private};
use openssl::x509::X509;

use super::error::As2Error;
use crate::config::SecretSource;

/// Largest PEM file or variable read (a certificate chain is a few KiB).
pub const MAX_PEM_BYTES: usize = 1024 * 1024;

/// Where a PEM text comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    /// A file path.
    File(String),
    /// An environment variable (read through the configuration's secret
    /// source) holding the PEM text.
    Env(String),
}

impl PemSource {
    /// The PEM text, or why it cannot be read.
    pub fn read(&self, secrets: &SecretSource) -> Result<Vec<u8>, String> {
        let bytes = match self {
            PemSource::File(path) => read_file(Path::new(path))?,
            PemSource::Env(var) => secrets
                .get(var)
                .ok_or_else(|| format!("environment variable `{var}` is not set"))?
                .into_bytes(),
        };
        if bytes.len() > MAX_PEM_BYTES {
            return Err(format!(
                "is larger than {MAX_PEM_BYTES} bytes; a PEM key or certificate is a few KiB"
            ));
        }
        Ok(bytes)
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if meta.len() > MAX_PEM_BYTES as u64 {
        return Err(format!("{} is larger than {MAX_PEM_BYTES} bytes", path.display()));
    }
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// An X.509 certificate with what edihub shows of it.
#[derive(Clone)]
pub struct Certificate {
    x509: X509,
    subject: String,
    not_before: DateTime<Utc>,
    not_after: DateTime<Utc>,
}

impl Certificate {
    /// The first certificate of a PEM text.
    pub fn from_pem(pem: &[u8]) -> Result<Self, String> {
        let x509 = X509::stack_from_pem(pem)
            .map_err(|e| format!("is not a PEM certificate ({e})"))?
            .into_iter()
            .next()
            .ok_or_else(|| "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_string())?;
        Self::from_x509(x509)
    }

    /// A certificate from OpenSSL's type.
    pub fn from_x509(x509: X509) -> Result<Self, String> {
        let subject = x509
            .subject_name()
            .entries()
            .map(|e| {
                let name = e.object().nid().short_name().unwrap_or("?");
                let value = e.data().to_string().unwrap_or_default();
                format!("{name}={value}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let not_before = to_utc(x509.not_before()).ok_or("has an unreadable notBefore")?;
        let not_after = to_utc(x509.not_after()).ok_or("has an unreadable notAfter")?;
        Ok(Self { x509, subject, not_before, not_after })
    }

    /// OpenSSL's certificate.
    pub fn x509(&self) -> &X509 {
        &self.x509
    }

    /// The subject, e.g. `CN=partner.example, O=Partner`.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// When it stops being valid (for expiry warnings).
    pub fn not_after(&self) -> DateTime<Utc> {
        self.not_after
    }

    /// When it starts being valid.
    pub fn not_before(&self) -> DateTime<Utc> {
        self.not_before
    }

    /// Refuses it unless it is valid at `now`: a signature by an expired
    /// certificate is not the partner's word (authentication-failed), and
    /// nothing is encrypted to one.
    pub fn check_valid_at(&self, now: DateTime<Utc>) -> Result<(), As2Error> {
        if now > self.not_after {
            return Err(As2Error::Authentication(format!(
                "the certificate {} expired on {}",
                self.subject,
                self.not_after.format("%Y-%m-%d %H:%M:%S UTC")
            )));
        }
        if now < self.not_before {
            return Err(As2Error::Authentication(format!(
                "the certificate {} is not valid before {}",
                self.subject,
                self.not_before.format("%Y-%m-%d %H:%M:%S UTC")
            )));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate")
            .field("subject", &self.subject)
            .field("not_before", &self.not_before)
            .field("not_after", &self.not_after)
            .finish()
    }
}

/// `time` as UTC.
fn to_utc(time: &Asn1TimeRef) -> Option<DateTime<Utc>> {
    let epoch = Asn1Time::from_unix(0).ok()?;
    let diff = epoch.diff(time).ok()?;
    DateTime::from_timestamp(i64::from(diff.days) * 86_400 + i64::from(diff.secs), 0)
}

/// An RSA private key. Its `Debug` shows no key material.
#[derive(Clone)]
pub struct PrivateKey(PKey<Private>);

impl PrivateKey {
    /// The private key of a PEM text (PKCS #8 or PKCS #1, unencrypted).
    pub fn from_pem(pem: &[u8]) -> Result<Self, String> {
        // An error stack could quote part of the input; say only what failed.
        let key = PKey::private_key_from_pem(pem)
            .map_err(|_| "is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)".to_string())?;
        Self::from_pkey(key)
    }

    /// A key from OpenSSL's type; only RSA keys are accepted.
    pub fn from_pkey(key: PKey<Private>) -> Result<Self, String> {
        if key.id() != Id::RSA {
            return Err(format!("is a {:?} key; AS2 signing and decryption here use RSA keys", key.id()));
        }
        Ok(Self(key))
    }

    /// OpenSSL's key.
    pub(crate) fn pkey(&self) -> &PKey<Private> {
        &self.0
    }

    /// Whether `certificate` holds this key's public half.
    pub fn matches(&self, certificate: &Certificate) -> bool {
        certificate.x509().public_key().is_ok_and(|public| public.public_eq(&self.0))
    }
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey(RSA, {} bits)", self.0.bits())
    }
}

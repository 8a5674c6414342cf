//! The `[as2]` section: our AS2 stations and the trading partners that
//! exchange AS2 messages with them. Validation reads every certificate and
//! key and checks them (`as2::partner::Registry::from_config`), so a bad
//! PEM, a key that does not match its certificate or an unknown algorithm
//! stops the start naming its key.

use serde::{Deserialize, Serialize};

/// AS2 stations and partners.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct As2Config {
    /// Our AS2 identities: what partners send to (`AS2-To`) and sign for.
    pub stations: Vec<As2StationConfig>,
    /// Trading partners, each tied to one of the stations.
    pub partners: Vec<As2PartnerConfig>,
}

/// One of our AS2 identities, receiving into one tenant environment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct As2StationConfig {
    /// Our AS2 id (1–128 printable ASCII characters; partners put it in
    /// `AS2-To`). Unique among the stations.
    pub as2_id: String,
    /// Tenant whose messages arrive through this station.
    pub tenant: String,
    /// Environment within the tenant.
    pub environment: String,
    /// Our RSA private key (decrypts what partners send, signs MDNs and
    /// messages): `{ file = "path" }` or `{ env = "VAR" }` holding the PEM.
    pub key: PemConfig,
    /// Our certificate, the public half of `key`, as given to partners.
    pub certificate: PemConfig,
    /// The URL partners post asynchronous MDNs to (`Receipt-Delivery-Option`
    /// of the messages we send); required when a partner of this station
    /// uses `mdn = "async"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_mdn_url: Option<String>,
}

/// Where a PEM text is: exactly one of a file or an environment variable.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PemConfig {
    /// Path of a PEM file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Environment variable holding the PEM text (never the file's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
}

/// A trading partner: its identity, certificate and the security both
/// directions use.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct As2PartnerConfig {
    /// The partner's AS2 id (its `AS2-From`). Unique per station.
    pub as2_id: String,
    /// The `as2_id` of the station this partner exchanges messages with.
    pub station: String,
    /// The partner's certificate: verifies its signatures (messages and
    /// MDNs) and encrypts what is sent to it.
    pub certificate: PemConfig,
    /// Messages must be signed: the partner's unsigned messages are refused
    /// (`insufficient-message-security`) and ours to it are signed.
    #[serde(default = "yes")]
    pub signed: bool,
    /// Messages must be encrypted, both ways, as `signed`.
    #[serde(default = "yes")]
    pub encrypted: bool,
    /// Messages must be compressed (RFC 5402), both ways, as `signed`.
    #[serde(default)]
    pub compressed: bool,
    /// The digest of our signatures to the partner and of the MIC asked
    /// for in its MDNs; the MIC of its messages when it asks for none:
    /// `sha-256`, `sha-384`, `sha-512` or `sha-1` (old partners).
    #[serde(default = "default_mic")]
    pub mic_algorithm: String,
    /// How messages to the partner are encrypted: `aes-128-cbc`,
    /// `aes-192-cbc`, `aes-256-cbc` or `3des-cbc` (old partners).
    #[serde(default = "default_encryption")]
    pub encryption_algorithm: String,
    /// The MDN asked for on messages to the partner: `sync` (in the HTTP
    /// answer) or `async` (posted to the station's `async_mdn_url`).
    #[serde(default = "default_mdn")]
    pub mdn: String,
    /// Ask for signed MDNs on messages to the partner, and refuse unsigned ones.
    #[serde(default = "yes")]
    pub mdn_signed: bool,
    /// The partner's AS2 URL, where messages to it are posted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

fn yes() -> bool {
    true
}
fn default_mic() -> String {
    "sha-256".into()
}
fn default_encryption() -> String {
    "aes-256-cbc".into()
}
fn default_mdn() -> String {
    "sync".into()
}

#[cfg(test)]
#[path = "as2_tests.rs"]
mod tests;

//! Stations and partner profiles: who we are in AS2 (a station: an AS2 id,
//! our key and certificate, the tenant environment it receives into) and
//! who we exchange messages with (a partner: its AS2 id, its certificate,
//! the security both directions use, the MIC and encryption algorithms,
//! the MDN we ask for). Built once from the configuration's `[as2]` section.

use chrono::{DateTime, Utc};

use super::cms::EncryptionAlgorithm;
use super::id::As2Id;
use super::keys::{Certificate, PemSource, PrivateKey};
use super::mic::MicAlgorithm;
use crate::config::{As2PartnerConfig, As2StationConfig, Config, ConfigError, PemConfig, SecretSource};

/// One of our AS2 identities.
#[derive(Debug, Clone)]
pub struct Station {
    /// Our AS2 id.
    pub as2_id: As2Id,
    /// Tenant its messages go to.
    pub tenant: String,
    /// Environment within the tenant.
    pub environment: String,
    /// Our private key (decryption, signatures).
    pub key: PrivateKey,
    /// Our certificate (matches `key`).
    pub certificate: Certificate,
    /// Where partners post asynchronous MDNs for our messages.
    pub async_mdn_url: Option<String>,
}

/// The protections a partner's messages carry, in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Security {
    /// Signed (`multipart/signed`).
    pub signed: bool,
    /// Encrypted (EnvelopedData).
    pub encrypted: bool,
    /// Compressed (CompressedData).
    pub compressed: bool,
}

/// Where the MDN for our messages is to come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MdnMode {
    /// In the HTTP answer.
    Sync,
    /// Posted later to the station's `async_mdn_url`.
    Async,
}

/// A trading partner.
#[derive(Debug, Clone)]
pub struct PartnerProfile {
    /// The partner's AS2 id.
    pub as2_id: As2Id,
    /// The station it exchanges messages with.
    pub station: As2Id,
    /// Its certificate: verifies its signatures, encrypts to it.
    pub certificate: Certificate,
    /// What its messages must carry and ours to it get.
    pub security: Security,
    /// Digest of our signatures and of the MIC we ask for.
    pub mic_algorithm: MicAlgorithm,
    /// Encryption of our messages to it.
    pub encryption: EncryptionAlgorithm,
    /// The MDN we ask for.
    pub mdn_mode: MdnMode,
    /// Whether we ask for (and require) signed MDNs.
    pub mdn_signed: bool,
    /// Its AS2 URL.
    pub url: Option<String>,
}

/// Every station and partner of the configuration.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    stations: Vec<Station>,
    partners: Vec<PartnerProfile>,
}

impl Registry {
    /// The station with AS2 id `id` (the `AS2-To` of a message to us).
    pub fn station(&self, id: &As2Id) -> Option<&Station> {
        self.stations.iter().find(|s| &s.as2_id == id)
    }

    /// Partner `partner` of station `station`.
    pub fn partner(&self, station: &As2Id, partner: &As2Id) -> Option<&PartnerProfile> {
        self.partners.iter().find(|p| &p.station == station && &p.as2_id == partner)
    }

    /// Every certificate with its owner's AS2 id, for expiry warnings.
    pub fn certificates(&self) -> impl Iterator<Item = (&As2Id, &Certificate)> {
        let ours = self.stations.iter().map(|s| (&s.as2_id, &s.certificate));
        ours.chain(self.partners.iter().map(|p| (&p.as2_id, &p.certificate)))
    }

    /// Certificates that expire before `horizon`.
    pub fn expiring_before(&self, horizon: DateTime<Utc>) -> Vec<(&As2Id, &Certificate)> {
        self.certificates().filter(|(_, c)| c.not_after() < horizon).collect()
    }

    /// Every station, in the configuration's order.
    pub fn stations(&self) -> impl Iterator<Item = &Station> {
        self.stations.iter()
    }

    /// Every partner, in the configuration's order.
    pub fn partners(&self) -> impl Iterator<Item = &PartnerProfile> {
        self.partners.iter()
    }

    /// Builds the registry from `config`'s `[as2]` section, reading every
    /// PEM. Each refusal names its key.
    pub fn from_config(config: &Config) -> Result<Self, ConfigError> {
        check_shapes(config)?;
        let secrets = &config.secrets;
        let mut registry = Self::default();
        for (i, def) in config.as2.stations.iter().enumerate() {
            registry.stations.push(load_station(def, &format!("as2.stations[{i}]"), secrets)?);
        }
        for (i, def) in config.as2.partners.iter().enumerate() {
            let at = format!("as2.partners[{i}]");
            registry.partners.push(load_partner(def, &at, secrets)?);
        }
        Ok(registry)
    }

    /// Validates `config`'s `[as2]` section: with secrets unread (commands
    /// that exchange no AS2 message) everything but the PEMs, else by
    /// building the registry.
    pub fn check_config(config: &Config) -> Result<(), ConfigError> {
        match config.secrets {
            SecretSource::Unread => check_shapes(config),
            _ => Self::from_config(config).map(drop),
        }
    }
}

/// Ids, references, algorithms, URLs and PEM sources, without reading a PEM.
fn check_shapes(config: &Config) -> Result<(), ConfigError> {
    let as2 = &config.as2;
    let mut stations = std::collections::HashSet::new();
    for (i, def) in as2.stations.iter().enumerate() {
        let at = format!("as2.stations[{i}]");
        let id = As2Id::new(&def.as2_id).map_err(|r| ConfigError::new(format!("{at}.as2_id"), r))?;
        if !stations.insert(id.clone()) {
            return Err(ConfigError::new(
                format!("{at}.as2_id"),
                format!("AS2 id `{id}` is used by another station"),
            ));
        }
        check_environment(config, &at, &def.tenant, &def.environment)?;
        pem_source(&def.key, &format!("{at}.key"))?;
        pem_source(&def.certificate, &format!("{at}.certificate"))?;
        if let Some(url) = &def.async_mdn_url {
            check_url(url, &format!("{at}.async_mdn_url"))?;
        }
    }
    let mut partners = std::collections::HashSet::new();
    for (i, def) in as2.partners.iter().enumerate() {
        let at = format!("as2.partners[{i}]");
        let id = As2Id::new(&def.as2_id).map_err(|r| ConfigError::new(format!("{at}.as2_id"), r))?;
        let station = as2.stations.iter().find(|s| s.as2_id == def.station).ok_or_else(|| {
            ConfigError::new(format!("{at}.station"), format!("no station has AS2 id `{}`", def.station))
        })?;
        if !partners.insert((def.station.clone(), id.clone())) {
            return Err(ConfigError::new(
                format!("{at}.as2_id"),
                format!("partner `{id}` of station `{}` is defined twice", def.station),
            ));
        }
        partner_settings(def, &at)?;
        if def.mdn == "async" && station.async_mdn_url.is_none() {
            return Err(ConfigError::new(
                format!("{at}.mdn"),
                format!("`async` needs the station's async_mdn_url (station `{}` has none)", def.station),
            ));
        }
        pem_source(&def.certificate, &format!("{at}.certificate"))?;
        if let Some(url) = &def.url {
            check_url(url, &format!("{at}.url"))?;
        }
    }
    Ok(())
}

fn check_environment(config: &Config, at: &str, tenant: &str, environment: &str) -> Result<(), ConfigError> {
    match config.tenants.iter().find(|t| t.id == tenant) {
        None => Err(ConfigError::new(format!("{at}.tenant"), format!("unknown tenant `{tenant}`"))),
        Some(t) if !t.environments.iter().any(|e| e.id == environment) => Err(ConfigError::new(
            format!("{at}.environment"),
            format!("tenant `{tenant}` has no environment `{environment}`"),
        )),
        Some(_) => Ok(()),
    }
}

fn check_url(url: &str, key: &str) -> Result<(), ConfigError> {
    let ok = reqwest::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
    if ok { Ok(()) } else { Err(ConfigError::new(key, format!("`{url}` is not an http(s) URL"))) }
}

/// The partner's algorithms and MDN mode.
fn partner_settings(
    def: &As2PartnerConfig,
    at: &str,
) -> Result<(MicAlgorithm, EncryptionAlgorithm, MdnMode), ConfigError> {
    let mic = MicAlgorithm::from_name(&def.mic_algorithm).ok_or_else(|| {
        ConfigError::new(
            format!("{at}.mic_algorithm"),
            format!("unknown algorithm `{}` (sha-256, sha-384, sha-512 or sha-1)", def.mic_algorithm),
        )
    })?;
    let encryption = EncryptionAlgorithm::from_name(&def.encryption_algorithm).ok_or_else(|| {
        ConfigError::new(
            format!("{at}.encryption_algorithm"),
            format!(
                "unknown algorithm `{}` (aes-128-cbc, aes-192-cbc, aes-256-cbc or 3des-cbc)",
                def.encryption_algorithm
            ),
        )
    })?;
    let mdn = match def.mdn.as_str() {
        "sync" => MdnMode::Sync,
        "async" => MdnMode::Async,
        _ => return Err(ConfigError::new(format!("{at}.mdn"), "must be `sync` or `async`")),
    };
    Ok((mic, encryption, mdn))
}

/// Where `pem` is, refusing none or both of `file` and `env`.
fn pem_source(pem: &PemConfig, key: &str) -> Result<PemSource, ConfigError> {
    match (&pem.file, &pem.env) {
        (Some(file), None) if !file.trim().is_empty() => Ok(PemSource::File(file.clone())),
        (None, Some(env)) if !env.trim().is_empty() => Ok(PemSource::Env(env.clone())),
        (Some(_), Some(_)) => Err(ConfigError::new(key, "set `file` or `env`, not both")),
        _ => Err(ConfigError::new(key, "set `file` (a PEM file) or `env` (a variable holding the PEM)")),
    }
}

/// The PEM of `pem` read, or the error naming `key.file` / `key.env`.
fn read_pem(pem: &PemConfig, key: &str, secrets: &SecretSource) -> Result<(Vec<u8>, String), ConfigError> {
    let source = pem_source(pem, key)?;
    let key = match source {
        PemSource::File(_) => format!("{key}.file"),
        PemSource::Env(_) => format!("{key}.env"),
    };
    source.read(secrets).map(|bytes| (bytes, key.clone())).map_err(|r| ConfigError::new(key, r))
}

fn load_station(def: &As2StationConfig, at: &str, secrets: &SecretSource) -> Result<Station, ConfigError> {
    let (pem, key_at) = read_pem(&def.key, &format!("{at}.key"), secrets)?;
    let key = PrivateKey::from_pem(&pem).map_err(|r| ConfigError::new(&key_at, r))?;
    let (pem, cert_at) = read_pem(&def.certificate, &format!("{at}.certificate"), secrets)?;
    let certificate = Certificate::from_pem(&pem).map_err(|r| ConfigError::new(&cert_at, r))?;
    if !key.matches(&certificate) {
        return Err(ConfigError::new(
            key_at,
            format!("does not match the certificate {} ({at}.certificate)", certificate.subject()),
        ));
    }
    Ok(Station {
        as2_id: As2Id::new(&def.as2_id).map_err(|r| ConfigError::new(format!("{at}.as2_id"), r))?,
        tenant: def.tenant.clone(),
        environment: def.environment.clone(),
        key,
        certificate,
        async_mdn_url: def.async_mdn_url.clone(),
    })
}

fn load_partner(
    def: &As2PartnerConfig,
    at: &str,
    secrets: &SecretSource,
) -> Result<PartnerProfile, ConfigError> {
    let (mic_algorithm, encryption, mdn_mode) = partner_settings(def, at)?;
    let (pem, cert_at) = read_pem(&def.certificate, &format!("{at}.certificate"), secrets)?;
    let certificate = Certificate::from_pem(&pem).map_err(|r| ConfigError::new(cert_at, r))?;
    Ok(PartnerProfile {
        as2_id: As2Id::new(&def.as2_id).map_err(|r| ConfigError::new(format!("{at}.as2_id"), r))?,
        station: As2Id::new(&def.station).map_err(|r| ConfigError::new(format!("{at}.station"), r))?,
        certificate,
        security: Security { signed: def.signed, encrypted: def.encrypted, compressed: def.compressed },
        mic_algorithm,
        encryption,
        mdn_mode,
        mdn_signed: def.mdn_signed,
        url: def.url.clone(),
    })
}

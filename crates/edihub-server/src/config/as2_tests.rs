//! The `[as2]` section: what loads, and every refusal naming its key.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::as2::id::As2Id;
use crate::as2::mic::MicAlgorithm;
use crate::as2::partner::{MdnMode, Registry};
use crate::as2::testing::{identity_valid, shared};
use crate::config::SecretSource;
use crate::config::{Config, ConfigError};

const SHA: &str = "ca4822ad34afb4cf7d32beabed6d8fd80ba2d29b05690c67464b0227c6475074";

/// PEM files of the shared test identities in a fresh directory.
struct Pems {
    dir: PathBuf,
}

impl Pems {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("edihub-as2-config-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let [(key, cert), (_, partner), (stranger_key, _)] = shared();
        let write = |name: &str, bytes: Vec<u8>| std::fs::write(dir.join(name), bytes).unwrap();
        write("our.key", key.pkey().private_key_to_pem_pkcs8().unwrap());
        write("our.crt", cert.x509().to_pem().unwrap());
        write("partner.crt", partner.x509().to_pem().unwrap());
        write("stranger.key", stranger_key.pkey().private_key_to_pem_pkcs8().unwrap());
        write(
            "garbage.pem",
            b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".to_vec(),
        );
        Self { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn secrets(&self) -> SecretSource {
        let partner = std::fs::read_to_string(self.path("partner.crt")).unwrap();
        SecretSource::Fixed(HashMap::from([("EDIHUB_SECRET_PARTNER_CERT".to_string(), partner)]))
    }

    /// A valid configuration with one station and one partner; `station`
    /// and `partner` are appended to their tables.
    fn config(&self, station: &str, partner: &str) -> String {
        format!(
            "[admin]\ntoken_sha256 = \"{SHA}\"\n[[tenants]]\nid = \"acme\"\n  [[tenants.environments]]\n  id = \"prod\"\n\
             [[as2.stations]]\nas2_id = \"EDIHUB ACME\"\ntenant = \"acme\"\nenvironment = \"prod\"\n\
             key = {{ file = \"{}\" }}\ncertificate = {{ file = \"{}\" }}\n{station}\n\
             [[as2.partners]]\nas2_id = \"PARTNER\"\nstation = \"EDIHUB ACME\"\n\
             certificate = {{ env = \"EDIHUB_SECRET_PARTNER_CERT\" }}\n{partner}\n",
            self.path("our.key"),
            self.path("our.crt"),
        )
    }

    fn refusal(&self, text: &str) -> ConfigError {
        Config::from_toml_with_secrets(text, self.secrets()).expect_err("must be refused")
    }
}

impl Drop for Pems {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn stations_and_partners_load_with_their_defaults() {
    let pems = Pems::new();
    let config = Config::from_toml_with_secrets(&pems.config("", ""), pems.secrets()).unwrap();
    let registry = Registry::from_config(&config).unwrap();
    let station = registry.station(&As2Id::new("EDIHUB ACME").unwrap()).unwrap();
    assert_eq!((station.tenant.as_str(), station.environment.as_str()), ("acme", "prod"));
    let partner = registry.partner(&station.as2_id, &As2Id::new("PARTNER").unwrap()).unwrap();
    assert!(partner.security.signed && partner.security.encrypted && !partner.security.compressed);
    assert_eq!(
        (partner.mic_algorithm, partner.mdn_mode, partner.mdn_signed),
        (MicAlgorithm::Sha256, MdnMode::Sync, true)
    );
    assert_eq!(partner.encryption.name(), "aes-256-cbc");
    assert_eq!(partner.certificate.subject(), "CN=partner.test");
    assert!(registry.partner(&As2Id::new("PARTNER").unwrap(), &station.as2_id).is_none());
    // Expiry is read for warnings: nothing expires within a day, both within two years.
    assert!(registry.expiring_before(chrono::Utc::now() + chrono::Duration::days(1)).is_empty());
    assert_eq!(registry.expiring_before(chrono::Utc::now() + chrono::Duration::days(730)).len(), 2);
    // The configuration's Debug names the PEM sources, never their content.
    let printed = format!("{config:?}");
    assert!(printed.contains("EDIHUB_SECRET_PARTNER_CERT"));
    assert!(!printed.contains("BEGIN"), "{printed}");
}

#[test]
fn refusals_name_the_key() {
    let pems = Pems::new();
    let cases: Vec<(String, &str, &str)> = vec![
        (pems.config("", "mic_algorithm = \"md5\""), "as2.partners[0].mic_algorithm", "unknown algorithm"),
        (pems.config("", "encryption_algorithm = \"rc2\""), "as2.partners[0].encryption_algorithm", "unknown algorithm"),
        (pems.config("", "mdn = \"later\""), "as2.partners[0].mdn", "`sync` or `async`"),
        (pems.config("", "mdn = \"async\""), "as2.partners[0].mdn", "async_mdn_url"),
        (pems.config("", "url = \"ftp://partner\""), "as2.partners[0].url", "http(s)"),
        (pems.config("async_mdn_url = \"nope\"", ""), "as2.stations[0].async_mdn_url", "http(s)"),
        (
            pems.config("", "[[as2.partners]]\nas2_id = \"PARTNER\"\nstation = \"EDIHUB ACME\"\ncertificate = { env = \"X\" }"),
            "as2.partners[1].as2_id",
            "defined twice",
        ),
        (
            pems.config("", "[[as2.partners]]\nas2_id = \"P2\"\nstation = \"NOBODY\"\ncertificate = { env = \"X\" }"),
            "as2.partners[1].station",
            "no station",
        ),
    ];
    for (text, key, reason) in cases {
        let err = pems.refusal(&text);
        assert_eq!(err.key, key, "{err}");
        assert!(err.reason.contains(reason), "{err}");
    }
}

/// A configuration whose station is replaced by `station` (a whole table body).
fn with_station(pems: &Pems, station: &str) -> String {
    pems.config("", "").replacen(
        &format!(
            "as2_id = \"EDIHUB ACME\"\ntenant = \"acme\"\nenvironment = \"prod\"\nkey = {{ file = \"{}\" }}\ncertificate = {{ file = \"{}\" }}\n",
            pems.path("our.key"),
            pems.path("our.crt")
        ),
        station,
        1,
    )
}

#[test]
fn station_refusals_name_the_key() {
    let pems = Pems::new();
    let (key, crt) = (pems.path("our.key"), pems.path("our.crt"));
    let station = |id: &str, tenant: &str, key: &str, cert: &str| {
        format!(
            "as2_id = \"{id}\"\ntenant = \"{tenant}\"\nenvironment = \"prod\"\nkey = {key}\ncertificate = {cert}\n"
        )
    };
    let file = |p: &str| format!("{{ file = \"{p}\" }}");
    let cases = [
        (station(&"x".repeat(129), "acme", &file(&key), &file(&crt)), "as2.stations[0].as2_id", "1–128"),
        (station("caf\u{e9}", "acme", &file(&key), &file(&crt)), "as2.stations[0].as2_id", "printable ASCII"),
        (
            station("EDIHUB ACME", "nobody", &file(&key), &file(&crt)),
            "as2.stations[0].tenant",
            "unknown tenant",
        ),
        (
            station("EDIHUB ACME", "acme", &file("/nonexistent/our.key"), &file(&crt)),
            "as2.stations[0].key.file",
            "cannot read",
        ),
        (
            station("EDIHUB ACME", "acme", &file(&crt), &file(&crt)),
            "as2.stations[0].key.file",
            "not an unencrypted PEM private key",
        ),
        (
            station("EDIHUB ACME", "acme", &file(&key), &file(&pems.path("garbage.pem"))),
            "as2.stations[0].certificate.file",
            "not a PEM certificate",
        ),
        (
            station("EDIHUB ACME", "acme", &file(&pems.path("stranger.key")), &file(&crt)),
            "as2.stations[0].key.file",
            "does not match the certificate CN=edihub.test",
        ),
        (
            station("EDIHUB ACME", "acme", "{ env = \"EDIHUB_SECRET_NOT_SET\" }", &file(&crt)),
            "as2.stations[0].key.env",
            "is not set",
        ),
        (
            station("EDIHUB ACME", "acme", &format!("{{ file = \"{key}\", env = \"V\" }}"), &file(&crt)),
            "as2.stations[0].key",
            "not both",
        ),
        (station("EDIHUB ACME", "acme", "{}", &file(&crt)), "as2.stations[0].key", "set `file`"),
    ];
    for (table, key, reason) in cases {
        let err = pems.refusal(&with_station(&pems, &table));
        assert_eq!(err.key, key, "{err}");
        assert!(err.reason.contains(reason), "{err}");
    }
    let twice = format!(
        "{}[[as2.stations]]\n{}",
        pems.config("", ""),
        station("EDIHUB ACME", "acme", &file(&key), &file(&crt))
    );
    let err = pems.refusal(&twice);
    assert_eq!(
        (err.key.as_str(), err.reason.contains("another station")),
        ("as2.stations[1].as2_id", true),
        "{err}"
    );
}

#[test]
fn without_secrets_the_shapes_are_still_checked() {
    let pems = Pems::new();
    // No PEM is read: a missing variable passes, an unknown algorithm does not.
    let text = pems.config("", "").replace(&pems.path("our.key"), "/nonexistent/key.pem");
    Config::from_toml_with_secrets(&text, SecretSource::Unread).unwrap();
    let err =
        Config::from_toml_with_secrets(&pems.config("", "mic_algorithm = \"md5\""), SecretSource::Unread)
            .unwrap_err();
    assert_eq!(err.key, "as2.partners[0].mic_algorithm");
}

#[test]
fn an_expired_partner_certificate_still_loads() {
    // Expiry is a runtime refusal (authentication-failed), never a reason to
    // stop the whole hub at start.
    let pems = Pems::new();
    let (_, expired) = identity_valid("expired.test", -30, -1);
    let secrets = SecretSource::Fixed(HashMap::from([(
        "EDIHUB_SECRET_PARTNER_CERT".to_string(),
        String::from_utf8(expired.x509().to_pem().unwrap()).unwrap(),
    )]));
    let config = Config::from_toml_with_secrets(&pems.config("", ""), secrets).unwrap();
    let registry = Registry::from_config(&config).unwrap();
    assert_eq!(registry.expiring_before(chrono::Utc::now()).len(), 1);
}

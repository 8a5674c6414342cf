//! `POST /as2` on the real server over real HTTP, on SQLite and
//! PostgreSQL: pyas2lib as the partner in every combination of signed,
//! encrypted, compressed, sync and async, signed and unsigned MDNs
//! (`pyas2`); re-sent Message-IDs, alone and at once (`resend`); the bad
//! input, each answered and leaving nothing stored (`bad_input`).
//!
//! The harness: throwaway identities (edihub's station, the partner, a
//! stranger, a partner whose certificate expired), a configuration with
//! the station `EDIHUB` (acme/prod) and its partners, the server on a
//! port-0 listener, and messages a partner would send, built with
//! edihub's own AS2 writer from the partner's side (pyas2lib builds its
//! own in `pyas2`).

mod bad_input;
mod destination;
mod partners;
mod pyas2;
mod resend;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::{Duration, Utc};
use edihub_server::as2::cms::EncryptionAlgorithm;
use edihub_server::as2::id::As2Id;
use edihub_server::as2::keys::{Certificate, PrivateKey};
use edihub_server::as2::mdn::ModifierKind;
use edihub_server::as2::mic::MicAlgorithm;
use edihub_server::as2::mime::Headers;
use edihub_server::as2::outbound::{self, OutboundMessage, Payload};
use edihub_server::as2::partner::{MdnMode, PartnerProfile, Security, Station};
use edihub_server::as2::receipt::ReceivedMdn;
use edihub_server::config::{As2Config, As2PartnerConfig, As2StationConfig, PemConfig};
use edihub_store::As2Filter;
use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::x509::{X509, X509NameBuilder};

use crate::support::live::LiveServer;
use crate::support::{Backend, TestApp, TestConfig};

/// The body limit of the AS2 tests' server (also the decompression bound).
pub const BODY_LIMIT: usize = 1 << 20;

/// A key and its self-signed certificate.
pub struct Identity {
    key: PKey<Private>,
    cert: X509,
}

impl Identity {
    /// A fresh identity for `cn`, valid from `from_days` to `to_days` days from now.
    fn new(cn: &str, from_days: i64, to_days: i64) -> Self {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", cn).unwrap();
        let name = name.build();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        let mut serial = [0u8; 8];
        openssl::rand::rand_bytes(&mut serial).unwrap();
        b.set_serial_number(&Asn1Integer::from_bn(&BigNum::from_slice(&serial).unwrap()).unwrap()).unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        let at = |d: i64| Asn1Time::from_unix((Utc::now() + Duration::days(d)).timestamp()).unwrap();
        b.set_not_before(&at(from_days)).unwrap();
        b.set_not_after(&at(to_days)).unwrap();
        b.sign(&key, MessageDigest::sha256()).unwrap();
        Self { key, cert: b.build() }
    }

    pub fn key_pem(&self) -> Vec<u8> {
        self.key.private_key_to_pem_pkcs8().unwrap()
    }

    pub fn cert_pem(&self) -> Vec<u8> {
        self.cert.to_pem().unwrap()
    }

    pub fn private_key(&self) -> PrivateKey {
        PrivateKey::from_pem(&self.key_pem()).unwrap()
    }

    pub fn certificate(&self) -> Certificate {
        Certificate::from_pem(&self.cert_pem()).unwrap()
    }
}

/// The identities every test shares (RSA key generation takes a while).
pub struct Identities {
    /// edihub's station.
    pub us: Identity,
    /// The partner `PARTNER`.
    pub them: Identity,
    /// Nobody edihub knows.
    pub stranger: Identity,
    /// The partner `EXPIRED`, whose certificate ended yesterday.
    pub expired: Identity,
}

pub fn ids() -> &'static Identities {
    static IDS: OnceLock<Identities> = OnceLock::new();
    IDS.get_or_init(|| Identities {
        us: Identity::new("edihub.test", -1, 365),
        them: Identity::new("partner.test", -1, 365),
        stranger: Identity::new("stranger.test", -1, 365),
        expired: Identity::new("expired.test", -30, -1),
    })
}

/// A temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("edihub-as2-{label}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An X12 purchase order with its own control number and PO number.
pub fn x12(control: u32) -> Vec<u8> {
    format!(
        "ISA*00*          *00*          *ZZ*PARTNER        *ZZ*EDIHUB         *240101*1200*U*00401*{control:09}*0*P*>~\n\
         GS*PO*PARTNER*EDIHUB*20240101*1200*{control}*X*004010~\nST*850*0001~\nBEG*00*SA*PO-{control}**20240101~\n\
         SE*3*0001~\nGE*1*{control}~\nIEA*1*{control:09}~\n"
    )
    .into_bytes()
}

fn pem(file: String) -> PemConfig {
    PemConfig { file: Some(file), env: None }
}

fn partner_config(as2_id: &str, certificate: PemConfig) -> As2PartnerConfig {
    As2PartnerConfig {
        as2_id: as2_id.into(),
        station: "EDIHUB".into(),
        certificate,
        // The least a partner must use: every combination is accepted.
        signed: false,
        encrypted: false,
        compressed: false,
        mic_algorithm: "sha-256".into(),
        encryption_algorithm: "aes-256-cbc".into(),
        mdn: "sync".into(),
        mdn_signed: true,
        url: None,
    }
}

/// Station `EDIHUB` (acme/prod) with partners `PARTNER` (`change` applied)
/// and `EXPIRED`, their PEM files written to `dir`.
pub fn as2_config(dir: &TempDir, change: impl FnOnce(&mut As2PartnerConfig)) -> As2Config {
    let i = ids();
    let mut partner = partner_config("PARTNER", pem(dir.write("partner.crt", &i.them.cert_pem())));
    change(&mut partner);
    As2Config {
        stations: vec![As2StationConfig {
            as2_id: "EDIHUB".into(),
            tenant: "acme".into(),
            environment: "prod".into(),
            key: pem(dir.write("edihub.key", &i.us.key_pem())),
            certificate: pem(dir.write("edihub.crt", &i.us.cert_pem())),
            async_mdn_url: None,
        }],
        partners: vec![
            partner,
            partner_config("EXPIRED", pem(dir.write("expired.crt", &i.expired.cert_pem()))),
        ],
    }
}

/// edihub serving AS2 over HTTP, with its database.
pub struct As2Hub {
    pub app: TestApp,
    pub server: LiveServer,
    pub dir: TempDir,
    http: reqwest::Client,
}

/// An HTTP answer.
pub struct Answer {
    pub status: u16,
    pub headers: Headers,
    pub body: Vec<u8>,
}

impl Answer {
    /// The MDN it carries, verified as edihub's.
    pub fn mdn(&self) -> ReceivedMdn {
        assert_eq!(self.status, 200, "an MDN is answered with 200: {}", String::from_utf8_lossy(&self.body));
        let content_type = self.headers.get("content-type").expect("the MDN's Content-Type");
        ReceivedMdn::read(content_type, &self.body, &ids().us.certificate(), Utc::now())
            .unwrap_or_else(|e| panic!("edihub's MDN does not read: {e}"))
    }

    /// The disposition modifier of its MDN (`processed/Error: <this>`).
    pub fn failure(&self) -> String {
        let mdn = self.mdn();
        assert!(!mdn.disposition.is_positive(), "a failure MDN: {}", mdn.disposition);
        let (kind, text) = mdn.disposition.modifier.expect("a modifier");
        assert_eq!(kind, ModifierKind::Error);
        assert!(mdn.mic.is_none(), "a failure MDN carries no MIC");
        text
    }

    /// The problem document's `detail`, asserting the status.
    pub fn problem(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", String::from_utf8_lossy(&self.body));
        let v: serde_json::Value = serde_json::from_slice(&self.body).expect("a problem document");
        v["detail"].as_str().expect("detail").to_string()
    }
}

impl As2Hub {
    /// edihub with station `EDIHUB` (acme/prod) and partners `PARTNER` and
    /// `EXPIRED`, `change` applied to the configuration.
    pub async fn start_with(backend: Backend, change: impl FnOnce(&mut edihub_server::Config)) -> As2Hub {
        let dir = TempDir::new("api");
        let as2 = as2_config(&dir, |_| {});
        let config = TestConfig::new().with(|c| {
            c.as2 = as2;
            c.max_body_bytes = BODY_LIMIT;
            change(c);
        });
        let app = TestApp::start(backend, config).await;
        let server = LiveServer::start(app.state.clone()).await;
        let http = client();
        As2Hub { app, server, dir, http }
    }

    pub async fn start(backend: Backend) -> As2Hub {
        Self::start_with(backend, |_| {}).await
    }

    /// `POST /as2` with `headers` and `body`.
    pub async fn post(&self, headers: &Headers, body: Vec<u8>) -> Answer {
        post(&self.http, &self.url(), headers, body).await
    }

    /// Where it takes AS2 messages.
    pub fn url(&self) -> String {
        format!("http://{}/as2", self.server.addr)
    }

    /// Posts `message`.
    pub async fn send(&self, message: &OutboundMessage) -> Answer {
        self.post(&message.headers, message.body.clone()).await
    }

    /// The AS2 messages received.
    pub async fn received(&self) -> Vec<edihub_store::As2MessageRow> {
        let filter = As2Filter { limit: 500, ..As2Filter::default() };
        self.app.state.store.list_as2_messages(&filter).await.expect("list_as2_messages")
    }

    /// Asserts that nothing was stored: no message, no AS2 message.
    pub async fn assert_nothing_stored(&self, what: &str) {
        assert_eq!(self.app.count_prod().await, 0, "{what}: no message stored");
        assert!(self.received().await.is_empty(), "{what}: no AS2 message kept");
    }
}

/// An HTTP client for the partner's side (reqwest is built without a
/// default TLS provider: ring, as the server chooses).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// `POST url` with `headers` and `body` over `http`.
pub async fn post(http: &reqwest::Client, url: &str, headers: &Headers, body: Vec<u8>) -> Answer {
    let mut request = http.post(url).body(body);
    for (name, value) in headers.iter() {
        if !name.eq_ignore_ascii_case("content-length") {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.expect("POST /as2");
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    Answer { status, headers, body: response.bytes().await.expect("the answer's body").to_vec() }
}

/// The partner's side of edihub's AS2 writer: its station `from` with
/// `key`, sending to `EDIHUB`, encrypting to `edihub_cert`.
pub struct Sender {
    station: Station,
    edihub: PartnerProfile,
}

impl Sender {
    /// `PARTNER` with its own key, to edihub's certificate.
    pub fn partner(security: Security) -> Sender {
        let i = ids();
        Sender::new("PARTNER", &i.them, &i.us, security)
    }

    pub fn new(from: &str, key: &Identity, edihub_cert: &Identity, security: Security) -> Sender {
        let station = Station {
            as2_id: As2Id::new(from).unwrap(),
            tenant: "partner".into(),
            environment: "prod".into(),
            key: key.private_key(),
            certificate: key.certificate(),
            async_mdn_url: None,
        };
        let edihub = PartnerProfile {
            as2_id: As2Id::new("EDIHUB").unwrap(),
            station: As2Id::new(from).unwrap(),
            certificate: edihub_cert.certificate(),
            security,
            mic_algorithm: MicAlgorithm::Sha256,
            encryption: EncryptionAlgorithm::Aes256Cbc,
            mdn_mode: MdnMode::Sync,
            mdn_signed: true,
            url: None,
        };
        Sender { station, edihub }
    }

    /// Asks for the MDN at `url`.
    pub fn asking_async(mut self, url: &str) -> Sender {
        self.edihub.mdn_mode = MdnMode::Async;
        self.station.async_mdn_url = Some(url.into());
        self
    }

    /// A message carrying `payload`.
    pub fn message(&self, payload: &[u8]) -> OutboundMessage {
        let payload = Payload {
            bytes: payload,
            content_type: "application/edi-x12",
            filename: Some("po.x12"),
            subject: "PO",
        };
        outbound::build(&payload, &self.station, &self.edihub, Utc::now())
            .expect("the partner builds its message")
    }
}

/// Signed and encrypted.
pub const SIGNED_ENCRYPTED: Security = Security { signed: true, encrypted: true, compressed: false };
/// Signed only.
pub const SIGNED: Security = Security { signed: true, encrypted: false, compressed: false };

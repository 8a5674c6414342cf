//! The test configuration, built in code as the server's typed [`Config`]
//! rather than written as TOML text.
//!
//! [`TestConfig::new`] is the harness's base: the admin token, tenants `acme`
//! (`prod` rejecting a reused key, `qa` replaying it) and `globex` (`prod`)
//! with the keys of [`super`], and the message types most tests post. A test
//! adds what it is about, for example
//!
//! ```text
//! TestConfig::new()
//!     .with(|c| c.max_body_bytes = 4096)
//!     .message_type("blob.note", |t| t.duplicate_key_fields = strings(["$.blob"]))
//! ```
//!
//! and [`TestConfig::build`] validates the result with the rules a loaded
//! file goes through ([`Config::validated`]), so a test cannot run on a
//! configuration production would refuse. Tests *about* the TOML format
//! (`security`, the config unit tests) keep writing TOML.

use std::collections::HashMap;

use edihub_server::config::{
    DatabasePooler, DeliveryConfig, DestinationConfig, EnvironmentConfig, IntegrationConfig,
    MessageTypeConfig, TenantConfig,
};
use edihub_server::{Config, SecretSource};
use edihub_store::KeyReusePolicy;
use figment::Figment;
use figment::providers::{Format, Serialized, Toml};

use super::{
    ACME_PROD, ACME_PROD_2, ACME_PROD_FEED, ACME_QA, ACME_QA_FEED, ADMIN_TOKEN, GLOBEX_PROD, sha256_hex,
};

/// The key paths of ORDERS05 in the base configuration.
pub const ORDERS05_KEYS: [&str; 2] = ["E1EDK01.BELNR", "E1EDK02[QUALF=001].BELNR"];

/// Owned strings from literals, for the list fields of the config.
pub fn strings<const N: usize>(items: [&str; N]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A message type rule with nothing set but its id (no key fields: the
/// fingerprint falls back to DOCNUM; the default window).
pub fn message_type(id: &str) -> MessageTypeConfig {
    MessageTypeConfig::new(id)
}

/// An integration of `acme/prod` with nothing set but its id: no type, no
/// event id, no signature (each test sets what it needs).
pub fn integration(id: &str) -> IntegrationConfig {
    IntegrationConfig {
        id: id.into(),
        tenant: "acme".into(),
        environment: "prod".into(),
        message_type: None,
        message_type_path: None,
        message_types: None,
        event_id: None,
        signature: None,
        event_id_days: None,
    }
}

/// An environment whose senders use `api_keys` (plain; stored as digests).
pub fn environment(id: &str, api_keys: &[&str], on_key_reuse: KeyReusePolicy) -> EnvironmentConfig {
    let mut env = EnvironmentConfig::new(id);
    env.api_keys_sha256 = api_keys.iter().map(|k| sha256_hex(k)).collect();
    env.on_key_reuse = on_key_reuse;
    env
}

/// A configuration under construction; see the module documentation.
#[derive(Clone)]
pub struct TestConfig {
    config: Config,
    secrets: HashMap<String, String>,
}

impl Default for TestConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl TestConfig {
    /// The harness's base configuration.
    pub fn new() -> TestConfig {
        let mut config = Config { listen: "127.0.0.1:0".into(), ..Config::default() };
        config.admin.token_sha256 = sha256_hex(ADMIN_TOKEN);
        // One PostgreSQL partition ahead, not seven: each one costs every
        // test database catalog work (seven: about a second); a test that
        // reaches further has its partitions created on demand.
        config.database_partitions_ahead = 1;
        // The harness's receivers listen on loopback; the tests of the
        // address policy turn it off again.
        config.delivery.allow_private_destinations = true;
        let test = TestConfig { config, secrets: HashMap::new() };
        let keys = strings(ORDERS05_KEYS);
        let consuming = |mut env: EnvironmentConfig, key: &str| {
            env.consumer_keys_sha256 = vec![sha256_hex(key)];
            env
        };
        let acme_prod = environment("prod", &[ACME_PROD, ACME_PROD_2], KeyReusePolicy::Reject);
        let acme_qa = environment("qa", &[ACME_QA], KeyReusePolicy::Replay);
        test.environment("acme", consuming(acme_prod, ACME_PROD_FEED))
            .environment("acme", consuming(acme_qa, ACME_QA_FEED))
            .environment("globex", environment("prod", &[GLOBEX_PROD], KeyReusePolicy::default()))
            .message_type("ORDERS05", |t| {
                t.duplicate_key_fields = keys.clone();
                t.duplicate_window_hours = Some(168);
            })
            // The same keys, but a two-second window (sent with X-Message-Type: WIN2S).
            .message_type("WIN2S", |t| {
                t.duplicate_key_fields = keys.clone();
                t.duplicate_window = Some("2s".into());
            })
            // No key fields: the fingerprint falls back to DOCNUM with its sender.
            .message_type("NOKEYS", |_| {})
            // A key field no test document has: falls back to DOCNUM, then to nothing.
            .message_type("ABSENTKEY", |t| t.duplicate_key_fields = strings(["E1ZZZ01.NOPE"]))
            // Plain JSON orders from a shop.
            .message_type("shop.order", |t| t.duplicate_key_fields = strings(["$.order.id"]))
    }

    /// Changes top-level keys (limits, timeouts, `retention`, …) directly.
    pub fn with(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(&mut self.config);
        self
    }

    /// Adds `environment` to `tenant`, adding the tenant when it is new.
    pub fn environment(mut self, tenant: &str, environment: EnvironmentConfig) -> Self {
        let tenants = &mut self.config.tenants;
        let index = match tenants.iter().position(|t| t.id == tenant) {
            Some(i) => i,
            None => {
                tenants.push(TenantConfig { id: tenant.into(), environments: Vec::new() });
                tenants.len() - 1
            }
        };
        tenants[index].environments.push(environment);
        self
    }

    /// Adds the message type `id`, set up by `rule` (see [`message_type`]
    /// for what is unset).
    pub fn message_type(mut self, id: &str, rule: impl FnOnce(&mut MessageTypeConfig)) -> Self {
        let mut t = message_type(id);
        rule(&mut t);
        self.config.message_types.push(t);
        self
    }

    /// Adds a message type rule built elsewhere (e.g. read from a fixture).
    pub fn message_type_config(mut self, rule: MessageTypeConfig) -> Self {
        self.config.message_types.push(rule);
        self
    }

    /// Adds the integration `id` of `acme/prod`, set up by `define` (see
    /// [`integration`] for what is unset).
    pub fn integration(mut self, id: &str, define: impl FnOnce(&mut IntegrationConfig)) -> Self {
        let mut i = integration(id);
        define(&mut i);
        self.config.integrations.push(i);
        self
    }

    /// Makes `value` the secret of variable `name` (never the process
    /// environment: tests do not share secrets through it).
    pub fn secret(mut self, name: &str, value: &str) -> Self {
        self.secrets.insert(name.into(), value.into());
        self
    }

    /// Adds the `[[destinations]]` and `[delivery]` of `toml` (a fragment in
    /// the file's format, read into the typed sections: delivery tests
    /// describe their receivers' URLs there). The keys of `[delivery]`
    /// change the configuration's; the others keep their values.
    pub fn delivery_toml(mut self, toml: &str) -> Self {
        #[derive(serde::Deserialize)]
        struct Delivery {
            #[serde(default)]
            destinations: Vec<DestinationConfig>,
            delivery: DeliveryConfig,
        }
        let parsed: Delivery = Figment::from(Serialized::default("delivery", &self.config.delivery))
            .merge(Toml::string(toml))
            .extract()
            .unwrap_or_else(|e| panic!("delivery test config refused: {e}"));
        self.config.destinations.extend(parsed.destinations);
        self.config.delivery = parsed.delivery;
        self
    }

    /// The configuration on `database_url`, validated; a refusal fails the
    /// test naming the key, as the server would at start.
    pub fn build(self, database_url: &str) -> Config {
        // Behind the test pooler (`EDIHUB_TEST_POOLER_URL`), PostgreSQL
        // URLs name PgBouncer in transaction mode.
        let pooled = database_url.starts_with("postgres") && edihub_store::testing::pg_pooler_url().is_some();
        let database_pooler = if pooled { DatabasePooler::Transaction } else { self.config.database_pooler };
        let config = Config { database_url: database_url.into(), database_pooler, ..self.config };
        config
            .validated(SecretSource::Fixed(self.secrets))
            .unwrap_or_else(|e| panic!("test config refused: {e}"))
    }
}

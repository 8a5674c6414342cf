//! The root of the configuration: [`Config`] with its top-level keys and
//! their defaults, and loading it (defaults, the TOML file, the
//! environment) into a validated value. The sections it holds are typed in
//! the files beside it; the rules it is checked against are in the
//! `validate*` files, which read this one and which only each other import.

use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use super::as2::As2Config;
use super::choices::{DatabasePartitionPeriod, DatabasePooler, LogFormat};
use super::delivery::{DeliveryConfig, DestinationConfig};
use super::env::{self, LoadNotes};
use super::error::ConfigError;
use super::sap::SapSystemConfig;
use super::secrets::SecretSource;
use super::sections::{
    AdminConfig, FeedConfig, IntegrationConfig, MessageTypeConfig, RetentionConfig, TenantConfig,
};

/// Default of `webhook_secret_prefix`.
pub const DEFAULT_SECRET_PREFIX: &str = "EDIHUB_SECRET_";

/// The whole configuration file. Its `Debug` masks the database password.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Address to listen on, e.g. `127.0.0.1:8080`.
    pub listen: String,
    /// `sqlite://path` (embedded, the default) or `postgres://…`.
    pub database_url: String,
    /// Largest accepted request body in bytes; larger bodies get 413.
    pub max_body_bytes: usize,
    /// Most IDocs in one packet, or messages in one EDIFACT or X12
    /// interchange; a larger one gets 413 and nothing of it is stored (the
    /// reader of an interchange, of a flat file of IDocs and of an IDoc-XML
    /// body of a megabyte or more stops at the first message over). Packets
    /// are stored in chunks, so this bounds a request's time and memory, not
    /// the database's lock.
    pub max_idocs_per_packet: usize,
    /// Total bytes of request bodies over 64 KiB that are processed at once.
    /// A large UTF-8 IDoc-XML body is held once while it is parsed and stored
    /// on PostgreSQL, beside what its parse builds (a fraction of its size);
    /// other formats, other charsets and SQLite take a few times the body's
    /// size. A packet or interchange of many small messages takes memory by
    /// its messages rather than its bytes, a few kilobytes each until it is
    /// answered (BENCHMARKS.md, "Comparisons"), which `max_idocs_per_packet`
    /// bounds. So this bounds memory under many large uploads: a request
    /// that would exceed it waits for its turn (within
    /// `request_timeout_secs`), and a body larger than the whole budget is
    /// processed alone. Smaller bodies never wait.
    pub max_inflight_body_bytes: usize,
    /// Total bytes of webhook bodies over 64 KiB read at once. A webhook's
    /// signature can only be checked once its body is in, so until then the
    /// sender is unknown: these bodies get a budget of their own and never a
    /// share of `max_inflight_body_bytes`, which authenticated senders need.
    pub max_inflight_webhook_body_bytes: usize,
    /// Most of `max_inflight_webhook_body_bytes` the webhook bodies of one
    /// client address hold at once (a body takes at most this much of the
    /// budget), so a client trickling large bodies with bogus signatures
    /// waits behind itself and leaves the rest of the budget to others. A
    /// share larger than the budget is the whole budget.
    pub max_inflight_webhook_body_bytes_per_address: usize,
    /// Seconds a request body (receive and webhooks) may take before
    /// `body_read_min_bytes_per_sec` applies.
    pub body_read_grace_secs: u64,
    /// Least average rate of a request body after `body_read_grace_secs`:
    /// every byte received gives the next one 1/rate seconds more; a body
    /// that falls behind is answered 408 and its connection closed, which
    /// releases its share of the body budgets. 0 turns the check off
    /// (`request_timeout_secs` still bounds every request).
    pub body_read_min_bytes_per_sec: u64,
    /// Most database connections per edihub process.
    pub database_max_connections: u32,
    /// Seconds a request waits for a database connection before answering 503.
    pub database_acquire_timeout_secs: u64,
    /// What sits between edihub and PostgreSQL: `none` (a direct connection,
    /// or a pooler in session mode) or `transaction` (a pooler in
    /// transaction mode, such as PgBouncer with `pool_mode = transaction`).
    /// With `transaction`, every unit of work runs in a transaction and no
    /// prepared statement outlives it (docs/scale.md, "PgBouncer").
    pub database_pooler: DatabasePooler,
    /// The range of one PostgreSQL time partition: `day` or `week` (UTC).
    /// Ignored with SQLite, which is not partitioned (docs/scale.md,
    /// "Partitioning").
    pub database_partition_period: DatabasePartitionPeriod,
    /// PostgreSQL partitions created ahead of the current period, at start
    /// and before every retention run. Ignored with SQLite.
    pub database_partitions_ahead: u32,
    /// Apply pending migrations when `serve` starts.
    pub auto_migrate: bool,
    /// Seconds between reloads of message types from the database, so edits
    /// made through another replica take effect here too.
    pub catalog_refresh_secs: u64,
    /// Log format: `text` or `json`.
    pub log_format: LogFormat,
    /// Seconds a request may take before it is answered 503 (and rolled back).
    pub request_timeout_secs: u64,
    /// Most open client connections; more wait in the accept queue.
    pub max_connections: usize,
    /// Most open connections from one client address; more are answered
    /// 503 and closed at once. Behind a reverse proxy every client shares
    /// the proxy's address: raise it to `max_connections` there.
    pub max_connections_per_address: usize,
    /// Seconds a client has to send complete request headers.
    pub header_read_timeout_secs: u64,
    /// Seconds in-flight requests get to finish after SIGTERM.
    pub shutdown_grace_secs: u64,
    /// Seconds over which refused webhook signatures are gathered into one
    /// `webhook.signature_rejected` audit event per integration, reason and
    /// client address (with a count), so a flood of bad requests writes a
    /// bounded number of rows.
    pub signature_rejection_audit_secs: u64,
    /// Background release and purge of old data.
    pub retention: RetentionConfig,
    /// The pull feed's page and scan bounds.
    pub feed: FeedConfig,
    /// The admin credential.
    pub admin: AdminConfig,
    /// Tenants and their environments.
    pub tenants: Vec<TenantConfig>,
    /// Message types to seed into the database.
    pub message_types: Vec<MessageTypeConfig>,
    /// Partner webhook integrations.
    pub integrations: Vec<IntegrationConfig>,
    /// The delivery workers' schedule.
    pub delivery: DeliveryConfig,
    /// Push destinations of new messages.
    pub destinations: Vec<DestinationConfig>,
    /// AS2 stations and trading partners.
    pub as2: As2Config,
    /// Files describing IDoc types (the output of SAP's WE60 / IDoc parser
    /// in its parser format, or the JSON form): a flat-file IDoc of a
    /// described type is read into fields under its segments, like its XML
    /// form; other flat files keep each segment's raw SDATA. Read and
    /// checked at start.
    pub idoc_descriptions: Vec<String>,
    /// Prefix a `secret_env` variable must start with unless the config
    /// file's own integrations name it (see `config::names`).
    pub webhook_secret_prefix: String,
    /// Where integration secrets are read from (the process environment,
    /// or a fixed map in tests). Never part of the file.
    #[serde(skip)]
    pub secrets: SecretSource,
    /// What loading noticed (ignored variables, the database URL's source),
    /// for the start-up log. Never part of the file.
    #[serde(skip)]
    pub load_notes: LoadNotes,
    /// The `secret_env` names the loaded file's integrations use, fixed when
    /// the file is read so an admin edit cannot add to them.
    #[serde(skip)]
    pub file_secret_names: std::collections::BTreeSet<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            database_url: "sqlite://data/edihub.db".into(),
            max_body_bytes: 32 * 1024 * 1024,
            max_idocs_per_packet: 50_000,
            max_inflight_body_bytes: 24 * 1024 * 1024,
            max_inflight_webhook_body_bytes: 4 * 1024 * 1024,
            max_inflight_webhook_body_bytes_per_address: 1024 * 1024,
            body_read_grace_secs: 10,
            body_read_min_bytes_per_sec: 1024,
            database_max_connections: 16,
            database_acquire_timeout_secs: 5,
            database_pooler: DatabasePooler::None,
            database_partition_period: DatabasePartitionPeriod::Day,
            database_partitions_ahead: 7,
            auto_migrate: true,
            catalog_refresh_secs: 30,
            log_format: LogFormat::Text,
            request_timeout_secs: 30,
            max_connections: 4096,
            max_connections_per_address: 256,
            header_read_timeout_secs: 10,
            shutdown_grace_secs: 30,
            signature_rejection_audit_secs: 60,
            retention: RetentionConfig::default(),
            feed: FeedConfig::default(),
            admin: AdminConfig::default(),
            tenants: Vec::new(),
            message_types: Vec::new(),
            integrations: Vec::new(),
            delivery: DeliveryConfig::default(),
            destinations: Vec::new(),
            as2: As2Config::default(),
            idoc_descriptions: Vec::new(),
            webhook_secret_prefix: DEFAULT_SECRET_PREFIX.into(),
            secrets: SecretSource::Environment,
            load_notes: LoadNotes::default(),
            file_secret_names: std::collections::BTreeSet::new(),
        }
    }
}

impl Config {
    /// Loads `path` (when given and present) with environment overrides, then validates.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_with_secrets(path, SecretSource::Environment)
    }

    /// [`Config::load`] with secrets from `secrets` ([`SecretSource::Unread`]
    /// for commands that need none).
    pub fn load_with_secrets(path: Option<&Path>, secrets: SecretSource) -> Result<Config, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = path {
            if !path.exists() {
                return Err(ConfigError::new("EDIHUB_CONFIG", format!("file {} not found", path.display())));
            }
            fig = fig.merge(Toml::file(path));
        }
        let (fig, ignored_env) = env::merge_overrides(fig);
        let database_url_source = env::database_url_source(&fig);
        let mut config = Self::extract(fig, secrets)?;
        config.load_notes = LoadNotes { ignored_env, database_url_source };
        Ok(config)
    }

    /// Parses and validates a TOML document (no environment overrides;
    /// secrets from the process environment).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        Self::from_toml_with_secrets(text, SecretSource::Environment)
    }

    /// Parses and validates a TOML document with secrets from `secrets`.
    pub fn from_toml_with_secrets(text: &str, secrets: SecretSource) -> Result<Config, ConfigError> {
        let fig = Figment::from(Serialized::defaults(Config::default())).merge(Toml::string(text));
        Self::extract(fig, secrets)
    }

    fn extract(fig: Figment, secrets: SecretSource) -> Result<Config, ConfigError> {
        let config: Config = fig.extract().map_err(ConfigError::from_figment)?;
        config.validated(secrets)
    }

    /// A configuration built in code (tests, embedders) made ready the way a
    /// loaded file is: `secrets` as its secret source, the `secret_env`
    /// names of its integrations fixed as the file's own, every rule checked.
    pub fn validated(mut self, secrets: SecretSource) -> Result<Config, ConfigError> {
        self.secrets = secrets;
        let integrations = self.integrations.iter().filter_map(|i| i.signature.as_ref()?.secret_env.clone());
        let destinations =
            self.destinations.iter().filter_map(|d| Some(d.signature.as_ref()?.secret_env.clone()));
        let passwords =
            self.destinations.iter().filter_map(|d| Some(d.basic_auth.as_ref()?.password_env.clone()));
        self.file_secret_names = integrations.chain(destinations).chain(passwords).collect();
        self.validate()?;
        Ok(self)
    }
}

impl Config {
    /// The SAP system of `tenant`/`environment`, if it has one.
    pub fn sap_system(&self, tenant: &str, environment: &str) -> Option<&SapSystemConfig> {
        self.tenants
            .iter()
            .find(|t| t.id == tenant)
            .and_then(|t| t.environments.iter().find(|e| e.id == environment))
            .and_then(|e| e.sap.as_ref())
    }
}

/// `url` with the password (between `user:` and `@`) replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].find(':') {
            Some(colon) => format!("{}{}:***{}", &url[..scheme_end], &rest[..colon], &rest[at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database_url", &redact_url(&self.database_url))
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_idocs_per_packet", &self.max_idocs_per_packet)
            .field("max_inflight_body_bytes", &self.max_inflight_body_bytes)
            .field("database_max_connections", &self.database_max_connections)
            .field("database_pooler", &self.database_pooler)
            .field("database_partition_period", &self.database_partition_period)
            .field("database_partitions_ahead", &self.database_partitions_ahead)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("max_connections", &self.max_connections)
            .field("max_connections_per_address", &self.max_connections_per_address)
            .field("tenants", &self.tenants)
            .field("message_types", &self.message_types)
            .field("integrations", &self.integrations)
            .field("destinations", &self.destinations)
            .field("as2", &self.as2)
            .field("secrets", &self.secrets)
            .finish_non_exhaustive()
    }
}

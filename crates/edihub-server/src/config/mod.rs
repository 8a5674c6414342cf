//! edihub's configuration: typed, loaded from TOML with `EDIHUB_*` overrides,
//! and validated once at start so a bad value fails with the key's name.
//!
//! Precedence, lowest first: built-in defaults, the TOML file
//! (`EDIHUB_CONFIG`, default `config/edihub.toml`), `DATABASE_URL`, then
//! `EDIHUB_<KEY>` variables (nested keys with `__`, e.g.
//! `EDIHUB_ADMIN__TOKEN_SHA256`). Unknown keys in the file are errors;
//! unknown `EDIHUB_*` variables are ignored and reported (see `env`).
//!
//! The configuration's types are read by everyone and read no one: `root`
//! and the section files import only each other. The rules that check a
//! loaded file against the rest of the hub (an integration's parse, a
//! destination's address, the AS2 keys) sit in the `validate*` files,
//! which read those parts and which only each other import, so no import
//! leads back into them. This file only names the parts.

mod as2;
mod choices;
mod credentials;
mod delivery;
mod duration;
mod env;
mod error;
pub mod idoc_descriptions;
mod names;
mod root;
mod sap;
mod secrets;
mod sections;
mod validate;
mod validate_delivery;
mod validate_scopes;

pub use as2::{As2Config, As2PartnerConfig, As2StationConfig, PemConfig};
pub use choices::{DatabasePartitionPeriod, DatabasePooler, LogFormat, choice_name, parse_choice};
pub use credentials::{basic_password, signing_key};
pub use delivery::{
    DeliveryBasicAuth, DeliveryConfig, DeliveryFormat, DeliveryOrdering, DeliverySignatureConfig,
    DestinationConfig,
};
pub use duration::{Window, parse_delay};
pub use env::{DatabaseUrlSource, LoadNotes};
pub use error::ConfigError;
pub use names::{MAX_TYPE_LEN, check_secret_env, check_type};
pub use root::{Config, DEFAULT_SECRET_PREFIX, redact_url};
pub use sap::{SapStatusConfig, SapSystemConfig};
pub use secrets::SecretSource;
pub use sections::{
    AdminConfig, EnvironmentConfig, EventIdConfig, FeedConfig, IntegrationConfig, MessageTypeConfig,
    RetentionConfig, SignatureConfig, TenantConfig,
};

#[cfg(test)]
mod tests;

//! The delivery sections: `[delivery]` (the workers' schedule) and
//! `[[destinations]]` (where new messages are pushed), with their
//! validation. Each rule names the offending key.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::validate::{check_id, parse_window};
use super::{Config, ConfigError};

/// The delivery workers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeliveryConfig {
    /// Delays before the second, third, … attempt (`500ms`, `5s`, `2m`,
    /// `1h`, `1d`); after the last one fails the delivery is `failed`.
    /// Each delay gets ±20 % jitter; a receiver's `Retry-After` may lengthen it.
    pub retry_schedule: Vec<String>,
    /// How often the workers reread the destinations and look for due
    /// deliveries, in milliseconds (a finished attempt wakes them at once;
    /// a destination changed through the admin API applies within this).
    pub poll_interval_ms: u64,
    /// Most attempts in flight per destination in this process, so one slow
    /// destination never holds the workers of the others (a destination's
    /// own `max_in_flight` overrides it). A destination's throughput is at
    /// most this many attempts per its answer time: 64 over 30 ms is about
    /// 2,000 deliveries a second.
    pub max_in_flight_per_destination: u32,
    /// Seconds a lease outlasts the destination's `timeout_secs`: time to
    /// record the attempt. A process killed mid-attempt delays that
    /// delivery by the timeout plus this much (another worker then takes it).
    pub lease_margin_secs: u64,
    /// Whether destinations may be on loopback, private, link-local and
    /// other non-public addresses (an ERP on the internal network, the demo
    /// receiver on 127.0.0.1). Off: deliveries connect only to public
    /// addresses, checked after DNS resolution at each connection (see
    /// `delivery::address_policy`). Cloud metadata services, the
    /// unspecified address and multicast are refused either way.
    pub allow_private_destinations: bool,
    /// Bytes the envelopes being rendered and sent may take at once in this
    /// process (see `delivery::render`): a render counts about 20 times its
    /// message's body while it parses and writes, then the envelope's size
    /// until it is sent; a message larger than this renders alone. Raw
    /// deliveries send the stored bytes and take none of it.
    pub render_budget_bytes: usize,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        let schedule = ["5s", "30s", "2m", "10m", "30m", "1h", "3h", "6h", "12h", "24h"];
        Self {
            retry_schedule: schedule.iter().map(|s| s.to_string()).collect(),
            poll_interval_ms: 1000,
            max_in_flight_per_destination: 64,
            lease_margin_secs: 30,
            allow_private_destinations: false,
            render_budget_bytes: 256 * 1024 * 1024,
        }
    }
}

impl DeliveryConfig {
    /// Which addresses deliveries may connect to.
    pub fn address_policy(&self) -> crate::delivery::AddressPolicy {
        crate::delivery::AddressPolicy { allow_private: self.allow_private_destinations }
    }

    /// The retry delays (validated at start, so none fails here).
    pub fn delays(&self) -> Vec<Duration> {
        self.retry_schedule.iter().filter_map(|d| parse_delay(d).ok()).collect()
    }
}

/// A push destination: new messages of one environment are POSTed to `url`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    /// Destination id (taken from the path in the admin API).
    #[serde(default)]
    pub id: String,
    /// Tenant whose messages it receives.
    pub tenant: String,
    /// Environment whose messages it receives.
    pub environment: String,
    /// `http://` or `https://` URL the messages are POSTed to.
    pub url: String,
    /// Only these message types (absent: every type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_types: Option<Vec<String>>,
    /// `envelope` (JSON with the message's metadata and JSON rendering, the
    /// default), `raw` (the bytes as received, with their content type),
    /// `sap-idoc-xml` (an IDoc as IDoc-XML for SAP's inbound HTTP service,
    /// addressed from the hub to the environment's SAP system, with its
    /// `sap-client`) or `as2` (the bytes as received, sent to `as2_partner`
    /// over AS2 and delivered only on its MDN confirming them).
    #[serde(default = "default_format")]
    pub format: String,
    /// For `format = "as2"`: the AS2 id of the trading partner
    /// (`as2.partners[].as2_id`, of a station of the destination's tenant
    /// environment) whose profile signs, encrypts and compresses what is
    /// sent; `url` is the partner's AS2 URL. The partner must answer with a
    /// synchronous MDN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as2_partner: Option<String>,
    /// How requests are signed (absent: unsigned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<DeliverySignatureConfig>,
    /// HTTP Basic credentials sent with every request, the password read
    /// from an environment variable (absent: none). Credentials in `url`
    /// itself are refused: the definition is shown to every admin and
    /// copied into the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<DeliveryBasicAuth>,
    /// `parallel` (the default: up to `delivery.max_in_flight_per_destination`
    /// attempts at once, in any order) or `fifo`: one delivery in flight
    /// across all replicas, in commit order, and a delivery waiting for its
    /// retry or failed (until replayed) holds back the ones behind it.
    #[serde(default = "default_ordering")]
    pub ordering: String,
    /// Seconds an attempt may take before it counts as failed (default 10).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Most attempts in flight to it per process (1-1,000; absent:
    /// `delivery.max_in_flight_per_destination`), for a receiver that takes
    /// fewer requests at once, or more. A `fifo` destination has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// A disabled destination gets no new deliveries and its queued ones wait.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
}

/// Signing of outgoing deliveries.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliverySignatureConfig {
    /// `standard-webhooks` (the only scheme).
    pub scheme: String,
    /// Environment variable holding the `whsec_<base64>` secret.
    pub secret_env: String,
}

/// HTTP Basic credentials of a destination.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryBasicAuth {
    /// The user name (shown in the admin API; no `:`).
    pub user: String,
    /// Environment variable holding the password (its name is shown, never its value).
    pub password_env: String,
}

/// The password `auth` names: `Ok(None)` when secrets are not read
/// (validation of commands that deliver nothing).
pub fn basic_password(auth: &DeliveryBasicAuth, config: &Config) -> Result<Option<String>, String> {
    crate::integrations::names::check_secret_env(&auth.password_env, config)?;
    if matches!(config.secrets, super::SecretSource::Unread) {
        return Ok(None);
    }
    let var = &auth.password_env;
    let password = config.secrets.get(var).filter(|s| !s.is_empty());
    password.map(Some).ok_or_else(|| format!("environment variable {var} is not set or empty"))
}

fn default_format() -> String {
    "envelope".into()
}
fn default_ordering() -> String {
    "parallel".into()
}
fn default_timeout() -> u64 {
    10
}
fn default_enabled() -> bool {
    true
}

/// Most attempts in flight to one destination that a setting may allow.
pub const MAX_IN_FLIGHT: u32 = 1000;

impl DestinationConfig {
    /// Its attempts in flight per process: its own `max_in_flight`, else
    /// the global `delivery.max_in_flight_per_destination`.
    pub fn in_flight(&self, delivery: &DeliveryConfig) -> usize {
        self.max_in_flight.unwrap_or(delivery.max_in_flight_per_destination) as usize
    }
}

/// Parses a delay such as `500ms`, `5s`, `2m`, `1h`, `1d`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    match text.trim().strip_suffix("ms") {
        Some(ms) => match ms.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Duration::from_millis(n)),
            _ => Err(format!("`{text}` must be a positive duration (500ms, 5s, 2m, 1h, 1d)")),
        },
        None => parse_window(text).map(|s| Duration::from_secs(s.unsigned_abs())),
    }
}

impl Config {
    pub(super) fn validate_delivery(&self) -> Result<(), ConfigError> {
        for (i, d) in self.delivery.retry_schedule.iter().enumerate() {
            parse_delay(d).map_err(|r| ConfigError::new(format!("delivery.retry_schedule[{i}]"), r))?;
        }
        if self.delivery.poll_interval_ms == 0 {
            return Err(ConfigError::new("delivery.poll_interval_ms", "must be greater than 0"));
        }
        if self.delivery.render_budget_bytes < 1024 * 1024 {
            return Err(ConfigError::new("delivery.render_budget_bytes", "must be at least 1048576 (1 MiB)"));
        }
        if self.delivery.lease_margin_secs == 0 {
            return Err(ConfigError::new("delivery.lease_margin_secs", "must be greater than 0"));
        }
        if !(1..=MAX_IN_FLIGHT).contains(&self.delivery.max_in_flight_per_destination) {
            return Err(ConfigError::new(
                "delivery.max_in_flight_per_destination",
                "must be between 1 and 1000",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, d) in self.destinations.iter().enumerate() {
            let at = format!("destinations[{i}]");
            check_id(&format!("{at}.id"), &d.id)?;
            if !seen.insert(d.id.as_str()) {
                return Err(ConfigError::new(
                    format!("{at}.id"),
                    format!("destination `{}` is defined twice", d.id),
                ));
            }
            self.validate_destination(d, &at)?;
        }
        Ok(())
    }

    fn validate_destination(&self, d: &DestinationConfig, at: &str) -> Result<(), ConfigError> {
        match self.tenants.iter().find(|t| t.id == d.tenant) {
            None => {
                return Err(ConfigError::new(
                    format!("{at}.tenant"),
                    format!("unknown tenant `{}`", d.tenant),
                ));
            }
            Some(t) if !t.environments.iter().any(|e| e.id == d.environment) => {
                return Err(ConfigError::new(
                    format!("{at}.environment"),
                    format!("tenant `{}` has no environment `{}`", d.tenant, d.environment),
                ));
            }
            Some(_) => {}
        }
        let url_ok = reqwest::Url::parse(&d.url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
        if !url_ok {
            return Err(ConfigError::new(format!("{at}.url"), format!("`{}` is not an http(s) URL", d.url)));
        }
        self.delivery
            .address_policy()
            .check_url(&d.url)
            .map_err(|e| ConfigError::new(format!("{at}.url"), e.0))?;
        if reqwest::Url::parse(&d.url).is_ok_and(|u| !u.username().is_empty() || u.password().is_some()) {
            return Err(ConfigError::new(
                format!("{at}.url"),
                "carries credentials, which every admin and the audit log would see: give them as basic_auth = { user = \"…\", password_env = \"…\" }",
            ));
        }
        if let Some(auth) = &d.basic_auth {
            if auth.user.is_empty() || auth.user.contains(':') {
                return Err(ConfigError::new(
                    format!("{at}.basic_auth.user"),
                    "must be a user name without `:`",
                ));
            }
            basic_password(auth, self)
                .map_err(|r| ConfigError::new(format!("{at}.basic_auth.password_env"), r))?;
        }
        for (k, t) in d.message_types.iter().flatten().enumerate() {
            crate::producers::check_type(t)
                .map_err(|reason| ConfigError::new(format!("{at}.message_types[{k}]"), reason))?;
        }
        if !matches!(d.format.as_str(), "envelope" | "raw" | "sap-idoc-xml" | "as2") {
            return Err(ConfigError::new(
                format!("{at}.format"),
                "must be `envelope`, `raw`, `sap-idoc-xml` or `as2`",
            ));
        }
        self.validate_as2_destination(d, at)?;
        if d.format == "sap-idoc-xml" && self.sap_system(&d.tenant, &d.environment).is_none() {
            return Err(ConfigError::new(
                format!("{at}.format"),
                format!(
                    "`sap-idoc-xml` needs the SAP system of {}/{}: set tenants[].environments[].sap",
                    d.tenant, d.environment
                ),
            ));
        }
        if !matches!(d.ordering.as_str(), "parallel" | "fifo") {
            return Err(ConfigError::new(format!("{at}.ordering"), "must be `parallel` or `fifo`"));
        }
        if !(1..=300).contains(&d.timeout_secs) {
            return Err(ConfigError::new(format!("{at}.timeout_secs"), "must be between 1 and 300"));
        }
        if d.max_in_flight.is_some_and(|n| !(1..=MAX_IN_FLIGHT).contains(&n)) {
            return Err(ConfigError::new(format!("{at}.max_in_flight"), "must be between 1 and 1000"));
        }
        if let Some(sig) = &d.signature {
            if sig.scheme != "standard-webhooks" {
                return Err(ConfigError::new(
                    format!("{at}.signature.scheme"),
                    "must be `standard-webhooks`",
                ));
            }
            crate::delivery::signing_key(sig, self)
                .map_err(|r| ConfigError::new(format!("{at}.signature.secret_env"), r))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;

//! The delivery sections: `[delivery]` (the workers' schedule) and
//! `[[destinations]]` (where new messages are pushed). Their rules are in
//! `validate_delivery.rs`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration::parse_delay;

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
    /// Bytes of envelopes the receive route renders and keeps for the
    /// first attempts of envelope destinations that this process's worker
    /// claims, so those attempts neither read nor parse the message (see
    /// `delivery::handoff`): a small single-document message of an
    /// environment with an enabled envelope destination; the oldest go
    /// first. Such a message without a key also has its `parallel`
    /// envelope deliveries leased at its insert, and they start without a
    /// claim. `0` turns both off; a message not kept is read from the
    /// store as before.
    pub handoff_bytes: usize,
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
            handoff_bytes: 16 * 1024 * 1024,
        }
    }
}

impl DeliveryConfig {
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
    #[serde(default)]
    pub format: DeliveryFormat,
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
    #[serde(default)]
    pub ordering: DeliveryOrdering,
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

/// What a destination is sent: `format` of `[[destinations]]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryFormat {
    /// JSON with the message's metadata and JSON rendering.
    #[default]
    Envelope,
    /// The bytes as received, with their content type.
    Raw,
    /// An IDoc as IDoc-XML for SAP's inbound HTTP service.
    SapIdocXml,
    /// The bytes as received, over AS2 to the destination's partner.
    As2,
}

/// How a destination's deliveries are ordered: `ordering` of `[[destinations]]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryOrdering {
    /// Several attempts at once, in any order.
    #[default]
    Parallel,
    /// One delivery in flight across all replicas, in commit order.
    Fifo,
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

#[cfg(test)]
#[path = "delivery_tests.rs"]
mod tests;

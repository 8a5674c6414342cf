//! The sections of the configuration file below the top level: retention,
//! the admin credential, tenants with their environments, message types and
//! webhook integrations. Each field is documented where it is declared;
//! docs/configuration.md is generated from these docs.

use edihub_store::KeyReusePolicy;
use serde::{Deserialize, Serialize};

use super::duration::Window;

/// Retention policies; a `*_days` of 0 keeps those rows forever.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Seconds between retention runs (doubled after each failed run in a
    /// row, up to an hour).
    pub interval_secs: u64,
    /// Most rows one statement releases or deletes.
    pub batch_size: u32,
    /// Messages older than this are deleted (never while their fingerprint still blocks).
    pub messages_days: u32,
    /// Idempotency-Keys and provider event ids older than this are deleted;
    /// a later retry is then caught by the fingerprint alone.
    pub keys_days: u32,
    /// Audit events older than this are deleted.
    pub audit_days: u32,
    /// Milliseconds a run waits after each of its statements (each batch,
    /// and the drop of the expired partitions), so that its work is spread
    /// over seconds instead of taken from the ingest within one (scenario T
    /// in BENCHMARKS.md). At most 10000; 0 runs them back to back.
    pub pause_ms: u64,
    /// Milliseconds the drop of expired partitions (PostgreSQL) waits
    /// between detaching a period's tables' partitions, and after each
    /// period: each detach makes every
    /// connection plan its statements again, and spread apart those bursts
    /// land in different seconds. Longer than `pause_ms` because it is paid once a period, not
    /// once a batch. At most 10000; 0 runs them back to back.
    pub detach_pause_ms: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            interval_secs: 60,
            batch_size: 1000,
            messages_days: 90,
            keys_days: 30,
            audit_days: 365,
            pause_ms: 100,
            detach_pause_ms: 1000,
        }
    }
}

/// The pull feed's bounds (`GET /api/edi-hub/messages`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FeedConfig {
    /// Bytes of envelopes one page holds at most: a page ends early rather
    /// than grow past it, and the stored bodies it reads stay within it too.
    /// Its first message is always on it, so a message whose envelope alone
    /// is larger comes on a page of its own.
    pub page_bytes: usize,
    /// Most messages one read with `message_type` examines: a type that
    /// matches nothing costs one bounded step, and the answer's
    /// `next_cursor` moves past what it examined.
    pub scan_messages: i64,
    /// Memory the pages being rendered at once may take together, as
    /// estimated from their stored bodies (a parsed body takes several
    /// times its size): a read whose estimate does not fit waits for its
    /// turn (within `request_timeout_secs`), and one larger than the whole
    /// budget is rendered alone.
    pub render_budget_bytes: usize,
}

impl Default for FeedConfig {
    fn default() -> Self {
        Self { page_bytes: 8 * 1024 * 1024, scan_messages: 10_000, render_budget_bytes: 256 * 1024 * 1024 }
    }
}

/// The admin credential, stored only as a hash, and the admin search.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// SHA-256 hex of the admin token (Bearer token or Basic password).
    pub token_sha256: String,
    /// Most messages one page of `GET /admin/messages` examines when it
    /// checks a filter row by row (sender, key value, message type,
    /// tenant, environment or Idempotency-Key, without a docnum or
    /// fingerprint): a short page then continues on the next. Bounds every
    /// page's work without an index per filter on every insert.
    #[serde(default = "default_search_scan")]
    pub search_scan_messages: i64,
}

fn default_search_scan() -> i64 {
    edihub_store::SEARCH_SCAN
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self { token_sha256: String::new(), search_scan_messages: default_search_scan() }
    }
}

/// A tenant: one customer or business unit.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// Tenant id, e.g. `acme`.
    pub id: String,
    /// Its environments (`prod`, `qa`, …); data never crosses them.
    pub environments: Vec<EnvironmentConfig>,
}

/// One environment of a tenant.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentConfig {
    /// Environment id, e.g. `prod`.
    pub id: String,
    /// SHA-256 hex digests of the API keys that may send into this environment.
    #[serde(default)]
    pub api_keys_sha256: Vec<String>,
    /// SHA-256 hex digests of the consumer keys that may read this
    /// environment's pull feed (`GET /api/edi-hub/messages`). Kept apart
    /// from the sender keys: a consumer key cannot send, a sender key
    /// cannot read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumer_keys_sha256: Vec<String>,
    /// What a repeated Idempotency-Key with another payload gets:
    /// `reject` (422, the default) or `replay` (the first response). An
    /// EDIFACT/X12 interchange control number reused for other content is
    /// refused either way (see `crate::edi::interchange`).
    #[serde(default)]
    pub on_key_reuse: KeyReusePolicy,
    /// The only message types this environment's API keys may send
    /// (absent: any type no integration of the environment claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_types: Option<Vec<String>>,
    /// Days an EDIFACT / X12 interchange control number blocks a repeat
    /// from the same sender to the same receiver (default 30, or
    /// `retention.keys_days` when that is shorter); a repeat after it is a
    /// new interchange. At most `retention.keys_days`, which keeps the
    /// claims. `interchange_window`, when set, wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interchange_window_days: Option<u32>,
    /// The interchange window with a unit (`2s`, `15m`, `12h`, `7d`); wins
    /// over `interchange_window_days` when both are set. At most
    /// `retention.keys_days` too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interchange_window: Option<String>,
    /// The SAP system this environment exchanges IDocs with (absent: none),
    /// which its `sap-idoc-xml` destinations address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sap: Option<super::SapSystemConfig>,
    /// The interchange window in effect, read from `interchange_window` or
    /// `interchange_window_days` when the configuration is validated (see
    /// [`EnvironmentConfig::interchange_window`]). Never part of the file.
    #[serde(skip, default = "default_interchange")]
    pub(super) resolved_interchange_window: Window,
}

fn default_interchange() -> Window {
    Window::DEFAULT_INTERCHANGE
}

impl EnvironmentConfig {
    /// An environment with nothing set but its id: no keys, no type list,
    /// no SAP system, the default key reuse policy and interchange window.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            api_keys_sha256: Vec::new(),
            consumer_keys_sha256: Vec::new(),
            on_key_reuse: KeyReusePolicy::default(),
            message_types: None,
            interchange_window_days: None,
            interchange_window: None,
            sap: None,
            resolved_interchange_window: Window::DEFAULT_INTERCHANGE,
        }
    }

    /// How long an interchange control number blocks a repeat: the window
    /// the configuration's validation read from this environment's
    /// `interchange_window` or `interchange_window_days` (or its default,
    /// which follows `retention.keys_days`).
    pub fn interchange_window(&self) -> Window {
        self.resolved_interchange_window
    }
}

/// Dedup rules of one message type.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageTypeConfig {
    /// Message type id (`ORDERS05`, `shop.order`).
    pub id: String,
    /// Only for this tenant; absent = global default.
    #[serde(default)]
    pub tenant: Option<String>,
    /// Paths whose values form the fingerprint (IDoc paths or JSONPath);
    /// `["$"]` fingerprints the whole canonical payload.
    #[serde(default)]
    pub duplicate_key_fields: Vec<String>,
    /// Paths removed before a whole-payload fingerprint (volatile fields).
    #[serde(default)]
    pub exclude_fields: Vec<String>,
    /// Dedup window in hours (default 168). `duplicate_window`, when set,
    /// wins over it.
    #[serde(default)]
    pub duplicate_window_hours: Option<u64>,
    /// Dedup window with a unit (`2s`, `15m`, `12h`, `7d`); wins over
    /// `duplicate_window_hours` when both are set.
    #[serde(default)]
    pub duplicate_window: Option<String>,
    /// The parties a fingerprint is taken together with: `["receiver"]`
    /// lets the same document reach two partners, `["sender"]` keeps two
    /// senders' equal numbers apart. Absent or empty: neither, and
    /// fingerprints stay those of the type without a scope.
    #[serde(default)]
    pub fingerprint_scope: Vec<String>,
    /// The dedup window in effect, read from `duplicate_window` or
    /// `duplicate_window_hours` when the configuration is validated (see
    /// [`MessageTypeConfig::window`]). Never part of the file.
    #[serde(skip, default = "default_dedup")]
    pub(super) resolved_window: Window,
}

fn default_dedup() -> Window {
    Window::DEFAULT_DEDUP
}

impl MessageTypeConfig {
    /// A global message type with nothing set but its id: no key fields
    /// (the fingerprint falls back to DOCNUM), no scope, the default window.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            tenant: None,
            duplicate_key_fields: Vec::new(),
            exclude_fields: Vec::new(),
            duplicate_window_hours: None,
            duplicate_window: None,
            fingerprint_scope: Vec::new(),
            resolved_window: Window::DEFAULT_DEDUP,
        }
    }

    /// The dedup window: the one the configuration's validation read from
    /// this type's `duplicate_window` or `duplicate_window_hours` (or the
    /// default, 168 hours).
    pub fn window(&self) -> Window {
        self.resolved_window
    }
}

/// A partner webhook endpoint, `POST /api/webhook/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IntegrationConfig {
    /// Integration id (the URL segment; taken from the path in the admin API).
    #[serde(default)]
    pub id: String,
    /// Tenant the webhooks belong to.
    pub tenant: String,
    /// Environment within the tenant.
    pub environment: String,
    /// Fixed message type.
    #[serde(default)]
    pub message_type: Option<String>,
    /// JSONPath to the message type inside the payload.
    #[serde(default)]
    pub message_type_path: Option<String>,
    /// With `message_type_path`: the only types the payload may name
    /// (absent: any type no other integration of the environment claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_types: Option<Vec<String>>,
    /// Where the provider's event id is: `{ header = "…" }` or `{ path = "$.id" }`.
    #[serde(default)]
    pub event_id: Option<EventIdConfig>,
    /// How requests are signed.
    #[serde(default)]
    pub signature: Option<SignatureConfig>,
    /// Days this integration's event ids are kept (0: forever; absent:
    /// `retention.keys_days`). Providers that sign without a timestamp can
    /// replay an event once its id is purged, so keep ids longer for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id_days: Option<u32>,
}

/// Location of a provider event id.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EventIdConfig {
    /// Header carrying the id.
    #[serde(default)]
    pub header: Option<String>,
    /// JSONPath to the id in the body.
    #[serde(default)]
    pub path: Option<String>,
}

/// Signature verification of an integration.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SignatureConfig {
    /// `standard-webhooks`, `github`, `shopify`, `stripe`, `hmac` or `none`.
    pub scheme: String,
    /// Environment variable holding the secret (never the secret itself).
    #[serde(default)]
    pub secret_env: Option<String>,
    /// Header name, for the generic `hmac` scheme.
    #[serde(default)]
    pub header: Option<String>,
    /// `hex` or `base64`, for the generic `hmac` scheme.
    #[serde(default)]
    pub encoding: Option<String>,
    /// Prefix before the digest (e.g. `sha256=`), for the generic `hmac` scheme.
    #[serde(default)]
    pub prefix: Option<String>,
}

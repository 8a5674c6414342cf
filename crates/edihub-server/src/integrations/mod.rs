//! Partner webhook integrations: what each `POST /api/webhook/{id}` endpoint
//! means (tenant, environment, message type, event id, signature).
//! The HTTP side, the handler and its order of checks, is
//! [`crate::api::webhook`]; this module and its children hold what the
//! handler consults: the registry, the names an integration may use
//! (`names`) and the aggregated audit of refused signatures (`rejections`);
//! the signature schemes are [`crate::signing`]'s.
//!
//! Integrations live in the database (seeded from the config like message
//! types) and are held parsed in memory, reloaded with the message types.
//! Secrets never enter the database: an integration names the environment
//! variable holding its secret, and the secret is read when the registry loads.

pub(crate) mod names;
pub mod rejections;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};
use edihub_core::KeyPath;
use edihub_store::{IntegrationRow, Json, SOURCE_CONFIG, Scope, Store, StoreError};

use crate::config::{Config, IntegrationConfig, SignatureConfig};
use crate::signing::{Encoding, Verifier, standard_webhooks_key};

/// Where an integration's message type comes from.
#[derive(Debug, Clone)]
pub enum TypeSource {
    /// Always this type.
    Fixed(String),
    /// The first value at this path in the payload.
    Path(KeyPath),
}

/// Where the provider's event id is.
#[derive(Debug, Clone)]
pub enum EventIdSource {
    /// A request header (lower-case name).
    Header(String),
    /// A path in the payload.
    Path(KeyPath),
}

/// A parsed, ready-to-use integration.
#[derive(Debug, Clone)]
pub struct Integration {
    /// Its id.
    pub id: String,
    /// Where its messages go.
    pub scope: Scope,
    /// Its message type.
    pub message_type: TypeSource,
    /// Its event id, if the provider sends one.
    pub event_id: Option<EventIdSource>,
    /// Its signature check.
    pub verifier: Verifier,
    /// With a payload type: the only types it may send (see [`crate::producers`]).
    pub allowed_types: Option<Vec<String>>,
    /// Days its event ids are kept, when not `retention.keys_days` (0: forever).
    pub event_id_days: Option<u32>,
}

impl Integration {
    /// Whether this integration claims message type `t` in its environment:
    /// its fixed type, or a type of its list.
    pub fn claims(&self, t: &str) -> bool {
        match &self.message_type {
            TypeSource::Fixed(fixed) => fixed == t,
            TypeSource::Path(_) => self.allowed_types.iter().flatten().any(|a| a == t),
        }
    }
}

/// Builds the verifier of a signature config, reading the secret from the
/// environment. The error names the config key.
pub fn verifier(
    sig: Option<&SignatureConfig>,
    at: &str,
    config: &Config,
) -> Result<Verifier, (String, String)> {
    let Some(sig) = sig else { return Ok(Verifier::None) };
    if sig.scheme == "none" {
        return Ok(Verifier::None);
    }
    let var = sig.secret_env.as_deref().ok_or_else(|| {
        (format!("{at}.signature.secret_env"), format!("scheme `{}` needs a secret", sig.scheme))
    })?;
    crate::config::check_secret_env(var, config)
        .map_err(|reason| (format!("{at}.signature.secret_env"), reason))?;
    let secret = config.secrets.get(var).filter(|s| !s.is_empty()).ok_or_else(|| {
        (format!("{at}.signature.secret_env"), format!("environment variable {var} is not set or empty"))
    })?;
    let bytes = secret.clone().into_bytes();
    Ok(match sig.scheme.as_str() {
        "standard-webhooks" => Verifier::StandardWebhooks {
            key: standard_webhooks_key(&secret).ok_or_else(|| {
                (format!("{at}.signature.secret_env"), format!("{var} is not a whsec_<base64> secret"))
            })?,
        },
        "github" => Verifier::GitHub { secret: bytes },
        "shopify" => Verifier::Shopify { secret: bytes },
        "stripe" => Verifier::Stripe { secret: bytes },
        "hmac" => Verifier::Hmac {
            secret: bytes,
            header: names::header_name(
                sig.header.as_deref().ok_or_else(|| {
                    (format!("{at}.signature.header"), "scheme `hmac` needs a header name".to_string())
                })?,
                &format!("{at}.signature.header"),
            )?,
            encoding: match sig.encoding.as_deref().unwrap_or("hex") {
                "hex" => Encoding::Hex,
                "base64" => Encoding::Base64,
                other => {
                    return Err((
                        format!("{at}.signature.encoding"),
                        format!("`{other}` is not hex or base64"),
                    ));
                }
            },
            prefix: sig.prefix.clone().unwrap_or_default(),
        },
        other => {
            return Err((
                format!("{at}.signature.scheme"),
                format!("unknown scheme `{other}` (standard-webhooks, github, shopify, stripe, hmac, none)"),
            ));
        }
    })
}

fn path(text: &str, key: String) -> Result<KeyPath, (String, String)> {
    KeyPath::parse(text).map_err(|e| (key, e.to_string()))
}

fn type_name(t: &str, key: String) -> Result<String, (String, String)> {
    crate::config::check_type(t).map(str::to_string).map_err(|reason| (key, reason))
}

/// The `message_types` list of a payload-typed integration.
fn allowed_types(def: &IntegrationConfig, at: &str) -> Result<Option<Vec<String>>, (String, String)> {
    let Some(list) = &def.message_types else { return Ok(None) };
    let key = format!("{at}.message_types");
    if def.message_type_path.is_none() {
        return Err((key, "only an integration with message_type_path takes a message_types list".into()));
    }
    if list.is_empty() {
        return Err((key, "name at least one type, or leave the list out".into()));
    }
    let types = list.iter().enumerate().map(|(i, t)| type_name(t, format!("{key}[{i}]")));
    types.collect::<Result<Vec<_>, _>>().map(Some)
}

/// Parses an integration definition; errors name the config key below `at`.
pub fn parse(def: &IntegrationConfig, at: &str, config: &Config) -> Result<Integration, (String, String)> {
    let message_type = match (&def.message_type, &def.message_type_path) {
        (Some(t), None) => TypeSource::Fixed(type_name(t, format!("{at}.message_type"))?),
        (None, Some(p)) => TypeSource::Path(path(p, format!("{at}.message_type_path"))?),
        _ => {
            return Err((
                format!("{at}.message_type"),
                "set exactly one of message_type and message_type_path".into(),
            ));
        }
    };
    let event_id = match &def.event_id {
        None => None,
        Some(e) => match (&e.header, &e.path) {
            (Some(h), None) => {
                Some(EventIdSource::Header(names::header_name(h, &format!("{at}.event_id.header"))?))
            }
            (None, Some(p)) => Some(EventIdSource::Path(path(p, format!("{at}.event_id.path"))?)),
            _ => return Err((format!("{at}.event_id"), "set exactly one of header and path".into())),
        },
    };
    if def.event_id_days.is_some() && event_id.is_none() {
        return Err((format!("{at}.event_id_days"), "the integration has no event_id to keep".into()));
    }
    Ok(Integration {
        id: def.id.clone(),
        scope: Scope::new(&def.tenant, &def.environment),
        message_type,
        event_id,
        verifier: verifier(def.signature.as_ref(), at, config)?,
        allowed_types: allowed_types(def, at)?,
        event_id_days: def.event_id_days,
    })
}

/// The config's integrations as rows to seed.
pub fn seed_rows(config: &Config, now: DateTime<Utc>) -> Vec<IntegrationRow> {
    config
        .integrations
        .iter()
        .map(|i| IntegrationRow {
            id: i.id.clone(),
            tenant_id: i.tenant.clone(),
            environment_id: i.environment.clone(),
            definition: Json(serde_json::to_value(i).unwrap_or_default()),
            source: SOURCE_CONFIG.to_string(),
            updated_at: now,
        })
        .collect()
}

/// The integrations by id, and the message types each claims.
#[derive(Debug, Default)]
pub struct Registry {
    by_id: RwLock<HashMap<String, Arc<Integration>>>,
}

impl Registry {
    /// Replaces the integrations with the database's rows; an unusable row
    /// is logged and left out (its endpoint answers 404 until fixed).
    pub async fn reload(&self, store: &dyn Store, config: &Config) -> Result<usize, StoreError> {
        let rows = store.list_integrations().await?;
        let mut map = HashMap::with_capacity(rows.len());
        for row in rows {
            let parsed = serde_json::from_value::<IntegrationConfig>(row.definition.0.clone())
                .map_err(|e| ("definition".to_string(), e.to_string()))
                .and_then(|def| parse(&def, &format!("integrations.{}", row.id), config));
            match parsed {
                Ok(i) => {
                    map.insert(row.id.clone(), Arc::new(i));
                }
                Err((key, reason)) => {
                    tracing::error!(integration = %row.id, %key, %reason, "unusable integration")
                }
            }
        }
        let n = map.len();
        *self.by_id.write().unwrap_or_else(|p| p.into_inner()) = map;
        Ok(n)
    }

    /// The integration with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Integration>> {
        self.by_id.read().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// An integration other than `except` that claims type `t` in `scope`.
    /// The first by id, so the answer does not depend on map order.
    pub fn claimant(&self, scope: &Scope, t: &str, except: Option<&str>) -> Option<String> {
        let by_id = self.by_id.read().unwrap_or_else(|p| p.into_inner());
        by_id
            .values()
            .filter(|i| i.scope == *scope && Some(i.id.as_str()) != except && i.claims(t))
            .map(|i| i.id.as_str())
            .min()
            .map(str::to_string)
    }

    /// Every integration, for retention's per-integration periods.
    pub fn all(&self) -> Vec<Arc<Integration>> {
        self.by_id.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }
}

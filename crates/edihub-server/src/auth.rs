//! Credentials and the extractors that enforce them.
//!
//! The configuration holds only SHA-256 digests of API keys and of the admin
//! token. A presented secret is hashed and looked up by its digest: the lookup
//! compares digests of the attacker's input, which leaks nothing about the
//! stored keys; the admin digest is compared in constant time. Senders may use
//! `Authorization: Bearer <key>` or HTTP Basic with the key as the password,
//! because SAP HTTP destinations only speak Basic. Consumer keys (the pull
//! feed's) are presented the same way; each kind of key opens only its own
//! routes, and the other kind is answered 403 saying which key is needed.
//!
//! The extractors take the credentials from any router state that holds
//! them (`AsRef<Credentials>`), so this file does not depend on the state.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use edihub_store::{KeyReusePolicy, Scope};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{Config, Window};
use crate::error::ApiError;

/// Who a sender key belongs to.
#[derive(Debug, Clone)]
pub struct SenderIdentity {
    /// The environment the key sends into.
    pub scope: Scope,
    /// The environment's policy for a reused Idempotency-Key.
    pub on_key_reuse: KeyReusePolicy,
    /// The only message types the environment's keys may send, if listed.
    pub message_types: Option<Vec<String>>,
    /// How long an interchange control number blocks a repeat.
    pub interchange_window: Window,
}

impl SenderIdentity {
    /// What sending into environment `e` of tenant `t` (indexes into the
    /// configuration) allows: what its API keys, and the AS2 partners of a
    /// station receiving into it, send as.
    pub fn of_environment(config: &Config, t: usize, e: usize) -> SenderIdentity {
        let (tenant, env) = (&config.tenants[t], &config.tenants[t].environments[e]);
        SenderIdentity {
            scope: Scope::new(&tenant.id, &env.id),
            on_key_reuse: env.on_key_reuse,
            message_types: env.message_types.clone(),
            interchange_window: env.interchange_window(),
        }
    }

    /// As [`SenderIdentity::of_environment`], by the ids.
    pub fn of_scope(config: &Config, tenant: &str, environment: &str) -> Option<SenderIdentity> {
        let t = config.tenants.iter().position(|x| x.id == tenant)?;
        let e = config.tenants[t].environments.iter().position(|x| x.id == environment)?;
        Some(Self::of_environment(config, t, e))
    }
}

/// All credentials, by digest.
#[derive(Debug, Default)]
pub struct Credentials {
    senders: HashMap<[u8; 32], Arc<SenderIdentity>>,
    /// Consumer keys: the environment whose feed each may read.
    consumers: HashMap<[u8; 32], Arc<Scope>>,
    admin: [u8; 32],
}

fn digest_from_hex(hex_text: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    // Validation already guaranteed 64 hex characters.
    let _ = hex::decode_to_slice(hex_text, &mut out);
    out
}

impl Credentials {
    /// Builds the lookup tables from a validated configuration.
    pub fn from_config(config: &Config) -> Self {
        let mut senders = HashMap::new();
        let mut consumers = HashMap::new();
        for (t, tenant) in config.tenants.iter().enumerate() {
            for (e, env) in tenant.environments.iter().enumerate() {
                let scope = Arc::new(Scope::new(&tenant.id, &env.id));
                for key in &env.consumer_keys_sha256 {
                    consumers.insert(digest_from_hex(key), scope.clone());
                }
                let identity = Arc::new(SenderIdentity::of_environment(config, t, e));
                for key in &env.api_keys_sha256 {
                    senders.insert(digest_from_hex(key), identity.clone());
                }
            }
        }
        Self { senders, consumers, admin: digest_from_hex(&config.admin.token_sha256) }
    }

    fn sender(&self, secret: &str) -> Result<Arc<SenderIdentity>, ApiError> {
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        if let Some(identity) = self.senders.get(&digest) {
            return Ok(identity.clone());
        }
        if self.consumers.contains_key(&digest) {
            return Err(ApiError::Forbidden(
                "this is a consumer key: it reads the environment's feed (GET /api/edi-hub/messages) and cannot send; send with a sender key".into(),
            ));
        }
        Err(ApiError::Unauthorized("the API key is not valid".into()))
    }

    fn consumer(&self, secret: &str) -> Result<Arc<Scope>, ApiError> {
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        if let Some(scope) = self.consumers.get(&digest) {
            return Ok(scope.clone());
        }
        if self.senders.contains_key(&digest) {
            return Err(ApiError::Forbidden(
                "this is a sender key: it cannot read the feed; use a consumer key of the environment (consumer_keys_sha256)".into(),
            ));
        }
        Err(ApiError::Unauthorized("the consumer key is not valid".into()))
    }

    pub(crate) fn is_admin(&self, secret: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        bool::from(digest.ct_eq(&self.admin))
    }
}

/// The secret of a Bearer or Basic `Authorization` header.
pub(crate) fn presented_secret(parts: &Parts) -> Result<String, ApiError> {
    let missing = || {
        ApiError::Unauthorized("credentials are missing: send Authorization: Bearer <key> or Basic".into())
    };
    // Two credentials would make the sender depend on which one counts.
    if parts.headers.get_all(AUTHORIZATION).iter().nth(1).is_some() {
        return Err(ApiError::BadRequest("the authorization header is repeated; send it once".into()));
    }
    let value = parts.headers.get(AUTHORIZATION).ok_or_else(missing)?;
    let value =
        value.to_str().map_err(|_| ApiError::Unauthorized("the Authorization header is not ASCII".into()))?;
    let (scheme, rest) = value.trim().split_once(' ').ok_or_else(missing)?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") && !rest.is_empty() {
        return Ok(rest.to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                ApiError::Unauthorized("the Basic credentials are not valid base64 user:password".into())
            })?;
        if let Some((_, password)) = decoded.split_once(':')
            && !password.is_empty()
        {
            return Ok(password.to_string());
        }
        return Err(ApiError::Unauthorized("the Basic credentials carry no password".into()));
    }
    Err(missing())
}

/// A request authenticated with a sender API key.
#[derive(Debug, Clone)]
pub struct Sender(pub Arc<SenderIdentity>);

impl<S: AsRef<Credentials> + Send + Sync> FromRequestParts<S> for Sender {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let secret = presented_secret(parts)?;
        state.as_ref().sender(&secret).map(Sender)
    }
}

/// A request authenticated with a consumer key: the environment whose
/// pull feed it reads.
#[derive(Debug, Clone)]
pub struct Consumer(pub Arc<Scope>);

impl<S: AsRef<Credentials> + Send + Sync> FromRequestParts<S> for Consumer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let secret = presented_secret(parts)?;
        state.as_ref().consumer(&secret).map(Consumer)
    }
}

/// A request authenticated with the admin token.
#[derive(Debug, Clone, Copy)]
pub struct Admin;

impl<S: AsRef<Credentials> + Send + Sync> FromRequestParts<S> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let secret = presented_secret(parts)?;
        if state.as_ref().is_admin(&secret) {
            Ok(Admin)
        } else {
            Err(ApiError::Unauthorized("the admin credential is not valid".into()))
        }
    }
}

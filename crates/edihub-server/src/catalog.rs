//! Message type rules in memory, loaded from the database.
//!
//! The database is the source of truth (admins edit it, the config seeds it);
//! every request needs the rules, so each process keeps a parsed copy and
//! reloads it on a timer and right after a local change. Lookup order for a
//! tenant: its own row, then the global row, then the built-in default
//! (fingerprint over the sender-scoped DOCNUM, one-week window).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};
use edihub_core::{FingerprintScope, FingerprintSpec, KeyPath};
use edihub_store::{GLOBAL_TENANT, MessageTypeRow, SOURCE_CONFIG, Store, StoreError};

use crate::config::{Config, Window};

/// The parsed rules of one message type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRule {
    /// Paths whose values form the fingerprint.
    pub key_fields: Vec<KeyPath>,
    /// Paths removed before a whole-payload fingerprint.
    pub exclude_fields: Vec<KeyPath>,
    /// Dedup window in seconds.
    pub window_seconds: i64,
    /// The parties the fingerprint is taken together with.
    pub scope: FingerprintScope,
}

impl Default for TypeRule {
    fn default() -> Self {
        Self {
            key_fields: Vec::new(),
            exclude_fields: Vec::new(),
            window_seconds: Window::DEFAULT_DEDUP.seconds(),
            scope: FingerprintScope::NONE,
        }
    }
}

impl TypeRule {
    /// What the fingerprint of a `message_type` message is computed with
    /// under this rule (the intake and `edihub fingerprint` alike).
    pub fn spec<'a>(&'a self, message_type: &'a str) -> FingerprintSpec<'a> {
        FingerprintSpec {
            message_type,
            key_fields: &self.key_fields,
            exclude_fields: &self.exclude_fields,
            scope: self.scope,
        }
    }
}

/// Rules by tenant (`""` for global) and then type id: two levels, so a
/// lookup borrows its `&str` keys instead of building a key per request.
type Rules = HashMap<String, HashMap<String, Arc<TypeRule>>>;

/// All rules, keyed by tenant (or `""`) and type id.
#[derive(Debug, Default)]
pub struct Catalog {
    rules: RwLock<Rules>,
}

/// A stored scope; an unreadable one is logged and the row left out, like
/// an invalid path, so a message is never fingerprinted under a rule other
/// than the one configured.
fn parse_scope(row: &MessageTypeRow) -> Option<FingerprintScope> {
    FingerprintScope::parse(&row.fingerprint_scope.0)
        .inspect_err(|e| {
            tracing::error!(tenant = %row.tenant_id, message_type = %row.id, error = %e,
                "stored message type has an invalid fingerprint scope; using the default rule");
        })
        .ok()
}

fn parse_paths(row: &MessageTypeRow, paths: &[String]) -> Option<Vec<KeyPath>> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        match KeyPath::parse(p) {
            Ok(kp) => out.push(kp),
            Err(e) => {
                tracing::error!(tenant = %row.tenant_id, message_type = %row.id, path = %p, error = %e,
                    "stored message type has an invalid path; using the default rule");
                return None;
            }
        }
    }
    Some(out)
}

impl Catalog {
    /// Replaces the rules with the database's current rows.
    pub async fn reload(&self, store: &dyn Store) -> Result<usize, StoreError> {
        Ok(self.replace(&store.list_message_types().await?))
    }

    /// Replaces the rules with `rows` (rows with invalid paths are logged and
    /// left out); returns how many rules were loaded.
    pub fn replace(&self, rows: &[MessageTypeRow]) -> usize {
        let mut map = Rules::new();
        let mut n = 0;
        for row in rows {
            let (Some(key_fields), Some(exclude_fields), Some(scope)) = (
                parse_paths(row, &row.duplicate_key_fields.0),
                parse_paths(row, &row.exclude_fields.0),
                parse_scope(row),
            ) else {
                continue;
            };
            let rule =
                TypeRule { key_fields, exclude_fields, window_seconds: row.duplicate_window_seconds, scope };
            map.entry(row.tenant_id.clone()).or_default().insert(row.id.clone(), Arc::new(rule));
            n += 1;
        }
        *self.rules.write().unwrap_or_else(|p| p.into_inner()) = map;
        n
    }

    fn find(rules: &Rules, tenant: &str, message_type: &str) -> Option<Arc<TypeRule>> {
        rules
            .get(tenant)
            .and_then(|types| types.get(message_type))
            .or_else(|| rules.get(GLOBAL_TENANT).and_then(|types| types.get(message_type)))
            .cloned()
    }

    /// The rule for `message_type` as seen by `tenant`.
    pub fn rule(&self, tenant: &str, message_type: &str) -> Arc<TypeRule> {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        Self::find(&rules, tenant, message_type).unwrap_or_default()
    }

    /// Whether `tenant` (or the global defaults) configures `message_type`.
    pub fn is_configured(&self, tenant: &str, message_type: &str) -> bool {
        let rules = self.rules.read().unwrap_or_else(|p| p.into_inner());
        Self::find(&rules, tenant, message_type).is_some()
    }
}

/// The config's message types as rows to seed.
pub fn seed_rows(config: &Config, now: DateTime<Utc>) -> Vec<MessageTypeRow> {
    config
        .message_types
        .iter()
        .map(|mt| MessageTypeRow {
            tenant_id: mt.tenant.clone().unwrap_or_default(),
            id: mt.id.clone(),
            duplicate_key_fields: sqlx_json(mt.duplicate_key_fields.clone()),
            exclude_fields: sqlx_json(mt.exclude_fields.clone()),
            duplicate_window_seconds: mt.window().seconds(),
            fingerprint_scope: sqlx_json(mt.fingerprint_scope.clone()),
            source: SOURCE_CONFIG.to_string(),
            updated_at: now,
        })
        .collect()
}

fn sqlx_json(v: Vec<String>) -> edihub_store::Json<Vec<String>> {
    edihub_store::Json(v)
}

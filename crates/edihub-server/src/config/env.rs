//! Environment overrides: which `EDIHUB_*` variables are configuration, and
//! where the effective database URL came from.
//!
//! Unknown keys *in the file* are errors: they are typos. Unknown `EDIHUB_*`
//! variables are not: container images and deployment tools set variables
//! such as `EDIHUB_HOME` or `EDIHUB_VERSION` that were never meant for the
//! hub, and refusing to start over them would take the service down for
//! nothing. They are left out of the configuration and reported, so the
//! binary can log one warning per variable, naming it.
//!
//! `DATABASE_URL` silently winning over the file is a common convention but a
//! puzzle for someone who edits the file and sees no effect, so loading also
//! records which source gave the database URL, for the start-up log.

use std::collections::BTreeSet;
use std::fmt;

use figment::Figment;
use figment::providers::Env;

use super::Config;

/// `EDIHUB_*` variables the binary reads itself; they are not configuration keys.
const OWN_VARIABLES: &[&str] = &["CONFIG", "LOG", "TEST_DATABASE_URL", "TEST_POOLER_URL", "URL", "KEY"];

/// `EDIHUB_SECRET_*` variables hold webhook secrets (the default
/// `webhook_secret_prefix`): never settings, and never worth a warning.
const SECRET_PREFIX: &str = "SECRET_";

/// Whether `EDIHUB_<key>` is read by the binary or holds a secret.
fn is_own(key: &str) -> bool {
    OWN_VARIABLES.contains(&key) || key.to_ascii_uppercase().starts_with(SECRET_PREFIX)
}

/// Where the effective `database_url` came from, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DatabaseUrlSource {
    /// Nothing set it: the built-in SQLite default.
    #[default]
    Default,
    /// `database_url` in the configuration file.
    File,
    /// The conventional `DATABASE_URL` variable.
    DatabaseUrl,
    /// `EDIHUB_DATABASE_URL`, which wins over everything.
    EdihubDatabaseUrl,
}

impl fmt::Display for DatabaseUrlSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DatabaseUrlSource::Default => "built-in default",
            DatabaseUrlSource::File => "config file",
            DatabaseUrlSource::DatabaseUrl => "DATABASE_URL",
            DatabaseUrlSource::EdihubDatabaseUrl => "EDIHUB_DATABASE_URL",
        })
    }
}

/// What loading noticed that an operator should see in the start-up log.
#[derive(Debug, Clone, Default)]
pub struct LoadNotes {
    /// Unknown `EDIHUB_*` variables that were ignored, by name, sorted.
    pub ignored_env: Vec<String>,
    /// Which source gave `database_url`.
    pub database_url_source: DatabaseUrlSource,
}

/// Adds the environment overrides to `fig` (after the file): `DATABASE_URL`,
/// then every `EDIHUB_<KEY>` that names a configuration key. Returns the
/// figure and the names of the `EDIHUB_*` variables that were left out.
pub(super) fn merge_overrides(fig: Figment) -> (Figment, Vec<String>) {
    let known = known_keys();
    let is_key = move |name: &str| known.contains(&name.to_ascii_lowercase());
    let ignored = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.strip_prefix("EDIHUB_").is_some_and(|key| !is_own(key) && !is_key(key)))
        .collect::<BTreeSet<_>>();
    let env =
        Env::prefixed("EDIHUB_").filter(move |key| !is_own(key.as_str()) && is_key(key.as_str())).split("__");
    let fig = fig.merge(Env::raw().only(&["DATABASE_URL"])).merge(env);
    (fig, ignored.into_iter().collect())
}

/// Which source gave `database_url` in `fig` (the same order the figure merges in).
pub(super) fn database_url_source(fig: &Figment) -> DatabaseUrlSource {
    let set = |name: &str| std::env::var_os(name).is_some();
    if set("EDIHUB_DATABASE_URL") {
        DatabaseUrlSource::EdihubDatabaseUrl
    } else if set("DATABASE_URL") {
        DatabaseUrlSource::DatabaseUrl
    } else if fig
        .find_metadata("database_url")
        .is_some_and(|m| m.source.as_ref().is_some_and(|s| s.file_path().is_some()))
    {
        DatabaseUrlSource::File
    } else {
        DatabaseUrlSource::Default
    }
}

/// Every key an `EDIHUB_` variable may set, lower case, nested parts joined
/// with `__` (`listen`, `retention__keys_days`, `admin__token_sha256`): the
/// members of the default configuration, so a new field is known at once.
fn known_keys() -> BTreeSet<String> {
    let Ok(serde_json::Value::Object(top)) = serde_json::to_value(Config::default()) else {
        return BTreeSet::new();
    };
    let mut keys = BTreeSet::new();
    for (name, value) in top {
        if let serde_json::Value::Object(nested) = &value {
            keys.extend(nested.keys().map(|child| format!("{name}__{child}")));
        }
        keys.insert(name);
    }
    keys
}

//! The one error of loading and validating a configuration: the key that
//! cannot be used and why, so an operator can fix the file without reading
//! code.

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config key `{key}`: {reason}")]
pub struct ConfigError {
    /// The key, e.g. `tenants[0].environments[1].api_keys_sha256[0]`.
    pub key: String,
    /// Why it was refused.
    pub reason: String,
}

impl ConfigError {
    /// An error about `key`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into() }
    }

    /// A value the file's types cannot hold, named as the validation names
    /// keys: figment's path `destinations.0.ordering` is the key
    /// `destinations[0].ordering`.
    pub(super) fn from_figment(e: figment::Error) -> Self {
        let mut key = String::new();
        for part in &e.path {
            if part.parse::<usize>().is_ok() {
                key.push_str(&format!("[{part}]"));
            } else {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(part);
            }
        }
        if key.is_empty() {
            key.push_str("(file)");
        }
        Self::new(key, e.kind.to_string())
    }
}

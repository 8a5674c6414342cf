//! Where webhook secrets come from. The configuration names the variable
//! that holds a secret, never the secret: production reads the process
//! environment, tests pass a fixed map, and commands that verify no
//! signature read nothing at all.

/// The source of integration secrets, looked up by variable name.
#[derive(Clone, Default)]
pub enum SecretSource {
    /// The process environment (production).
    #[default]
    Environment,
    /// A fixed map of variable name to secret (tests, embedding).
    Fixed(std::collections::HashMap<String, String>),
    /// Secrets are not read: for commands that verify no signature
    /// (`edihub fingerprint`). Validation checks everything but the secrets'
    /// presence; every lookup finds nothing, so an integration built from
    /// this source is refused, never left unsigned.
    Unread,
}

impl SecretSource {
    /// The secret held by variable `name`.
    pub fn get(&self, name: &str) -> Option<String> {
        match self {
            SecretSource::Environment => std::env::var(name).ok(),
            SecretSource::Fixed(map) => map.get(name).cloned(),
            SecretSource::Unread => None,
        }
    }
}

impl std::fmt::Debug for SecretSource {
    // Names only: secret values never reach a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Environment => f.write_str("Environment"),
            SecretSource::Fixed(map) => f.debug_set().entries(map.keys()).finish(),
            SecretSource::Unread => f.write_str("Unread"),
        }
    }
}

//! The credentials a destination's definition names, read from the secret
//! source: its Standard Webhooks signing key and its HTTP Basic password.
//! Validation reads them so a missing or malformed secret stops the start
//! naming its key; the delivery worker reads them again when it takes a
//! destination up.

use super::delivery::{DeliveryBasicAuth, DeliverySignatureConfig};
use super::names::check_secret_env;
use super::root::Config;
use super::secrets::SecretSource;
use crate::signing::standard_webhooks_key;

/// The signing key a destination's signature names: `Ok(None)` when
/// secrets are not read (validation of commands that deliver nothing).
pub fn signing_key(sig: &DeliverySignatureConfig, config: &Config) -> Result<Option<Vec<u8>>, String> {
    check_secret_env(&sig.secret_env, config)?;
    if matches!(config.secrets, SecretSource::Unread) {
        return Ok(None);
    }
    let var = &sig.secret_env;
    let secret = config
        .secrets
        .get(var)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("environment variable {var} is not set or empty"))?;
    standard_webhooks_key(&secret).map(Some).ok_or_else(|| format!("{var} is not a whsec_<base64> secret"))
}

/// The password `auth` names: `Ok(None)` when secrets are not read
/// (validation of commands that deliver nothing).
pub fn basic_password(auth: &DeliveryBasicAuth, config: &Config) -> Result<Option<String>, String> {
    check_secret_env(&auth.password_env, config)?;
    if matches!(config.secrets, SecretSource::Unread) {
        return Ok(None);
    }
    let var = &auth.password_env;
    let password = config.secrets.get(var).filter(|s| !s.is_empty());
    password.map(Some).ok_or_else(|| format!("environment variable {var} is not set or empty"))
}

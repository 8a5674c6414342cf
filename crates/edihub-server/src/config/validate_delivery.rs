//! Start-up validation of `[delivery]` and `[[destinations]]`: the
//! schedule, and each destination's scope, URL, credentials, format and
//! signature. Each rule names the offending key.

use super::credentials::{basic_password, signing_key};
use super::delivery::MAX_IN_FLIGHT;
use super::duration::parse_delay;
use super::names::{check_id, check_type};
use super::{Config, ConfigError, DeliveryFormat, DestinationConfig};
use crate::delivery::AddressPolicy;

impl Config {
    /// The workers' schedule and every destination.
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
        AddressPolicy::of(&self.delivery)
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
            check_type(t).map_err(|reason| ConfigError::new(format!("{at}.message_types[{k}]"), reason))?;
        }
        self.validate_as2_destination(d, at)?;
        if d.format == DeliveryFormat::SapIdocXml && self.sap_system(&d.tenant, &d.environment).is_none() {
            return Err(ConfigError::new(
                format!("{at}.format"),
                format!(
                    "`sap-idoc-xml` needs the SAP system of {}/{}: set tenants[].environments[].sap",
                    d.tenant, d.environment
                ),
            ));
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
            signing_key(sig, self).map_err(|r| ConfigError::new(format!("{at}.signature.secret_env"), r))?;
        }
        Ok(())
    }

    /// A destination's `as2_partner`: given exactly for `format = "as2"`,
    /// a partner of a station of the destination's tenant environment, one
    /// that answers synchronously (a delivery is judged by the MDN in the
    /// HTTP answer).
    fn validate_as2_destination(&self, d: &DestinationConfig, at: &str) -> Result<(), ConfigError> {
        let key = format!("{at}.as2_partner");
        let Some(id) = &d.as2_partner else {
            if d.format == DeliveryFormat::As2 {
                return Err(ConfigError::new(key, "`as2` needs the partner's AS2 id"));
            }
            return Ok(());
        };
        if d.format != DeliveryFormat::As2 {
            return Err(ConfigError::new(key, "is only for format = \"as2\""));
        }
        let partner =
            self.as2.partners.iter().find(|p| {
                &p.as2_id == id
                    && self.as2.stations.iter().any(|s| {
                        s.as2_id == p.station && s.tenant == d.tenant && s.environment == d.environment
                    })
            });
        match partner {
            None => Err(ConfigError::new(
                key,
                format!("no partner `{id}` of a station of {}/{} in as2.partners", d.tenant, d.environment),
            )),
            Some(p) if p.mdn != "sync" => Err(ConfigError::new(
                key,
                format!(
                    "partner `{id}` answers with an asynchronous MDN; a destination needs mdn = \"sync\""
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}

//! A destination as the worker holds it: its definition with its
//! credentials read and its target resolved. The supervisor builds it, an
//! attempt reads it.

use super::as2_target::As2Target;
use super::sap_body::SapTarget;
use crate::config::DestinationConfig;

/// A destination ready to deliver to.
#[derive(Debug)]
pub(crate) struct Destination {
    /// Its definition.
    pub def: DestinationConfig,
    /// The Standard Webhooks key, when signed.
    pub key: Option<Vec<u8>>,
    /// The HTTP Basic user and password, when it has `basic_auth`.
    pub basic: Option<(String, String)>,
    /// The URL posted to: the definition's, with `sap-client` for a
    /// `sap-idoc-xml` destination.
    pub url: String,
    /// A `sap-idoc-xml` destination's SAP system.
    pub sap: Option<SapTarget>,
    /// An `as2` destination's station and partner.
    pub as2: Option<As2Target>,
}

//! Shared state of the HTTP layer.

use std::ops::Deref;
use std::sync::Arc;

use edihub_core::IdocDescriptions;
use edihub_store::Store;

use crate::api::feed::cursor::Cursors;
use crate::api::feed::render::RenderBudget;
use crate::api::feed::signal::FeedSignal;
use crate::auth::Credentials;
use crate::catalog::Catalog;
use crate::config::Config;
use crate::ingest::BodyBudget;
use crate::integrations::Registry;
use crate::integrations::rejections::Rejections;
use crate::metrics::Metrics;
use crate::sap_status::StatusSignal;

/// Cheap to clone; everything a handler needs.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Inner>);

/// The contents of [`AppState`].
#[derive(Debug)]
pub struct Inner {
    /// The database.
    pub store: Arc<dyn Store>,
    /// The validated configuration.
    pub config: Config,
    /// API keys and the admin token, by digest.
    pub credentials: Credentials,
    /// Message type rules, refreshed from the database.
    pub catalog: Catalog,
    /// Webhook integrations, refreshed from the database.
    pub integrations: Registry,
    /// Prometheus counters.
    pub metrics: Metrics,
    /// Large bodies of authenticated senders being processed (`max_inflight_body_bytes`).
    pub body_budget: BodyBudget,
    /// Large webhook bodies being read and verified
    /// (`max_inflight_webhook_body_bytes`, shared per client address).
    pub webhook_body_budget: BodyBudget,
    /// Refused webhook signatures not yet written to the audit log.
    pub rejections: Rejections,
    /// Wakes the pull feed's waiting requests when messages are stored.
    pub feed: FeedSignal,
    /// Wakes the SAP status batchers when status changes were recorded.
    pub sap_status: StatusSignal,
    /// The memory the feed's pages being rendered share (`feed.render_budget_bytes`).
    pub render_budget: RenderBudget,
    /// The key that seals feed cursors, read from the database on first use.
    pub cursors: Cursors,
    /// The IDoc types described by `idoc_descriptions`, for flat files.
    pub idoc_descriptions: Arc<IdocDescriptions>,
    /// AS2 stations and partners of the `[as2]` section, keys read.
    pub as2: crate::as2::Registry,
    /// Wakes the sender of asynchronous AS2 MDNs when one is due.
    pub as2_mdns: Arc<tokio::sync::Notify>,
    /// Envelopes the receive route renders for the delivery worker's first
    /// attempts (`delivery.handoff_bytes`, see `delivery::handoff`).
    pub handoff: crate::delivery::Handoff,
}

impl AppState {
    /// Builds the state; call [`AppState::reload`] before serving.
    pub fn new(
        store: Arc<dyn Store>,
        config: Config,
        idoc_descriptions: IdocDescriptions,
        as2: crate::as2::Registry,
    ) -> Self {
        let credentials = Credentials::from_config(&config);
        Self(Arc::new(Inner {
            store,
            credentials,
            catalog: Catalog::default(),
            integrations: Registry::default(),
            metrics: Metrics::default(),
            body_budget: BodyBudget::new(config.max_inflight_body_bytes),
            webhook_body_budget: BodyBudget::shared_per_address(
                config.max_inflight_webhook_body_bytes,
                config.max_inflight_webhook_body_bytes_per_address,
            ),
            rejections: Rejections::default(),
            feed: FeedSignal::default(),
            sap_status: StatusSignal::default(),
            render_budget: RenderBudget::new(config.feed.render_budget_bytes),
            cursors: Cursors::default(),
            idoc_descriptions: Arc::new(idoc_descriptions),
            as2,
            as2_mdns: Arc::new(tokio::sync::Notify::new()),
            handoff: crate::delivery::Handoff::new(config.delivery.handoff_bytes),
            config,
        }))
    }
}

impl AppState {
    /// Reloads message types and integrations from the database.
    pub async fn reload(&self) -> Result<(), edihub_store::StoreError> {
        self.catalog.reload(self.store.as_ref()).await?;
        self.integrations.reload(self.store.as_ref(), &self.config).await?;
        Ok(())
    }
}

/// What the credential extractors of [`crate::auth`] read.
impl AsRef<Credentials> for AppState {
    fn as_ref(&self) -> &Credentials {
        &self.credentials
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

//! The edihub HTTP API as a library: the binary and the tests build the same
//! [`router`] and run it with [`serve()`] on a listener and a shutdown token they
//! own, so tests can drive the real application on a port-0 listener or
//! in-process.
//!
//! # Layout
//!
//! This crate speaks HTTP and holds the configuration; parsing and
//! fingerprints are `edihub-core`'s, every dedup decision is the store's
//! (`edihub-store`). A request goes `serve` → `telemetry` → `admin_http` →
//! a handler in `api` or `console` → `ingest` → the store, and comes back
//! through `error` when it fails. Folders name concepts; each has a `//!`
//! saying what it holds.
//!
//! Starting and serving
//! - `lib.rs` (here): [`routes()`], [`router`], [`prepare`] (open, migrate,
//!   seed) and [`serve()`] (the server and its background tasks).
//! - [`config`]: the typed configuration, TOML plus `EDIHUB_*` overrides,
//!   validated at start naming the key (`sections` holds the file's tables).
//! - [`state`]: [`AppState`], what every handler shares.
//! - [`serve`](mod@serve): the accept loop with connection caps and the header-read
//!   timeout that `axum::serve` lacks.
//! - [`telemetry`]: request id, log line, request metrics and timeout per request.
//! - [`retention`]: the background task that releases windows and purges old rows.
//! - [`sap_status`]: status back to SAP (which IDocs owe their sender a
//!   status, and the batcher that sends it as status IDocs).
//!
//! HTTP for programs: [`api`]
//! - [`api::receive`]: `POST /api/edi-hub/receive-message` (senders).
//! - [`api::webhook`]: `POST /api/webhook/{id}` (partners), with its order
//!   of checks.
//! - [`api::feed`]: `GET /api/edi-hub/messages` (consumers), the pull feed,
//!   its cursor and its long poll.
//! - [`api::admin`]: the admin API's JSON resources (audit, messages, rules,
//!   destinations, deliveries).
//! - [`api::health`], [`api::openapi`]; [`api::doc`]: the OpenAPI document's
//!   fixed parts and schemas, each documented error answer defined once.
//!
//! HTTP for people: [`console`]
//! - [`console::pages`]: the overview and the HTML faces of the admin
//!   resources; [`console::layout`]: what every page shares.
//! - [`console::forms`]: the state-changing forms and their anti-forgery
//!   tokens; [`console::activity_rollup`]: the overview's counts rolled up
//!   in the background, so showing it only reads.
//!
//! What every route shares
//! - [`error`]: [`error::ApiError`], the one mapping from failures to
//!   `application/problem+json`.
//! - [`extract`]: path and query extractors whose rejections are problem documents.
//! - [`auth`]: API keys and the admin credential, as extractors.
//! - [`admin_http`]: rules every `/admin` route follows (no caching, CSP,
//!   no cross-site writes).
//!
//! Ingesting
//! - [`ingest`]: what both ingest routes share: reading a body within its
//!   budget (`body`), header checks, building the messages, handing them to
//!   the store ([`ingest::submit`]) and the JSON answer (`response`).
//! - [`edi`]: what EDIFACT / X12 interchanges add (their claim and envelope,
//!   their acknowledgements).
//! - [`catalog`]: message type rules (key fields, windows) held in memory.
//! - [`producers`]: who may send which message type.
//! - [`integrations`]: what each webhook integration is (type, event id,
//!   signature scheme) and the aggregated audit of refused signatures
//!   (`rejections`).
//! - [`signing`]: webhook signatures both ways, the schemes partners'
//!   requests are checked with and the signature deliveries carry.
//! - [`metrics`]: the Prometheus counters behind `GET /metrics`.
//!
//! AS2
//! - [`as2`]: the AS2 protocol (RFC 4130): MIME entities, CMS signatures,
//!   encryption and compression, MICs, MDNs built and read, opening a
//!   partner's message and building one to it, and the stations and
//!   partner profiles of the `[as2]` configuration section.
//! - [`api::as2`]: `POST /as2`, partners' AS2 messages answered with MDNs;
//!   [`ingest::as2`]: their payloads through the intake;
//!   [`delivery::as2_mdn`]: the sender of asynchronous MDNs;
//!   [`api::admin::as2`]: the messages received.
//!
//! Delivering
//! - [`delivery`]: the worker that pushes stored messages to their
//!   destinations: which claim it makes (`claim`), one HTTP attempt
//!   (`attempt`), the envelope it sends and the feed lists (`envelope`),
//!   the bodies it reads once per packet (`bodies`), the retry schedule
//!   (`schedule`), the verdicts written in batches (`recorder`), and the
//!   asynchronous AS2 MDNs posted with the same client and schedule
//!   (`as2_mdn`).
//!
//! Tests
//! - `tests/api/`: the HTTP tests, one binary with a module per area;
//!   `tests/api/support/` is their harness (the typed `TestConfig`, the
//!   in-process app on either backend, the live server, raw HTTP, webhook
//!   signing, bursts). `tests/as2/` checks AS2 against pyas2lib and the
//!   `openssl cms` command. Unit tests sit beside their code (`config/tests.rs`).
//!
//! Imports between files form no circle of more than two files
//! (`scripts/import-cycles.py`, run by `make lint`): configuration is read
//! by everyone and reads no one.

pub mod admin_http;
pub mod api;
pub mod as2;
pub mod auth;
pub mod catalog;
pub mod config;
pub mod console;
pub mod delivery;
pub mod edi;
pub mod error;
pub mod extract;
pub mod ingest;
pub mod integrations;
pub mod metrics;
pub mod producers;
pub mod retention;
pub mod sap_status;
pub mod serve;
pub mod signing;
pub mod state;
pub mod telemetry;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::Response;
use edihub_store::{PartitionLayout, PartitionPeriod, PoolSettings, Pooler, Store};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{DatabasePartitionPeriod, DatabasePooler};

pub use config::{Config, ConfigError, SecretSource};
pub use state::AppState;

/// Failures while starting up.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database could not be opened, migrated or seeded.
    #[error(transparent)]
    Store(#[from] edihub_store::StoreError),
    /// The listener failed.
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
}

/// The routes and their OpenAPI document, built together so they cannot drift.
pub fn routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    use utoipa::OpenApi;
    utoipa_axum::router::OpenApiRouter::with_openapi(api::doc::ApiDoc::openapi())
        .merge(api::receive::router())
        .merge(api::webhook::router())
        .merge(api::as2::router())
        .merge(api::admin::as2::router())
        .merge(api::feed::router())
        .merge(api::admin::audit::router())
        .merge(api::admin::messages::router())
        .merge(api::admin::rules::router())
        .merge(api::admin::destinations::router())
        .merge(api::admin::deliveries::router())
        .merge(console::forms::redeliver::router())
        .merge(console::forms::edit::router())
        .merge(console::forms::integration::router())
        .merge(console::pages::overview::router())
        .merge(api::health::router())
        .merge(api::openapi::router())
        .split_for_parts()
}

/// The whole application.
pub fn router(state: AppState) -> Router {
    let (routes, _) = routes();
    routes
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // `layer` (not `route_layer`) so 404/405 answers get a request id,
        // a log line and a count too; axum applies it per endpoint, so the
        // matched route is still known.
        .layer(axum::middleware::from_fn(admin_http::guard))
        .layer(axum::middleware::from_fn_with_state(state.clone(), telemetry::observe))
        .with_state(state)
}

async fn not_found() -> Response {
    error::problem(StatusCode::NOT_FOUND, "no such route")
}

async fn method_not_allowed() -> Response {
    error::problem(StatusCode::METHOD_NOT_ALLOWED, "this method is not allowed here; see the Allow header")
}

/// Pool settings from the configuration.
pub fn pool_settings(config: &Config) -> PoolSettings {
    PoolSettings {
        max_connections: config.database_max_connections,
        acquire_timeout: Duration::from_secs(config.database_acquire_timeout_secs),
        pooler: match config.database_pooler {
            DatabasePooler::None => Pooler::None,
            DatabasePooler::Transaction => Pooler::Transaction,
        },
        partitions: PartitionLayout {
            period: match config.database_partition_period {
                DatabasePartitionPeriod::Day => PartitionPeriod::Day,
                DatabasePartitionPeriod::Week => PartitionPeriod::Week,
            },
            ahead: config.database_partitions_ahead,
        },
    }
}

/// Opens the store, migrates it (when `auto_migrate`), seeds message types
/// from the config and loads them.
pub async fn prepare(config: Config) -> Result<AppState, StartError> {
    let store = edihub_store::connect(&config.database_url, &pool_settings(&config)).await?;
    if config.auto_migrate {
        store.migrate().await?;
    } else {
        // `migrate` creates them too.
        store.create_partitions(ingest::now()).await?;
    }
    prepare_with(store, config).await
}

/// Like [`prepare`], on an already open and migrated store.
pub async fn prepare_with(store: Arc<dyn Store>, config: Config) -> Result<AppState, StartError> {
    store.seed_message_types(&catalog::seed_rows(&config, ingest::now())).await?;
    store.seed_integrations(&integrations::seed_rows(&config, ingest::now())).await?;
    store.seed_destinations(&delivery::seed_rows(&config, ingest::now())).await?;
    let descriptions = config::idoc_descriptions::load(&config)?;
    let as2 = as2::Registry::from_config(&config)?;
    let state = AppState::new(store, config, descriptions, as2);
    state.reload().await?;
    Ok(state)
}

/// Serves `state` on `listener` until `shutdown` is cancelled, then lets
/// in-flight requests finish. Background tasks run under `tasks`.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
    tasks: &TaskTracker,
) -> Result<(), StartError> {
    tasks.spawn(refresh_catalog(state.clone(), shutdown.clone()));
    tasks.spawn(retention::run(state.clone(), shutdown.clone()));
    tasks.spawn(delivery::run(state.clone(), shutdown.clone()));
    tasks.spawn(delivery::as2_mdn::run(state.clone(), shutdown.clone()));
    tasks.spawn(sap_status::run(state.clone(), shutdown.clone()));
    tasks.spawn(audit_rejections(state.clone(), shutdown.clone()));
    tasks.spawn(console::activity_rollup::run(state.clone(), shutdown.clone()));
    // Long polls end at shutdown instead of holding the graceful drain.
    let feed_state = state.clone();
    let feed_shutdown = shutdown.clone();
    tasks.spawn(async move {
        feed_shutdown.cancelled().await;
        feed_state.feed.close();
    });
    let limits = serve::ServeLimits {
        max_connections: state.config.max_connections,
        max_connections_per_address: state.config.max_connections_per_address,
        header_read_timeout: Duration::from_secs(state.config.header_read_timeout_secs.max(1)),
        shutdown_grace: Duration::from_secs(state.config.shutdown_grace_secs),
    };
    let app = router(state);
    serve::run(listener, app, limits, shutdown).await?;
    Ok(())
}

/// Writes the gathered refused webhook signatures to the audit log every
/// `signature_rejection_audit_secs`, and once more at shutdown so none are
/// lost (see [`integrations::rejections`]).
async fn audit_rejections(state: AppState, shutdown: CancellationToken) {
    let every = Duration::from_secs(state.config.signature_rejection_audit_secs.max(1));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(every) => {
                state.rejections.flush(state.store.as_ref()).await;
            }
        }
    }
    state.rejections.flush(state.store.as_ref()).await;
}

/// Reloads message types on a timer so edits from other replicas arrive.
async fn refresh_catalog(state: AppState, shutdown: CancellationToken) {
    let every = Duration::from_secs(state.config.catalog_refresh_secs.max(1));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(every) => {
                if let Err(e) = state.reload().await {
                    tracing::warn!(error = %e, "reloading message types and integrations failed");
                }
            }
        }
    }
}

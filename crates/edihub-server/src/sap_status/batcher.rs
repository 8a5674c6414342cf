//! The batcher: pending status changes become status IDocs, stored as
//! messages of their environment.
//!
//! One loop per environment with `sap.status`, under the server's task
//! tracker, ending at the shutdown token. Every `interval` it sends all
//! that is pending; in between, once this process's requests recorded
//! `max_per_idoc` changes in the environment, it sends as many full IDocs
//! as are pending (41 and 40, recorded with the delivery verdicts, and
//! other replicas' changes wait for the interval or that count).
//! Each IDoc is built by core's writer (addressed from the hub to the SAP
//! system), numbered with the environment's counter of the SAP system (the
//! acknowledgement counters, never the same number twice), and stored by
//! the store together with the marks that its changes are carried, in one
//! transaction: replicas racing for the same changes store one IDoc, and
//! the outbox delivers it with its retries, audit and replay.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use edihub_core::sap::{
    SapStatus, SapTimestamp, StatusChange, StatusIdocType, StatusText, idoc_xml, status_idocs,
};
use edihub_store::{NewMessage, SAP_CREATED, SAP_IN_TARGET, SapStatusRow, Scope};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::config::SapSystemConfig;
use crate::state::AppState;

/// Runs the batcher of every environment with `sap.status` until `shutdown`.
pub async fn run(state: AppState, shutdown: CancellationToken) {
    let mut loops = JoinSet::new();
    for tenant in &state.config.tenants {
        for env in &tenant.environments {
            let Some(system) = env.sap.clone().filter(|s| s.status.is_some()) else { continue };
            let scope = Scope::new(&tenant.id, &env.id);
            loops.spawn(run_environment(state.clone(), scope, system, shutdown.clone()));
        }
    }
    while loops.join_next().await.is_some() {}
}

/// One environment's loop.
async fn run_environment(
    state: AppState,
    scope: Scope,
    system: SapSystemConfig,
    shutdown: CancellationToken,
) {
    let Some(status) = system.status.clone() else { return };
    let full = status.max_per_idoc as u64;
    let mut due = tokio::time::Instant::now() + status.every();
    loop {
        let full_only = tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep_until(due) => {
                due = tokio::time::Instant::now() + status.every();
                state.sap_status.reset(&scope);
                false
            }
            () = state.sap_status.changed() => {
                if !state.sap_status.take_full(&scope, full) {
                    continue;
                }
                true
            }
        };
        if let Err(e) = batch_once(&state, &scope, &system, full_only).await {
            tracing::warn!(tenant = %scope.tenant_id, environment = %scope.environment_id, error = %e,
                "sap status: storing a status IDoc failed; its changes stay pending");
        }
    }
}

/// Stores status IDocs for `scope`'s pending changes: all of them, or with
/// `full_only` only as many IDocs as are full. Returns the ids of the
/// status messages stored.
pub async fn batch_once(
    state: &AppState,
    scope: &Scope,
    system: &SapSystemConfig,
    full_only: bool,
) -> Result<Vec<Uuid>, String> {
    let Some(status) = &system.status else { return Ok(Vec::new()) };
    let kind = status.idoc_type().ok_or("sap.status.idoc names no status IDoc type")?;
    let max = status.max_per_idoc.max(1);
    let mut stored = Vec::new();
    loop {
        let rows = state.store.pending_sap_statuses(scope, max as i64).await.map_err(|e| e.to_string())?;
        if rows.is_empty() || (full_only && rows.len() < max) {
            return Ok(stored);
        }
        let message = status_message(state, scope, system, kind, &rows).await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let now = crate::ingest::now();
        if state
            .store
            .store_sap_status_message(scope, &message, &ids, now)
            .await
            .map_err(|e| e.to_string())?
        {
            stored.push(message.id);
            state.feed.notify(scope);
        }
        if rows.len() < max {
            return Ok(stored);
        }
    }
}

/// The status IDoc carrying `rows`, as a message of `scope`.
async fn status_message(
    state: &AppState,
    scope: &Scope,
    system: &SapSystemConfig,
    kind: StatusIdocType,
    rows: &[SapStatusRow],
) -> Result<NewMessage, String> {
    let profile = system.profile();
    let counter = format!("sap-status:{}", system.logical_system);
    let number = state.store.next_ack_number(scope, &counter).await.map_err(|e| e.to_string())?;
    let now = Utc::now();
    let changes = rows.iter().map(change).collect::<Result<Vec<_>, _>>()?;
    let idocs = status_idocs(kind, &profile, &sap_time(now)?, number.unsigned_abs(), &changes)
        .map_err(|e| e.to_string())?;
    let xml = idoc_xml(&idocs).map_err(|e| e.to_string())?;
    Ok(NewMessage {
        id: Uuid::now_v7(),
        message_type: kind.idoc_type().to_string(),
        mestyp: Some(kind.mestyp().to_string()),
        docnum: Some(format!("{number:016}")),
        sender: Some(profile.hub_partner.clone()),
        fingerprint: None,
        fingerprint_basis: "none".into(),
        window_seconds: 0,
        key_values: serde_json::json!([]),
        idempotency_key: None,
        provider_event_id: None,
        packet_index: 0,
        content_type: Some("application/xml".into()),
        payload: Bytes::from(xml),
    })
}

/// One recorded change as core's writer takes it.
fn change(row: &SapStatusRow) -> Result<StatusChange, String> {
    let status = match row.status.as_str() {
        SAP_IN_TARGET => SapStatus::InTarget,
        SAP_CREATED => SapStatus::Created,
        _ => SapStatus::NotCreated,
    };
    Ok(StatusChange {
        docnum: row.docnum.clone(),
        mestyp: row.mestyp.clone(),
        mescod: None,
        mesfct: None,
        status,
        text: StatusText { text: row.text.clone(), params: row.params.0.clone() },
        at: sap_time(row.created_at)?,
        arckey: None,
        // A refused IDoc became no message: nothing to name.
        object_key: row.message_id.map(|id| id.to_string()),
    })
}

/// A time as SAP's records write it (UTC).
fn sap_time(at: DateTime<Utc>) -> Result<SapTimestamp, String> {
    SapTimestamp::new(&at.format("%Y%m%d").to_string(), &at.format("%H%M%S").to_string())
        .map_err(|e| e.to_string())
}

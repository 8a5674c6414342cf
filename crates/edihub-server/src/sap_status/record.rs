//! Which IDocs of a request owe their sender a status, and recording it
//! once the store answered.

use edihub_core::sap::StatusIdocType;
use edihub_store::{IngestOutcome, MessageOutcome, NewMessage, NewSapStatus, Replay, SapStatusState, Scope};

use crate::config::SapSystemConfig;
use crate::state::AppState;

/// Per message of a request, in order: the IDoc number (16 digits) and
/// logical message it reports a status for, if it owes one.
#[derive(Debug, Default)]
pub struct Candidates(Vec<Option<(String, String)>>);

impl Candidates {
    /// Whether no message of the request owes a status.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// The IDoc number and logical message of each message that owes one.
    pub(super) fn owed(&self) -> impl Iterator<Item = &(String, String)> {
        self.0.iter().flatten()
    }
}

/// The messages of a request to `scope` that owe their sender a status:
/// IDocs from the environment's SAP system when its `sap.status` is set,
/// as `owed` says.
pub fn candidates(state: &AppState, scope: &Scope, messages: &[NewMessage]) -> Candidates {
    let Some(system) = reporting_system(state, scope) else {
        return Candidates::default();
    };
    Candidates(
        messages
            .iter()
            .map(|m| owed(system, m.sender.as_deref(), m.docnum.as_deref(), m.mestyp.as_deref()))
            .collect(),
    )
}

/// `scope`'s SAP system, if it has `sap.status` set.
pub(super) fn reporting_system<'a>(state: &'a AppState, scope: &Scope) -> Option<&'a SapSystemConfig> {
    state.config.sap_system(&scope.tenant_id, &scope.environment_id).filter(|system| system.status.is_some())
}

/// The IDoc number (padded to 16 digits) and logical message an IDoc with
/// these control fields is reported under, if it owes `system` a status:
/// sent by it (SNDPRN its logical system), with a SAP IDoc number (1 to 16
/// digits) and a logical message (at most SAP's 30 characters) other than
/// a status IDoc's own.
pub(super) fn owed(
    system: &SapSystemConfig,
    sender: Option<&str>,
    docnum: Option<&str>,
    mestyp: Option<&str>,
) -> Option<(String, String)> {
    let from_sap = sender == Some(system.logical_system.as_str());
    let docnum = docnum
        .map(str::trim)
        .filter(|d| !d.is_empty() && d.len() <= 16 && d.bytes().all(|b| b.is_ascii_digit()));
    let mestyp = mestyp.filter(|t| t.chars().count() <= 30 && !StatusIdocType::is_status_mestyp(t));
    match (from_sap, docnum, mestyp) {
        (true, Some(d), Some(t)) => Some((format!("{d:0>16}"), t.to_string())),
        _ => None,
    }
}

/// Records the statuses `outcome` owes: 39 for a message stored, the
/// message's current status for a repeat (a duplicate, or a replayed
/// request); the store adds a 41 or 40 the message's deliveries already
/// earned. The ingest has committed; a failure here is logged and the
/// request still answered.
pub async fn record(state: &AppState, scope: &Scope, candidates: &Candidates, outcome: &IngestOutcome) {
    let outcomes = match outcome {
        IngestOutcome::Processed(answer) => &answer.outcomes,
        IngestOutcome::Replayed(Replay::Answer(answer)) => &answer.outcomes,
        _ => return,
    };
    let replayed = matches!(outcome, IngestOutcome::Replayed(_));
    let changes: Vec<NewSapStatus> = outcomes
        .iter()
        .zip(&candidates.0)
        .filter_map(|(o, c)| {
            let (docnum, mestyp) = c.clone()?;
            let (message_id, state) = match o {
                MessageOutcome::Accepted(s) if !replayed => (s.id, SapStatusState::Stored),
                MessageOutcome::Accepted(s) => (s.id, SapStatusState::Current),
                MessageOutcome::Duplicate { existing, .. } => (existing.id, SapStatusState::Current),
            };
            Some(NewSapStatus { message_id, docnum, mestyp, state })
        })
        .collect();
    if changes.is_empty() {
        return;
    }
    match state.store.record_sap_statuses(scope, &changes, crate::ingest::now()).await {
        Ok(0) => {}
        Ok(added) => state.sap_status.recorded(scope, added),
        Err(e) => tracing::warn!(tenant = %scope.tenant_id, environment = %scope.environment_id, error = %e,
            "sap status: recording the status of received IDocs failed; their sender gets none"),
    }
}

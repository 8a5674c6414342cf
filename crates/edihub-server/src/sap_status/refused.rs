//! IDocs the hub refuses: an IDoc from the SAP system that the hub answers
//! with a client error after reading its control record (a message type
//! the sender may not send, a field over its limit, an Idempotency-Key
//! reused with other content) owes its sender a 40 with the reason, so
//! SAP's WE05 shows why no document was made.
//!
//! A refused request stores nothing, so every IDoc of it from the SAP
//! system gets the 40, each with the one reason the request was answered
//! with (which names the IDoc at fault in a packet). A body that cannot be
//! parsed records nothing: no IDoc number in it can be trusted. Neither
//! does a server error: its details stay in the log. The answer is the
//! same whether the recording succeeds or not.

use edihub_core::Document;
use edihub_store::{SapRefusal, Scope};

use super::record::{Candidates, owed, reporting_system};
use crate::error::ApiError;
use crate::ingest::identifiers::sender;
use crate::state::AppState;

/// Records a 40 with `error`'s reason for each IDoc of `documents` that
/// owes `scope`'s SAP system a status, when `error` is a client error;
/// returns `error` as it was, for the answer.
pub async fn refused(state: &AppState, scope: &Scope, documents: &[Document], error: ApiError) -> ApiError {
    let Some(system) = reporting_system(state, scope) else { return error };
    let idocs = documents.iter().filter_map(|d| owed(system, sender(d), d.docnum(), d.mestyp()));
    record(state, scope, idocs, &error).await;
    error
}

/// As [`refused`], for messages already built (`candidates`): a request
/// the store refused, its Idempotency-Key reused with other content.
pub async fn refused_messages(state: &AppState, scope: &Scope, candidates: &Candidates, error: &ApiError) {
    record(state, scope, candidates.owed().cloned(), error).await;
}

/// Records a 40 with `error`'s reason for each of `idocs` (IDoc number,
/// logical message), when `error` is a client error.
async fn record(
    state: &AppState,
    scope: &Scope,
    idocs: impl Iterator<Item = (String, String)>,
    error: &ApiError,
) {
    let code = error.status();
    if !code.is_client_error() {
        return;
    }
    let reason = error.to_string();
    let refusals: Vec<SapRefusal> = idocs
        .map(|(docnum, mestyp)| SapRefusal { docnum, mestyp, code: code.as_u16(), reason: reason.clone() })
        .collect();
    if refusals.is_empty() {
        return;
    }
    match state.store.record_sap_refusals(scope, &refusals, crate::ingest::now()).await {
        Ok(0) => {}
        Ok(added) => state.sap_status.recorded(scope, added),
        Err(e) => tracing::warn!(tenant = %scope.tenant_id, environment = %scope.environment_id, error = %e,
            "sap status: recording the refusal of received IDocs failed; their sender gets none"),
    }
}

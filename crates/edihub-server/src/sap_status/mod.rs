//! Status back to SAP: an environment whose SAP system has `sap.status`
//! set tells that system what became of the IDocs it sent.
//!
//! - `record.rs`: after the ingest commits, an IDoc from the SAP system
//!   (SNDPRN its logical system) records 39, a re-sent one its message's
//!   current status again; the store records 41 and 40 itself with the
//!   delivery verdicts, or with the 39 when a verdict came first (see
//!   `edihub_store`'s `sap_status`).
//! - `batcher.rs`: one task per such environment turns the pending
//!   changes into status IDocs (ALEAUD01 or SYSTAT01, core's writer) every
//!   `interval`, or as soon as `max_per_idoc` are pending, and stores each
//!   as a message of the environment, which the outbox delivers to its
//!   `sap-idoc-xml` destination like any message.
//!
//! Status IDocs never produce status themselves: they are sent by the hub,
//! not by the SAP system, and a status IDoc the SAP system sends to the hub
//! (logical message ALEAUD or STATUS) is left out too.

mod batcher;
mod record;

pub use batcher::{batch_once, run};
pub use record::{Candidates, candidates, record};

/// What the requests of this process recorded per environment since its
/// batcher last looked, and the wake-up of the batchers: a batcher reads
/// the store before its interval only once a full status IDoc's worth is
/// waiting, so a busy SAP sender costs no read per request.
#[derive(Debug, Default)]
pub struct StatusSignal {
    recorded: std::sync::Mutex<std::collections::HashMap<edihub_store::Scope, u64>>,
    wake: tokio::sync::Notify,
}

impl StatusSignal {
    /// `added` changes were recorded in `scope`.
    pub fn recorded(&self, scope: &edihub_store::Scope, added: u64) {
        let mut recorded = self.recorded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *recorded.entry(scope.clone()).or_default() += added;
        drop(recorded);
        self.wake.notify_waiters();
    }

    /// Waits for the next recording in any environment.
    pub(crate) async fn changed(&self) {
        self.wake.notified().await;
    }

    /// Whether at least `full` changes were recorded in `scope` since the
    /// last call that said so (or [`StatusSignal::reset`]); counting starts
    /// again then.
    pub(crate) fn take_full(&self, scope: &edihub_store::Scope, full: u64) -> bool {
        let mut recorded = self.recorded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let full = recorded.get(scope).is_some_and(|n| *n >= full);
        if full {
            recorded.remove(scope);
        }
        full
    }

    /// Starts counting `scope`'s changes again (its batcher read them all).
    pub(crate) fn reset(&self, scope: &edihub_store::Scope) {
        self.recorded.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(scope);
    }
}

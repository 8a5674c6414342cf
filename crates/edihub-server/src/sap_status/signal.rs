//! The batchers' wake-up: what the requests of this process recorded per
//! environment. A leaf the shared state holds and the recorders and
//! batchers read, so the state does not depend on the batcher.

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

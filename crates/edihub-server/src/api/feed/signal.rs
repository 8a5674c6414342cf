//! The pull feed's long poll: a request with `wait` waits for new messages.
//!
//! The store decides which messages a page holds and in which order (see
//! `edihub_store`'s `feed` module); here a request with `wait` waits for a
//! page that is not empty. A waiting request wakes when an ingest of this
//! process commits a new message to its environment
//! ([`FeedSignal::notify`]) and re-reads every [`RECHECK`] anyway, because
//! other replicas store messages too. Each read starts where the one before
//! it stopped examining, so a wake-up reads only what arrived since, and a
//! `message_type` that matches nothing never rescans the environment. On
//! shutdown it answers at once with what there is (an empty page).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use edihub_store::{FeedPage, FeedQuery, Scope, Store, StoreError};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often a waiting request reads again without a local wake-up (a
/// message stored by another replica is seen within this time).
pub const RECHECK: Duration = Duration::from_millis(500);

/// Wakes waiting feed requests; ends them on shutdown.
#[derive(Debug)]
pub struct FeedSignal {
    /// Per environment, bumped on every commit that stored a message in it
    /// (environments come from the configuration, so the map stays small).
    commits: Mutex<HashMap<Scope, watch::Sender<u64>>>,
    /// Cancelled when the server shuts down.
    closing: CancellationToken,
}

impl Default for FeedSignal {
    fn default() -> Self {
        Self { commits: Mutex::new(HashMap::new()), closing: CancellationToken::new() }
    }
}

impl FeedSignal {
    /// An ingest committed new messages to `scope`: its waiting requests
    /// read again (and no other environment's).
    pub fn notify(&self, scope: &Scope) {
        let commits = self.commits.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sender) = commits.get(scope) {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    fn subscribe(&self, scope: &Scope) -> watch::Receiver<u64> {
        let mut commits = self.commits.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        commits.entry(scope.clone()).or_insert_with(|| watch::Sender::new(0)).subscribe()
    }

    /// The server is shutting down: waiting requests answer now.
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// Reads a page; with a `wait`, and while the page is empty, reads
    /// again on every local commit to the environment and every [`RECHECK`]
    /// until `wait` has passed or the server shuts down. Each read starts
    /// after what the one before examined; an empty page whose read
    /// stopped at its scan bound answers at once, with the cursor moved on.
    pub async fn page(
        &self,
        store: &dyn Store,
        query: &FeedQuery<'_>,
        wait: Duration,
    ) -> Result<FeedPage, StoreError> {
        let deadline = Instant::now() + wait;
        let mut commits = self.subscribe(query.scope);
        let mut query = query.clone();
        loop {
            // Marked seen before the read: a commit during the read wakes
            // the next wait instead of being missed.
            drop(commits.borrow_and_update());
            let page = store.feed(&query).await?;
            let now = Instant::now();
            if !page.messages.is_empty() || page.more || now >= deadline || self.closing.is_cancelled() {
                return Ok(page);
            }
            // Nothing for this consumer up to `next`, and nothing can still
            // appear before it: the next read starts there.
            query.after = page.next;
            let nap = RECHECK.min(deadline - now);
            tokio::select! {
                _ = commits.changed() => {}
                () = tokio::time::sleep(nap) => {}
                () = self.closing.cancelled() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_wakes_the_requests_of_its_environment_only() {
        let signal = FeedSignal::default();
        let (prod, qa) = (Scope::new("acme", "prod"), Scope::new("acme", "qa"));
        let (mut waiting_prod, waiting_qa) = (signal.subscribe(&prod), signal.subscribe(&qa));
        signal.notify(&prod);
        assert!(waiting_prod.has_changed().unwrap(), "prod's request wakes");
        assert!(!waiting_qa.has_changed().unwrap(), "qa's does not");
        drop(waiting_prod.borrow_and_update());
        signal.notify(&Scope::new("globex", "prod"));
        assert!(!waiting_prod.has_changed().unwrap() && !waiting_qa.has_changed().unwrap());
        assert_eq!(signal.commits.lock().unwrap().len(), 2, "an environment nobody waits on gets no entry");
    }
}

//! The pull feed's server side: the opaque cursor, and the long poll that
//! waits for new messages.
//!
//! The store decides which messages a page holds and in which order (see
//! `edihub_store`'s `feed` module); here a position becomes a cursor a
//! consumer keeps, and a request with `wait` waits for a page that is not
//! empty. A waiting request wakes when an ingest of this process commits a
//! new message ([`FeedSignal::notify`]) and re-reads every
//! [`RECHECK`] anyway, because other replicas store messages too. On
//! shutdown it answers at once with what there is (an empty page).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use edihub_store::{FeedPage, FeedPosition, FeedQuery, Store, StoreError};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often a waiting request reads again without a local wake-up (a
/// message stored by another replica is seen within this time).
pub const RECHECK: Duration = Duration::from_millis(500);

/// Wakes waiting feed requests; ends them on shutdown.
#[derive(Debug)]
pub struct FeedSignal {
    /// Bumped on every commit that stored a message.
    commits: watch::Sender<u64>,
    /// Cancelled when the server shuts down.
    closing: CancellationToken,
}

impl Default for FeedSignal {
    fn default() -> Self {
        Self { commits: watch::Sender::new(0), closing: CancellationToken::new() }
    }
}

impl FeedSignal {
    /// An ingest committed new messages.
    pub fn notify(&self) {
        self.commits.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The server is shutting down: waiting requests answer now.
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// Reads a page; with a `wait`, and while the page is empty, reads
    /// again on every local commit and every [`RECHECK`] until `wait` has
    /// passed or the server shuts down.
    pub async fn page(
        &self,
        store: &dyn Store,
        query: &FeedQuery<'_>,
        wait: Duration,
    ) -> Result<FeedPage, StoreError> {
        let deadline = Instant::now() + wait;
        let mut commits = self.commits.subscribe();
        loop {
            // Marked seen before the read: a commit during the read wakes
            // the next wait instead of being missed.
            drop(commits.borrow_and_update());
            let page = store.feed(query).await?;
            let now = Instant::now();
            if !page.messages.is_empty() || now >= deadline || self.closing.is_cancelled() {
                return Ok(page);
            }
            let nap = RECHECK.min(deadline - now);
            tokio::select! {
                _ = commits.changed() => {}
                () = tokio::time::sleep(nap) => {}
                () = self.closing.cancelled() => {}
            }
        }
    }
}

/// Bytes of an encoded position: the major part, then the message id.
const CURSOR_BYTES: usize = 24;

/// The cursor a consumer keeps: base64url of the position.
pub fn encode_cursor(position: FeedPosition) -> String {
    let mut bytes = [0u8; CURSOR_BYTES];
    bytes[..8].copy_from_slice(&position.major.to_be_bytes());
    bytes[8..].copy_from_slice(position.id.as_bytes());
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A cursor this API handed out, or `None` for anything else.
pub fn decode_cursor(text: &str) -> Option<FeedPosition> {
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    let bytes: [u8; CURSOR_BYTES] = bytes.try_into().ok()?;
    let major = i64::from_be_bytes(bytes[..8].try_into().ok()?);
    let id = uuid::Uuid::from_slice(&bytes[8..]).ok()?;
    (major >= 0).then_some(FeedPosition { major, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_nothing_else_decodes() {
        let p = FeedPosition { major: 0x1234_5678_9abc, id: uuid::Uuid::now_v7() };
        assert_eq!(decode_cursor(&encode_cursor(p)), Some(p));
        assert_eq!(decode_cursor(&encode_cursor(FeedPosition::START)), Some(FeedPosition::START));
        for bad in ["", "abc", "!!!!", &encode_cursor(p)[1..], &format!("{}A", encode_cursor(p))] {
            assert_eq!(decode_cursor(bad), None, "{bad:?}");
        }
        let negative = URL_SAFE_NO_PAD.encode([0xffu8; CURSOR_BYTES]);
        assert_eq!(decode_cursor(&negative), None);
    }
}

//! Large packets: many IDocs in one request, committed in chunks.
//!
//! SAP sends packets of thousands of IDocs (20 000 in 3.5 MB is a real
//! size). Run as one transaction, such a packet holds SQLite's only write
//! lock for seconds, so every other sender waits or times out, and its
//! re-send, three statements per IDoc, outlasted the request timeout: SAP's
//! genuine retry was rolled back and never answered. Two measures keep a
//! packet from hurting anyone, its own retry included:
//!
//! - **Duplicates are settled set-wise.** Before inserting, the settle
//!   transaction looks up the holders of up to [`LOOKUP_CHUNK`]
//!   fingerprints in one statement and writes their
//!   `message.duplicate_blocked` events in one insert, so a re-sent packet
//!   costs a fraction of its first send. It stops looking once a lookup
//!   finds no duplicate (see [`Progress`]), so a new packet pays one lookup.
//! - **Chunked commits.** A packet of more than [`TX_CHUNK`] IDocs is stored
//!   [`TX_CHUNK`] IDocs per transaction, so the write lock is held for
//!   milliseconds at a time and other writers get their turn between
//!   chunks. On SQLite each chunk takes a turn on the single writer's slot,
//!   queued fairly with the group insert's batches (`Batchers::write_turn`),
//!   so a small sender waits one chunk at most. A packet's IDocs are independent messages, so this is allowed
//!   as long as the answer comes after the last chunk: an IDoc committed by
//!   an earlier chunk is a duplicate when the request is retried, so a
//!   retry after a crash or a timeout stores only what is missing.
//!
//! With a key (Idempotency-Key), the *last* chunk claims it and stores the
//! answer, in one transaction with its messages: a claimed key always has
//! its answer, and before the first chunk a key that is already claimed
//! sends the request down the settle transaction as a whole, which replays (or
//! refuses) it without touching the messages. Two requests with one key
//! racing through their chunks settle on the key at the end: the loser's
//! IDocs are duplicates of the winner's, and it answers with the winner's
//! answer. Only an IDoc with no fingerprint at all (no key values, no
//! DOCNUM) can be stored twice when such a request is retried after a crash
//! mid-way; the key cannot protect a chunk it does not yet hold.

use uuid::Uuid;

/// Most IDocs stored per transaction. On SQLite an insert costs about
/// 0.1 ms, so a chunk holds the write lock for a few tens of milliseconds.
pub(crate) const TX_CHUNK: usize = 256;

/// Most fingerprints in one holders lookup (one parameter holds them all,
/// see `IngestSql::packet_holders`), and so most events in one audit insert.
pub(crate) const LOOKUP_CHUNK: usize = 256;

/// What a packet's earlier messages leave for the next ones.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    /// The message that stores the request body, once one is stored.
    pub holder: Option<Uuid>,
    /// Whether duplicates are still looked up set-wise: true until a lookup
    /// finds none (a new packet pays one lookup; a re-send or a retry after
    /// a partial commit looks up as long as it keeps finding duplicates).
    pub look_up: bool,
}

impl Progress {
    /// Before the first message.
    pub(crate) const START: Progress = Progress { holder: None, look_up: true };
}

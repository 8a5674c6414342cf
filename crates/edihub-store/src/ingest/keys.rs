//! Request keys (an Idempotency-Key, a provider's event id, an
//! interchange's control numbers): what the ingest asks of a backend's
//! connection for them ([`KeySql`], written whole in each backend's
//! `ingest/keys.rs`) and the comparisons both backends share.
//!
//! A key is claimed by inserting it (`ON CONFLICT DO NOTHING`): the claim
//! that returns a row won, every other request with that key replays its
//! kept answer (read by [`KeySql::key_states`]) or is refused as a mismatch.
//! A request with one message claims its key with the answer of that
//! message accepted already in it; a packet, or a message that turns out a
//! duplicate, has its answer stored by [`KeySql::finish_keys`] once its
//! messages are decided.

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use crate::{KeyClaim, Result, Scope};

/// A request key to claim, with its scope and time, and the answer it
/// keeps if the request turns out as expected (a request with one message
/// expects it new, so an accepted request's key is written once, complete;
/// `None` leaves the answer to [`KeySql::finish_keys`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claim<'a> {
    pub scope: &'a Scope,
    pub key: &'a KeyClaim,
    pub now: DateTime<Utc>,
    /// The expected answer (JSON text) and the message it points to.
    pub expected: Option<(&'a str, Option<Uuid>)>,
}

impl Claim<'_> {
    /// The answer's text, if the claim has one.
    pub(crate) fn answer(&self) -> Option<&str> {
        self.expected.map(|(answer, _)| answer)
    }

    /// The message the expected answer points to.
    pub(crate) fn message_id(&self) -> Option<Uuid> {
        self.expected.and_then(|(_, id)| id)
    }

    /// Where a claim of this key made before counts as expired: `None`
    /// for keys without a window.
    pub(crate) fn expired_before(&self) -> Option<DateTime<Utc>> {
        self.key.window_seconds.map(|window| self.now - chrono::Duration::seconds(window))
    }
}

/// A key's stored state. The type and fingerprint of the message it
/// answered for (for the repeat's audit event) are in its answer; only a key
/// stored before answers were data has them read from the message (see
/// [`super::rendered_keys`]).
#[derive(Debug, Clone, FromRow)]
pub(crate) struct KeyState {
    pub(crate) tenant_id: String,
    pub(crate) environment_id: String,
    pub(crate) kind: String,
    pub(crate) key: String,
    pub(crate) request_sha256: String,
    /// The rendered status of a key stored before answers were data (0 otherwise).
    pub(crate) status_code: i32,
    /// The rendered body of such a key.
    pub(crate) response_body: String,
    /// The answer as data (JSON text), `None` until stored.
    pub(crate) answer: Option<String>,
    pub(crate) message_id: Option<Uuid>,
    /// The message's type, for a key without an answer as data.
    #[sqlx(default)]
    pub(crate) message_type: Option<String>,
    /// The message's fingerprint, for a key without an answer as data.
    #[sqlx(default)]
    pub(crate) fingerprint: Option<String>,
}

/// A key a claim statement returned: (tenant, environment, kind, key).
pub(crate) type ClaimedKey = (String, String, String, String);

/// The key statements of the ingest on a connection (or transaction) of
/// the backend.
pub(crate) trait KeySql {
    /// Claims request keys; true for each one this statement claimed (a key
    /// twice in one list is claimed once, by its first row; see
    /// [`claimed_in_order`]).
    fn claim_keys(&mut self, keys: &[Claim<'_>]) -> impl Future<Output = Result<Vec<bool>>> + Send;
    /// Stores the answer (JSON text) and the message each claimed key answered for.
    fn finish_keys(
        &mut self,
        rows: &[(&Scope, &KeyClaim, String, Option<Uuid>)],
    ) -> impl Future<Output = Result<()>> + Send;
    /// The stored state of request keys (one primary-key probe per
    /// distinct key, [`distinct_keys`]), with the messages of rendered keys
    /// filled in.
    fn key_states(
        &mut self,
        keys: &[(&Scope, &KeyClaim)],
    ) -> impl Future<Output = Result<Vec<KeyState>>> + Send;
    /// Deletes the claims among `keys` whose window ended by their `now`
    /// (keys with a window only), so each request may claim its key anew.
    /// A concurrent claimant of the same key waits on the deleted row and
    /// then meets the new claim.
    fn release_expired_keys(&mut self, keys: &[Claim<'_>]) -> impl Future<Output = Result<()>> + Send;
}

/// Which of `keys` a claim statement claimed, given the keys it returned:
/// each returned key goes to the first item with that key.
pub(crate) fn claimed_in_order(keys: &[Claim<'_>], returned: &[ClaimedKey]) -> Vec<bool> {
    let mut taken = vec![false; returned.len()];
    keys.iter()
        .map(|Claim { scope, key, .. }| {
            let hit = returned.iter().enumerate().position(|(i, (t, e, k, n))| {
                !taken[i]
                    && *t == scope.tenant_id
                    && *e == scope.environment_id
                    && k == key.kind.as_str()
                    && *n == key.key
            });
            hit.map(|i| taken[i] = true).is_some()
        })
        .collect()
}

/// `keys` without repeats, in order: one probe each.
pub(crate) fn distinct_keys<'a>(keys: &[(&'a Scope, &'a KeyClaim)]) -> Vec<(&'a Scope, &'a KeyClaim)> {
    let mut distinct: Vec<(&Scope, &KeyClaim)> = Vec::new();
    for (scope, key) in keys {
        if !distinct.iter().any(|(s, k)| s == scope && k.kind == key.kind && k.key == key.key) {
            distinct.push((scope, key));
        }
    }
    distinct
}

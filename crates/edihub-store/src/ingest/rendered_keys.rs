//! Keys stored by an edihub from before answers were data: such a key
//! keeps the response it rendered, not the outcomes, so the type and
//! fingerprint of the message it answered for (which a repeat's audit
//! event names) are read from the message, by each backend's
//! `ingest/keys.rs`. Such keys only grow rarer: retention deletes them
//! after `keys_days`.

use sqlx::FromRow;
use uuid::Uuid;

use super::keys::KeyState;

/// The type and fingerprint of a message a rendered (older) key answered for.
#[derive(Debug, Clone, FromRow)]
pub(crate) struct KeyMessage {
    id: Uuid,
    message_type: String,
    fingerprint: Option<String>,
}

/// Whether `s` is a rendered key: a response, no answer as data.
fn rendered(s: &KeyState) -> bool {
    s.answer.is_none() && s.status_code != 0
}

/// The messages the rendered keys among `states` answered for.
pub(crate) fn rendered_messages(states: &[KeyState]) -> Vec<Uuid> {
    states.iter().filter(|s| rendered(s)).filter_map(|s| s.message_id).collect()
}

/// Fills in the type and fingerprint of each rendered key's message from
/// `found`.
pub(crate) fn fill_in(states: &mut [KeyState], found: &[KeyMessage]) {
    for s in states.iter_mut().filter(|s| rendered(s)) {
        if let Some(m) = found.iter().find(|m| Some(m.id) == s.message_id) {
            s.message_type = Some(m.message_type.clone());
            s.fingerprint.clone_from(&m.fingerprint);
        }
    }
}

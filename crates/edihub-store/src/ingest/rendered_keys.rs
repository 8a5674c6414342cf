//! Keys stored by an edihub from before answers were data: such a key
//! keeps the response it rendered, not the outcomes, so the type and
//! fingerprint of the message it answered for (which a repeat's audit
//! event names) are read from the message. Such keys only grow rarer:
//! retention deletes them after `keys_days`.

use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, QueryBuilder, Type};
use uuid::Uuid;

use super::key_statements::KeyState;
use crate::Result;

/// The type and fingerprint of a message a rendered (older) key answered for.
#[derive(Debug, Clone, FromRow)]
pub(crate) struct KeyMessage {
    id: Uuid,
    message_type: String,
    fingerprint: Option<String>,
}

/// The messages of rendered keys, by id (`IN` list of literals follows).
const KEY_MESSAGES: &str =
    "SELECT id, message_type, key_fingerprint AS fingerprint FROM messages WHERE id IN (";
/// Fills in the type and fingerprint of the message each rendered key (one
/// stored by an edihub from before answers were data, so it has no answer
/// to read them from) answered for. Unnamed, so PostgreSQL plans it with
/// the ids known and reads only their partitions. Such keys only grow rarer:
/// retention deletes them after `keys_days`.
pub(super) async fn fill_in_messages<DB>(conn: &mut DB::Connection, states: &mut [KeyState]) -> Result<()>
where
    DB: Database + sqlx::database::HasStatementCache,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
    for<'r> KeyMessage: FromRow<'r, DB::Row>,
{
    let rendered = |s: &KeyState| s.answer.is_none() && s.status_code != 0;
    let ids: Vec<Uuid> = states.iter().filter(|s| rendered(s)).filter_map(|s| s.message_id).collect();
    if ids.is_empty() {
        return Ok(());
    }
    let mut q = QueryBuilder::<DB>::new(KEY_MESSAGES);
    crate::queries::push_ids(&mut q, ids);
    let found: Vec<KeyMessage> = q.build_query_as().persistent(false).fetch_all(&mut *conn).await?;
    for s in states.iter_mut().filter(|s| rendered(s)) {
        if let Some(m) = found.iter().find(|m| Some(m.id) == s.message_id) {
            s.message_type = Some(m.message_type.clone());
            s.fingerprint.clone_from(&m.fingerprint);
        }
    }
    Ok(())
}

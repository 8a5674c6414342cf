//! Retention: fingerprints past their window are released, and old
//! messages, request keys and audit events deleted, a batch at a time.
//!
//! Each step deletes `LIMIT n` rows through a sub-select, so a purge never
//! holds a table-wide lock and live traffic interleaves with it; the caller
//! repeats a step until a batch comes back short. The statements are each
//! backend's (`postgres/retention.rs`, `sqlite/retention.rs`): where a
//! claim lives differs, and PostgreSQL's message purge selects its batch
//! before deleting it, so the delete is pruned to the partitions that hold
//! it.

use sqlx::{Encode, QueryBuilder, Type};

use crate::KeyPurge;

/// Appends to a key purge's selection the event ids `which` keeps or
/// takes (event ids are stored as `<integration>:<id>`); false when it
/// selects nothing at all (the event ids of no integration).
pub(crate) fn push_event_id_selection<DB>(q: &mut QueryBuilder<DB>, which: KeyPurge<'_>) -> bool
where
    DB: sqlx::Database,
    for<'e> i32: Encode<'e, DB> + Type<DB>,
    for<'e> String: Encode<'e, DB> + Type<DB>,
{
    let (negate, integrations) = match which {
        KeyPurge::AllExcept(ids) => (true, ids),
        KeyPurge::EventIdsOf(id) => (false, std::slice::from_ref(id)),
    };
    if integrations.is_empty() {
        return negate;
    }
    q.push(if negate { " AND NOT " } else { " AND " });
    q.push("(kind = 'provider_event_id' AND (");
    for (i, id) in integrations.iter().enumerate() {
        let prefix = format!("{id}:");
        let len = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
        q.push(if i == 0 { "substr(key, 1, " } else { " OR substr(key, 1, " });
        q.push_bind(len).push(") = ").push_bind(prefix);
    }
    q.push("))");
    true
}

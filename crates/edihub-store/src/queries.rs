//! Looking up what was stored. The statements are each backend's
//! (`postgres/messages.rs`, `sqlite/messages.rs`; the audit log in
//! `audit.rs` beside them; message search in [`crate::message_search`]).
//!
//! The audit log is keyset-paginated (newest first, the last row of a page
//! is the next page's bound), so a page never repeats or skips a row when
//! new ones arrive in between, and each filter is an equality or a range
//! the indexes of `audit_events` serve.

use sqlx::{Encode, QueryBuilder, Type};
use uuid::Uuid;

/// Binds `ids` as the comma-separated items of an `IN (…)` list whose
/// opening the statement already has, and closes it. In an unnamed
/// statement PostgreSQL plans such a list with the ids known, so a lookup
/// by message id reads only the partitions they fall in.
pub(crate) fn push_ids<DB>(q: &mut QueryBuilder<DB>, ids: impl IntoIterator<Item = Uuid>)
where
    DB: sqlx::Database,
    for<'e> Uuid: Encode<'e, DB> + Type<DB>,
{
    let mut list = q.separated(", ");
    for id in ids {
        list.push_bind(id);
    }
    q.push(")");
}

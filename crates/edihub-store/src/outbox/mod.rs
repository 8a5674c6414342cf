//! The transactional outbox: one `deliveries` row per (message,
//! destination), and the attempts made to deliver it.
//!
//! The rows are written by the statement that inserts the message, for
//! every enabled destination of the message's environment whose filter
//! admits its type: on SQLite by a row trigger on `messages` (migration
//! 0008), on PostgreSQL by the insert statement itself, a CTE over its
//! `RETURNING` (`postgres/ingest/insert.rs`; migration 0013 says why not a
//! trigger). Every insert path (group insert, one transaction, packet
//! chunks) goes through that statement, so no committed message ever lacks
//! its pending deliveries, and a duplicate, which inserts no message row,
//! gets none.
//! Another trigger deletes a message's deliveries and attempts when
//! retention purges the message.
//!
//! Workers claim due rows with a lease ([`crate::Store::claim_deliveries`],
//! one statement per backend: `FOR UPDATE SKIP LOCKED` on PostgreSQL, a
//! plain `UPDATE` on SQLite, whose single writer already serialises it), run
//! the attempt outside any transaction, then record it and the verdict
//! together, many attempts in one transaction ([`crate::Store::finish_deliveries`],
//! `verdicts.rs`). A request of one message without a key may instead ask
//! the insert to lease the message's deliveries to its caller
//! ([`crate::InsertLease`], answered in [`crate::Answer::leased`]): the
//! caller's worker attempts those at once, and no claim is made for them
//! unless the lease expires. A worker that dies leaves
//! its lease, which expires, and the row is claimed again. A destination
//! with `ordering = "fifo"` claims only the head of its line instead
//! (`queue.rs`, which also measures each destination's queue). A batch
//! of attempts whose transaction fails is recorded one by one (`finish.rs`).

mod finish;
pub(crate) mod model;
mod queue;
pub(crate) mod verdicts;

pub(crate) use finish::finish_each;
pub use model::*;
pub use queue::DeliveryQueue;

use uuid::Uuid;

use crate::audit::DELIVERY_REPLAYED;
use crate::{MessageRow, NewAuditEvent};

/// The `delivery.replayed` event of a message's delivery to
/// `destination` made due again by an admin.
pub(crate) fn redelivered(
    message_id: Uuid,
    message: Option<&MessageRow>,
    destination: &str,
) -> NewAuditEvent {
    let details = serde_json::json!({ "destination": destination });
    delivery_event(DELIVERY_REPLAYED, message_id, message, details)
}

/// The one `delivery.replayed` event of a replay by `filter` that made
/// `queued` deliveries due again.
pub(crate) fn replay_event(filter: &ReplayFilter, queued: u64) -> NewAuditEvent {
    NewAuditEvent {
        action: DELIVERY_REPLAYED.into(),
        message_type: filter.message_type.clone(),
        details: serde_json::json!({ "filter": filter, "queued": queued }),
        ..Default::default()
    }
}

/// A delivery event under the message's tenant, environment and type.
pub(crate) fn delivery_event(
    action: &str,
    message_id: Uuid,
    message: Option<&MessageRow>,
    details: serde_json::Value,
) -> NewAuditEvent {
    NewAuditEvent {
        action: action.into(),
        tenant_id: message.map(|m| m.tenant_id.clone()),
        environment_id: message.map(|m| m.environment_id.clone()),
        message_type: message.map(|m| m.message_type.clone()),
        message_id: Some(message_id),
        details,
        ..Default::default()
    }
}

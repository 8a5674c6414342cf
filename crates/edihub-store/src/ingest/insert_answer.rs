//! What a message insert answers: the ids it inserted, the deliveries it
//! leased (see [`crate::InsertLease`]) and, on PostgreSQL, the holders it saw of the fingerprints it could not claim, so that
//! settling those duplicates needs no probe of its own (only a holder that
//! committed while the insert ran, or a repeat within the same statement,
//! is probed for). The rows are read here; what they mean for each request
//! is decided in [`super::decide`].

use chrono::{DateTime, Utc};
use sqlx::FromRow;
use uuid::Uuid;

use super::statements::{IngestSql, ScopedHolder};
use crate::model::Holder;
use crate::{ClaimedDelivery, Result, Scope};

/// What a message insert did: the ids it inserted, the deliveries it
/// leased as its rows asked, and the holders it saw of fingerprints it
/// could not claim (PostgreSQL's insert names them, see
/// `postgres/ingest/insert.rs`; always empty on SQLite).
#[derive(Debug, Default)]
pub(crate) struct Inserted {
    pub(crate) ids: Vec<Uuid>,
    pub(crate) leased: Vec<ClaimedDelivery>,
    pub(crate) holders: Vec<ScopedHolder>,
}

/// A row of the message insert's answer: an inserted message's id; with
/// `leased_to` set, a delivery of it leased until `lease_until` (created
/// at `received_at`); or with `holder_tenant_id` set, a holder of a
/// fingerprint it could not claim. SQLite's insert returns the id alone.
#[derive(Debug, FromRow)]
pub(crate) struct InsertAnswer {
    id: Uuid,
    #[sqlx(default)]
    holder_tenant_id: Option<String>,
    #[sqlx(default)]
    holder_environment_id: Option<String>,
    #[sqlx(default)]
    message_type: Option<String>,
    #[sqlx(default)]
    mestyp: Option<String>,
    #[sqlx(default)]
    docnum: Option<String>,
    #[sqlx(default)]
    fingerprint: Option<String>,
    #[sqlx(default)]
    received_at: Option<DateTime<Utc>>,
    #[sqlx(default)]
    fingerprint_expires_at: Option<DateTime<Utc>>,
    #[sqlx(default)]
    leased_to: Option<String>,
    #[sqlx(default)]
    lease_until: Option<DateTime<Utc>>,
}

impl Inserted {
    pub(crate) fn from_answer(rows: Vec<InsertAnswer>) -> Result<Inserted> {
        let mut inserted = Inserted::default();
        for r in rows {
            if let Some(destination_id) = r.leased_to {
                let incomplete = || crate::StoreError::Invariant("leased row without its columns".into());
                inserted.leased.push(ClaimedDelivery {
                    message_id: r.id,
                    destination_id,
                    attempts: 0,
                    lease_until: r.lease_until.ok_or_else(incomplete)?,
                    created_at: r.received_at.ok_or_else(incomplete)?,
                });
                continue;
            }
            let Some(tenant_id) = r.holder_tenant_id else {
                inserted.ids.push(r.id);
                continue;
            };
            let incomplete = || crate::StoreError::Invariant("holder row without its columns".into());
            let summary = crate::MessageSummary {
                id: r.id,
                message_type: r.message_type.ok_or_else(incomplete)?,
                mestyp: r.mestyp,
                docnum: r.docnum,
                fingerprint: r.fingerprint,
                received_at: r.received_at.ok_or_else(incomplete)?,
            };
            let holder = Holder { summary, fingerprint_expires_at: r.fingerprint_expires_at };
            let environment_id = r.holder_environment_id.ok_or_else(incomplete)?;
            inserted.holders.push(ScopedHolder { tenant_id, environment_id, holder });
        }
        Ok(inserted)
    }

    /// The claims of which the insert saw no holder: a holder that
    /// committed while the insert ran, or an earlier row of the same insert.
    /// Only these need a probe (and, in a group batch, a session for it).
    pub(crate) fn unseen<'a>(&self, claims: &[(&'a Scope, &'a str)]) -> Vec<(&'a Scope, &'a str)> {
        claims
            .iter()
            .filter(|(scope, fp)| {
                !self.holders.iter().any(|h| {
                    h.tenant_id == scope.tenant_id
                        && h.environment_id == scope.environment_id
                        && h.holder.summary.fingerprint.as_deref() == Some(*fp)
                })
            })
            .copied()
            .collect()
    }

    /// The holders of `claims`: those the insert saw, then one probe for
    /// the [`Inserted::unseen`] ones.
    pub(crate) async fn holders_of(
        self,
        conn: &mut impl IngestSql,
        claims: &[(&Scope, &str)],
    ) -> Result<Vec<ScopedHolder>> {
        let unseen = self.unseen(claims);
        let mut holders = self.holders;
        if !unseen.is_empty() {
            holders.extend(conn.holders(&unseen).await?);
        }
        Ok(holders)
    }
}

//! Time partitions on PostgreSQL: their layout, and creating them ahead of
//! time and on demand (see docs/scale.md, "Partitioning").
//!
//! Two families share one layout of day or week ranges (UTC):
//! - **messages**: `messages`, `deliveries` and `delivery_attempts`, range
//!   partitioned on the message id, a UUIDv7 whose first 48 bits are the
//!   receive time in milliseconds, so a bound is the UUID of a period's
//!   first millisecond. A period's three partitions are created (and
//!   dropped) together, so a day of messages and its outbox go as one.
//! - **audit**: `audit_events`, range partitioned on `occurred_at`.
//!
//! There is no DEFAULT partition (it would forbid `DETACH … CONCURRENTLY`
//! and make every new partition scan it): the hub creates the current and
//! the next [`PartitionLayout::ahead`] periods at start and from a periodic
//! task, and a row that finds no partition (an injected clock far ahead, a
//! hub stopped for longer than `ahead`) makes the store create the one
//! covering it and run its unit of work again, so no insert is lost. A new
//! partition is made with `CREATE TABLE … (LIKE parent)` and `ALTER TABLE
//! parent ATTACH PARTITION`, which takes SHARE UPDATE EXCLUSIVE on the
//! parent (inserts and reads go on); `CREATE TABLE … PARTITION OF` would
//! take ACCESS EXCLUSIVE on it. Replicas take turns under a
//! transaction-scoped advisory lock (a session lock would not survive a
//! transaction pooler), and each one lists the partitions again under it,
//! so a range is created once. The first partition of each table
//! (`<table>_p_initial`, made by migration 0012 from the unpartitioned
//! table) covers everything from MINVALUE, so the past always has a home.

use chrono::{DateTime, Datelike, Duration, NaiveTime, TimeZone, Utc};
use sqlx::{AssertSqlSafe, PgConnection, Postgres};

use crate::session::Sessions;
use crate::{Result, StoreError};

/// How PostgreSQL's time partitions are laid out; SQLite has none and
/// ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionLayout {
    /// The length of one partition's range.
    pub period: PartitionPeriod,
    /// Periods created ahead of the current one.
    pub ahead: u32,
}

impl Default for PartitionLayout {
    fn default() -> Self {
        Self { period: PartitionPeriod::Day, ahead: 7 }
    }
}

/// The length of one partition's range, in UTC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PartitionPeriod {
    /// From midnight to midnight.
    #[default]
    Day,
    /// From Monday's midnight to the next Monday's.
    Week,
}

/// The advisory lock partition work takes (an arbitrary constant: "edihubPa").
pub(crate) const PARTITION_LOCK: i64 = 0x6564_6968_7562_5061;

/// A family of tables partitioned with the same bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `messages`, `deliveries`, `delivery_attempts`, on the message id.
    Messages,
    /// `audit_events`, on `occurred_at`.
    Audit,
}

impl Family {
    /// The partitioned tables, the first one the family's leader.
    pub(crate) fn tables(self) -> &'static [&'static str] {
        match self {
            Family::Messages => &["messages", "deliveries", "delivery_attempts"],
            Family::Audit => &["audit_events"],
        }
    }

    /// The family of a partitioned table.
    pub(crate) fn of(table: &str) -> Option<Family> {
        match table {
            "messages" | "deliveries" | "delivery_attempts" => Some(Family::Messages),
            "audit_events" => Some(Family::Audit),
            _ => None,
        }
    }

    /// The partition key's literal for the instant `at`.
    fn literal(self, at: DateTime<Utc>) -> String {
        match self {
            Family::Messages => format!("'{}'", first_id_at(at)),
            Family::Audit => format!("'{}'", at.format("%Y-%m-%d %H:%M:%S+00")),
        }
    }

    /// The instant a partition key's text (as PostgreSQL prints it in a
    /// bound or an error) stands for; `None` if it is not one.
    pub(crate) fn instant(self, text: &str) -> Option<DateTime<Utc>> {
        let text = text.trim().trim_matches('\'');
        match self {
            Family::Messages => {
                let hex: String = text.chars().filter(|c| *c != '-').take(12).collect();
                let ms = i64::from_str_radix(&hex, 16).ok()?;
                Utc.timestamp_millis_opt(ms).single()
            }
            Family::Audit => {
                DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%#z").ok().map(|t| t.with_timezone(&Utc))
            }
        }
    }
}

/// One partition of a family's leader and its range; `None` is MINVALUE
/// (or MAXVALUE).
#[derive(Debug, Clone)]
pub(crate) struct Partition {
    /// The partition's table name.
    pub(crate) name: String,
    /// Its lower bound.
    pub(crate) from: Option<DateTime<Utc>>,
    /// Its upper bound (exclusive).
    pub(crate) to: Option<DateTime<Utc>>,
}

/// The first instant of the period holding `at`.
pub(crate) fn period_start(period: PartitionPeriod, at: DateTime<Utc>) -> DateTime<Utc> {
    let day = at.date_naive();
    let day = match period {
        PartitionPeriod::Day => day,
        PartitionPeriod::Week => day - Duration::days(i64::from(day.weekday().num_days_from_monday())),
    };
    Utc.from_utc_datetime(&day.and_time(NaiveTime::MIN))
}

/// The first message id of millisecond `at`: the bound of a messages
/// partition, and of any id range by receive time (UUIDv7).
pub(crate) fn first_id_at(at: DateTime<Utc>) -> uuid::Uuid {
    uuid::Uuid::from_u128(u128::from(at.timestamp_millis().max(0).unsigned_abs()) << 80)
}

/// The first instant of the period after the one holding `at`.
fn period_end(period: PartitionPeriod, at: DateTime<Utc>) -> DateTime<Utc> {
    let start = period_start(period, at);
    match period {
        PartitionPeriod::Day => start + Duration::days(1),
        PartitionPeriod::Week => start + Duration::days(7),
    }
}

/// The partitions of `table` (of `family`), from the catalog.
pub(crate) async fn list(conn: &mut PgConnection, family: Family, table: &str) -> Result<Vec<Partition>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i \
         JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|(name, bound)| parse_bound(family, name, &bound)).collect())
}

/// A partition from its bound's text: `FOR VALUES FROM (…) TO (…)`.
fn parse_bound(family: Family, name: String, bound: &str) -> Partition {
    let value = |after: &str| {
        let rest = &bound[bound.find(after)? + after.len()..];
        family.instant(&rest[..rest.find(')')?])
    };
    Partition { name, from: value("FROM ("), to: value("TO (") }
}

/// The range to create so that `at` has a partition: its period, clipped
/// to the partitions around it; `None` if one holds `at` already.
fn gap(
    period: PartitionPeriod,
    parts: &[Partition],
    at: DateTime<Utc>,
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let holds = |p: &Partition| p.from.is_none_or(|f| f <= at) && p.to.is_none_or(|t| at < t);
    if parts.iter().any(holds) {
        return None;
    }
    let mut from = period_start(period, at);
    let mut to = period_end(period, at);
    for p in parts {
        if let Some(t) = p.to.filter(|t| *t <= at && *t > from) {
            from = t;
        }
        if let Some(f) = p.from.filter(|f| *f > at && *f < to) {
            to = f;
        }
    }
    Some((from, to))
}

/// Creates the partitions of `family` covering `at` where a table lacks
/// one; true when it created any. Takes the partition lock: run it in a
/// transaction.
pub(crate) async fn ensure(
    conn: &mut PgConnection,
    layout: PartitionLayout,
    family: Family,
    at: DateTime<Utc>,
) -> Result<bool> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(PARTITION_LOCK).execute(&mut *conn).await?;
    let mut created = false;
    for table in family.tables() {
        let parts = list(conn, family, table).await?;
        let Some((from, to)) = gap(layout.period, &parts, at) else { continue };
        let name = format!("{table}_p{}", from.format("%Y%m%d"));
        let (lo, hi) = (family.literal(from), family.literal(to));
        let ddl = format!(
            "CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING COMPRESSION INCLUDING STORAGE); \
             ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})"
        );
        sqlx::raw_sql(AssertSqlSafe(ddl)).execute(&mut *conn).await?;
        tracing::info!(partition = %name, %from, %to, "partition created");
        created = true;
    }
    Ok(created)
}

/// The instants whose partitions should exist at `now`: one in each of the
/// current and the next `ahead` periods.
pub(crate) fn wanted(layout: PartitionLayout, now: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let mut at = period_start(layout.period, now);
    let mut all = Vec::new();
    for _ in 0..=layout.ahead {
        all.push(at);
        at = period_end(layout.period, at);
    }
    all
}

/// Creates the partitions of the current and the next `layout.ahead`
/// periods that do not exist yet; returns how many ranges it created.
pub(crate) async fn create_ahead(
    sessions: &Sessions<Postgres>,
    now: DateTime<Utc>,
    layout: PartitionLayout,
) -> Result<u64> {
    let mut created = 0;
    let mut tx = sessions.begin().await?;
    for at in wanted(layout, now) {
        for family in [Family::Messages, Family::Audit] {
            created += u64::from(ensure(&mut tx, layout, family, at).await?);
        }
    }
    tx.commit().await?;
    Ok(created)
}

/// Creates the partition a unit of work that failed with `e` lacked (a row
/// that found no partition); true when it did, so the work may run again.
pub(crate) async fn create_missing(
    sessions: &Sessions<Postgres>,
    e: &StoreError,
    layout: PartitionLayout,
) -> Result<bool> {
    let Some((table, key)) = e.missing_partition() else { return Ok(false) };
    let Some(family) = Family::of(&table) else { return Ok(false) };
    let Some(at) = family.instant(&key) else { return Ok(false) };
    let mut tx = sessions.begin().await?;
    ensure(&mut tx, layout, family, at).await?;
    tx.commit().await?;
    // Created now or by another replica meanwhile: either way it exists.
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_default()
    }

    #[test]
    fn a_message_bound_is_the_uuid_of_the_periods_first_millisecond() {
        let t = at("2026-12-01T00:00:00Z");
        let lit = Family::Messages.literal(t);
        assert_eq!(
            lit,
            format!("'{}'", uuid::Uuid::from_u128(u128::from(t.timestamp_millis() as u64) << 80))
        );
        assert_eq!(Family::Messages.instant(&lit), Some(t));
        assert_eq!(Family::Audit.instant("2026-12-01 10:00:00.5+00"), Some(at("2026-12-01T10:00:00.5Z")));
    }

    #[test]
    fn weeks_start_on_monday_and_a_gap_is_clipped_to_its_neighbours() {
        // 2026-12-03 is a Thursday.
        assert_eq!(
            period_start(PartitionPeriod::Week, at("2026-12-03T05:00:00Z")),
            at("2026-11-30T00:00:00Z")
        );
        let parts = vec![
            Partition { name: "i".into(), from: None, to: Some(at("2026-12-02T00:00:00Z")) },
            Partition { name: "n".into(), from: Some(at("2026-12-05T00:00:00Z")), to: None },
        ];
        let gap = gap(PartitionPeriod::Week, &parts, at("2026-12-03T05:00:00Z"));
        assert_eq!(gap, Some((at("2026-12-02T00:00:00Z"), at("2026-12-05T00:00:00Z"))));
        assert_eq!(super::gap(PartitionPeriod::Day, &parts, at("2026-12-01T05:00:00Z")), None);
    }
}

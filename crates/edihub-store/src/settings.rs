//! How a store connects: its pool's size and what sits between edihub and
//! PostgreSQL, and the layout of PostgreSQL's time partitions; read from the
//! hub's `database_*` configuration.

use std::time::Duration;

use crate::PartitionLayout;

/// Pool sizing shared by both backends.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Most connections the pool opens (SQLite caps this at 8).
    pub max_connections: u32,
    /// How long a request waits for a connection before the store reports
    /// itself unavailable.
    pub acquire_timeout: Duration,
    /// What sits between edihub and PostgreSQL.
    pub pooler: Pooler,
    /// PostgreSQL's time partitions (SQLite has none).
    pub partitions: PartitionLayout,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
            pooler: Pooler::None,
            partitions: PartitionLayout::default(),
        }
    }
}

/// What sits between edihub and its PostgreSQL server (see the `session`
/// module).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pooler {
    /// Nothing, or a pooler in session mode: a connection is one server
    /// session, so statements stay prepared on it.
    #[default]
    None,
    /// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`),
    /// which lends a server connection for one transaction: every unit of
    /// work is a transaction, and no prepared statement outlives it.
    Transaction,
}

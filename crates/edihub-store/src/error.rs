//! The store's one error type.
//!
//! Callers mostly need to tell three things apart: the database is unreachable
//! or failing (a 503 for the sender, who will retry), the data broke an
//! invariant we rely on (a bug: 500), or a configuration value could not be
//! used. Unique violations never surface here: the ingest path turns them into
//! "duplicate" outcomes itself.

/// Everything that can go wrong inside a [`crate::Store`].
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database driver failed (connection lost, timeout, constraint we did not expect).
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the schema migrations failed.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored JSON column did not have the expected shape.
    #[error("stored JSON is invalid: {0}")]
    Json(#[from] serde_json::Error),
    /// The database URL names a scheme we do not support.
    #[error("unsupported database URL `{0}`: use sqlite://… or postgres://…")]
    UnsupportedUrl(String),
    /// A transaction pooler was configured for a database that has no
    /// server (SQLite).
    #[error("a transaction pooler applies to PostgreSQL only, not to an SQLite file")]
    PoolerWithoutServer,
    /// The group audit did not commit a batch's duplicate or repeat events
    /// (its statement failed, the cause logged by its writer, or the writer
    /// has ended): those requests fall back to a transaction of their own.
    #[error("group audit not written: {0}")]
    GroupAuditNotWritten(&'static str),
    /// An invariant of the schema did not hold (a bug, never caused by input).
    #[error("store invariant violated: {0}")]
    Invariant(String),
}

impl StoreError {
    /// True when the database could not be reached or the pool timed out: the
    /// request may succeed if the sender retries later.
    pub fn is_unavailable(&self) -> bool {
        // PostgreSQL shutting down or starting up (57P0x), connection
        // failures (08xxx), too many connections (53300).
        if let StoreError::Database(sqlx::Error::Database(db)) = self
            && let Some(code) = db.code()
            && (code.starts_with("57P") || code.starts_with("08") || code == "53300")
        {
            return true;
        }
        matches!(
            self,
            StoreError::Database(
                sqlx::Error::Io(_)
                    | sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::Protocol(_)
            )
        ) || self.is_transient()
    }

    /// True for errors a retry of the same transaction can cure: PostgreSQL
    /// deadlocks (40P01) and serialization failures (40001), SQLite busy.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("40P01" | "40001" | "5" | "6" | "517"))
            }
            _ => false,
        }
    }
}

impl StoreError {
    /// A row that found no partition (PostgreSQL's "no partition of
    /// relation … found for row", SQLSTATE 23514): the partitioned table and
    /// the text of the row's partition key, from the error's detail
    /// ("Partition key of the failing row contains (id) = (…).").
    pub(crate) fn missing_partition(&self) -> Option<(String, String)> {
        let StoreError::Database(sqlx::Error::Database(db)) = self else { return None };
        if db.code().as_deref() != Some("23514") || !db.message().starts_with("no partition of relation") {
            return None;
        }
        let pg = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()?;
        let key = pg.detail()?.rsplit_once(") = (")?.1;
        let key = key.strip_suffix(").").or_else(|| key.strip_suffix(')')).unwrap_or(key);
        Some((pg.table()?.to_string(), key.to_string()))
    }
}

/// Shorthand for store results.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

//! Test support: a fresh, migrated database per test, on either backend.
//!
//! PostgreSQL tests create their own database (`edihub_t_<uuid>`) on the
//! server named by `EDIHUB_TEST_DATABASE_URL`, else `DATABASE_URL` when it is a
//! PostgreSQL URL, else `postgres://postgres@127.0.0.1:5432/postgres`, and drop
//! it afterwards. `make test` makes sure such a server exists. SQLite tests use
//! a file in the temp directory, removed on drop. With `EDIHUB_TEST_POOLER_URL`
//! (PgBouncer in transaction mode in front of that server), the stores
//! connect through the pooler instead, as [`crate::Pooler::Transaction`].

use std::sync::Arc;

use sqlx::Connection;

use crate::{PartitionLayout, PoolSettings, Pooler, Store};

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file.
    Sqlite,
    /// A database on the test PostgreSQL server.
    Postgres,
}

/// A throwaway database; removed when dropped.
#[derive(Debug)]
pub struct TestDb {
    /// URL of the database (what edihub's `database_url` would be).
    pub url: String,
    /// Which backend it is.
    pub backend: Backend,
    /// The database's name (PostgreSQL) or file stem (SQLite).
    pub(crate) name: String,
}

/// The PostgreSQL server tests create their databases on.
pub fn pg_admin_url() -> String {
    if let Ok(url) = std::env::var("EDIHUB_TEST_DATABASE_URL") {
        return url;
    }
    match std::env::var("DATABASE_URL") {
        Ok(url) if url.starts_with("postgres") => url,
        _ => "postgres://postgres@127.0.0.1:5432/postgres".to_string(),
    }
}

/// The connection pooler (PgBouncer in transaction mode) the stores of
/// PostgreSQL tests connect through, from `EDIHUB_TEST_POOLER_URL`; the
/// databases are still created and dropped on [`pg_admin_url`] directly.
pub fn pg_pooler_url() -> Option<String> {
    std::env::var("EDIHUB_TEST_POOLER_URL").ok().filter(|url| !url.is_empty())
}

/// `admin` with its database name replaced by `name`, query kept.
fn with_database(admin: &str, name: &str) -> String {
    let (main, query) = admin.split_once('?').map_or((admin, None), |(m, q)| (m, Some(q)));
    let scheme_end = main.find("://").map_or(0, |i| i + 3);
    let base = match main[scheme_end..].find('/') {
        Some(i) => &main[..scheme_end + i],
        None => main,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

impl TestDb {
    /// Creates an empty database on `backend`. Panics when PostgreSQL is
    /// unreachable: a test run without it would prove nothing.
    pub async fn new(backend: Backend) -> TestDb {
        let name = format!("edihub_t_{}", uuid::Uuid::new_v4().simple());
        match backend {
            Backend::Sqlite => {
                let path = std::env::temp_dir().join(format!("{name}.db"));
                TestDb { url: format!("sqlite://{}", path.display()), backend, name }
            }
            Backend::Postgres => {
                let admin = pg_admin_url();
                let mut conn = sqlx::PgConnection::connect(&admin)
                    .await
                    .unwrap_or_else(|e| panic!("test PostgreSQL at {admin} unreachable: {e}"));
                let sql = format!("CREATE DATABASE {name}");
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.expect("create database");
                let server = pg_pooler_url().unwrap_or(admin);
                TestDb { url: with_database(&server, &name), backend, name }
            }
        }
    }

    /// The URL of this database on the server itself, never through the
    /// test pooler: for a test's own connections, whose prepared statements
    /// a transaction pooler would not keep.
    pub fn direct_url(&self) -> String {
        match self.backend {
            Backend::Sqlite => self.url.clone(),
            Backend::Postgres => with_database(&pg_admin_url(), &self.name),
        }
    }

    /// The pool settings a store on this database needs: behind the test
    /// pooler (see [`pg_pooler_url`]), [`Pooler::Transaction`]; one
    /// partition ahead.
    pub fn pool_settings(&self) -> PoolSettings {
        let pooled = self.backend == Backend::Postgres && pg_pooler_url().is_some();
        PoolSettings {
            pooler: if pooled { Pooler::Transaction } else { Pooler::None },
            // One partition ahead, not seven: each one costs every test
            // database catalog work (seven: about a second); a check that
            // reaches further has its partitions created on demand.
            partitions: PartitionLayout { ahead: 1, ..PartitionLayout::default() },
            ..PoolSettings::default()
        }
    }

    /// Connects and migrates a store on this database.
    pub async fn store(&self) -> Arc<dyn Store> {
        let store = crate::connect(&self.url, &self.pool_settings()).await.expect("connect");
        store.migrate().await.expect("migrate");
        store
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match self.backend {
            Backend::Sqlite => {
                let path = std::env::temp_dir().join(format!("{}.db", self.name));
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.clone().into_os_string();
                    p.push(suffix);
                    let _ = std::fs::remove_file(p);
                }
            }
            Backend::Postgres => {
                // Drop is synchronous; run the DROP on a private runtime in a
                // thread so it works inside and outside a tokio test.
                let name = self.name.clone();
                let _ = std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
                    if let Ok(rt) = rt {
                        rt.block_on(async {
                            if let Ok(mut conn) = sqlx::PgConnection::connect(&pg_admin_url()).await {
                                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                                let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await;
                            }
                        });
                    }
                })
                .join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_name_is_replaced_and_query_kept() {
        assert_eq!(with_database("postgres://u@h:5432/postgres", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
        assert_eq!(with_database("postgres:///postgres?host=/tmp/s", "x"), "postgres:///x?host=/tmp/s");
    }
}

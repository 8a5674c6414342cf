//! Test support: a fresh, migrated database per test, on either backend.
//!
//! PostgreSQL tests create their own database (`edihub_t_<uuid>`) on the
//! server named by `EDIHUB_TEST_DATABASE_URL`, else `DATABASE_URL` when it is a
//! PostgreSQL URL, else `postgres://postgres@127.0.0.1:5432/postgres`, and drop
//! it afterwards. `make test` makes sure such a server exists. SQLite tests use
//! a file in the temp directory, removed on drop.

use std::sync::Arc;

use sqlx::Connection;

use crate::{PoolSettings, Store};

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
    name: String,
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
                TestDb { url: with_database(&admin, &name), backend, name }
            }
        }
    }

    /// Connects and migrates a store on this database.
    pub async fn store(&self) -> Arc<dyn Store> {
        let store = crate::connect(&self.url, &PoolSettings::default()).await.expect("connect");
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

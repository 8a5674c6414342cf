//! PostgreSQL's schema migrations (`migrations/postgres`), connected
//! directly or behind a transaction pooler.

use sqlx::{PgConnection, Postgres};

use crate::Result;
use crate::session::Sessions;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// Applies the pending migrations. Behind a transaction pooler, the
/// migrator's session advisory lock would stay on whichever server
/// connection took it (and its unlock could go to another): all migrations
/// then run in one transaction (see [`migrate_in`]).
pub(crate) async fn run(db: &Sessions<Postgres>) -> Result<()> {
    if !db.is_pinned() {
        return Ok(MIGRATOR.run(&db.pool).await?);
    }
    let mut tx = db.begin().await?;
    migrate_in(&mut tx).await?;
    Ok(tx.commit().await?)
}

/// Applies the pending migrations inside the caller's transaction `conn`,
/// each in a savepoint, with a transaction-scoped lock in place of the
/// session lock sqlx's migrator takes.
async fn migrate_in(conn: &mut PgConnection) -> Result<()> {
    let (database,): (String,) = sqlx::query_as("SELECT current_database()").fetch_one(&mut *conn).await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(migration_lock_key(&database))
        .execute(&mut *conn)
        .await?;
    let mut migrator = sqlx::migrate::Migrator::with_migrations(MIGRATOR.iter().cloned().collect());
    migrator.set_locking(false);
    // `run_direct` is what `run` calls for a connection (public, though
    // hidden from sqlx's docs); `run` itself does not compile inside a
    // `Send` future here (sqlx's "`Acquire` is not general enough").
    Ok(migrator.run_direct(None, conn, false).await?)
}

/// The key of the advisory lock migrations take: the one sqlx's migrator
/// takes for `database` (`0x3d32ad9e` times the CRC-32 of its name), so a
/// replica connected directly and one behind a pooler exclude each other.
fn migration_lock_key(database: &str) -> i64 {
    0x3d32_ad9e * i64::from(crc32(database.as_bytes()))
}

/// CRC-32 (the IEEE polynomial, as in zlib), bit by bit: it runs once per
/// migration.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::{crc32, migration_lock_key};

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn migration_lock_key_is_sqlxs() {
        // 0x3d32ad9e times zlib's crc32(b"postgres") = 0x156a8775, computed
        // apart from this code (Python's `zlib.crc32`).
        assert_eq!(migration_lock_key("postgres"), 368_907_709_894_077_238);
    }
}

//! Large payloads reach PostgreSQL by `COPY`, not as a bound parameter.
//!
//! A bound parameter is copied twice inside edihub before it is sent: into
//! the statement's arguments, then with them into the connection's write
//! buffer, which sqlx sizes a few bytes short of a Bind message and so
//! doubles past the payload: a 10 MB IDoc bound as a parameter holds 30 MB
//! or more beside the request's own buffer while it is stored.
//! `COPY … FROM STDIN` instead sends the payload in `CopyData` messages of
//! [`CHUNK`] bytes, each written from the request's buffer and flushed, so
//! the payload is held once.
//!
//! The payloads go to a temporary table of the transaction (`ON COMMIT
//! DROP`, which PgBouncer's transaction pooling allows), compressed there
//! as `messages` compresses them, so that the insert statement, which reads
//! the payload of a row that bound none from it (`insert`), stores the
//! compressed value as it is. The rows are deleted once the insert has
//! run, so the next insert round of the transaction starts from an empty
//! table. Every caller of the insert runs it in a transaction, and a
//! request with a large payload in a task of its own, never cancelled (a
//! SAP status IDoc, stored by a batcher that is never cancelled either, is
//! far below the size). The table needs the `TEMPORARY` privilege on the
//! database, which PostgreSQL grants to every role unless it is revoked.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::ingest::LARGE_PAYLOAD;
use crate::ingest::statements::Row;
use crate::{Result, StoreError};

/// Bytes of a payload sent in one `CopyData` message (and held at once in
/// the connection's write buffer).
const CHUNK: usize = 256 * 1024;

/// What the insert reads for `messages.payload` once payloads were
/// uploaded: the bound payload, or the row's upload where it bound none.
pub(super) const UPLOADED_PAYLOAD: &str =
    "COALESCE(payload, (SELECT u.payload FROM pg_temp.edihub_upload u WHERE u.id = v.id))";

/// Creates the transaction's upload table unless it exists, its payload
/// column compressed as `messages.payload` is (lz4 where the server has
/// it, migration 0004). PostgreSQL keeps a value compressed as it comes
/// when it is copied into another table, so the insert stores the upload
/// as it was compressed here, and the payload is compressed once.
const OPEN_UPLOAD: &str = "DO $$ BEGIN \
    IF to_regclass('pg_temp.edihub_upload') IS NULL THEN \
        EXECUTE format('CREATE TEMP TABLE edihub_upload (id UUID NOT NULL, payload BYTEA %s NOT NULL) \
            ON COMMIT DROP', (SELECT CASE attcompression WHEN 'l' THEN 'COMPRESSION lz4' \
            WHEN 'p' THEN 'COMPRESSION pglz' ELSE '' END FROM pg_attribute \
            WHERE attrelid = 'messages'::regclass AND attname = 'payload')); \
    END IF; \
END $$";

/// The signature, flags and header extension of PostgreSQL's binary `COPY`
/// format (the documentation of `COPY`, "Binary Format").
const BINARY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// Whether `row` sends its payload by [`upload`] rather than binding it: a
/// large one, whose request settles in a task that cannot be cut off
/// midway (`SqlStore::ingest_detached`), so no copy is left half sent.
pub(super) fn is_uploaded(row: &Row<'_>) -> bool {
    row.stored_payload().len() >= LARGE_PAYLOAD
}

/// Uploads the payloads of the `rows` that [`is_uploaded`] (none: nothing
/// is sent). Returns whether any was.
pub(super) async fn upload(conn: &mut PgConnection, rows: &[Row<'_>]) -> Result<bool> {
    let large: Vec<&Row<'_>> = rows.iter().filter(|r| is_uploaded(r)).collect();
    if large.is_empty() {
        return Ok(false);
    }
    sqlx::raw_sql(OPEN_UPLOAD).execute(&mut *conn).await?;
    let mut copy =
        conn.copy_in_raw("COPY pg_temp.edihub_upload (id, payload) FROM STDIN (FORMAT binary)").await?;
    copy.send(BINARY_HEADER).await?;
    for row in large {
        let payload = row.stored_payload();
        copy.send(tuple_head(row.message.id, payload.len())?).await?;
        for chunk in payload.chunks(CHUNK) {
            copy.send(chunk).await?;
        }
    }
    // The trailer: a field count of -1.
    copy.send(&(-1i16).to_be_bytes()[..]).await?;
    copy.finish().await?;
    Ok(true)
}

/// Empties the table [`upload`] filled, once the insert has read it.
pub(super) async fn clear(conn: &mut PgConnection) -> Result<()> {
    sqlx::raw_sql("DELETE FROM pg_temp.edihub_upload").execute(conn).await?;
    Ok(())
}

/// A binary tuple's start: two fields, the id (16 bytes) and the length of
/// the payload that follows.
fn tuple_head(id: Uuid, payload_len: usize) -> Result<Vec<u8>> {
    let len = i32::try_from(payload_len).map_err(|_| {
        StoreError::Invariant(format!("a payload of {payload_len} bytes is over PostgreSQL's limit"))
    })?;
    let mut head = Vec::with_capacity(2 + 4 + 16 + 4);
    head.extend_from_slice(&2i16.to_be_bytes());
    head.extend_from_slice(&16i32.to_be_bytes());
    head.extend_from_slice(id.as_bytes());
    head.extend_from_slice(&len.to_be_bytes());
    Ok(head)
}

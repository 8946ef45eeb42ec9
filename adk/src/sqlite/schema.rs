//! Opening connections: the pragmas every connection gets and the versioned schema the writer
//! creates or upgrades on open.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::storage::StorageError;

use super::error::{SqliteError, backend};

/// The newest schema version this code writes and reads (`PRAGMA user_version`).
///
/// - 1: the six primitive tables keyed by (conversation, id), and bytes keyed by
///   (conduit, id) across all conversations.
/// - 2: every record and every byte keyed by its owner — app, user, conversation (session)
///   and thread — so no partition reads or replaces another's; a streamed byte write is staged
///   in rows no lookup sees until it is complete.
pub(super) const SCHEMA_VERSION: i64 = 2;

/// The six primitive tables. They share one shape; for standing instructions, which have no id,
/// `id` holds the instruction's text.
pub(super) const PRIMITIVE_TABLES: [&str; 6] = [
    "memories",
    "messages",
    "thoughts",
    "tool_calls",
    "retrievables",
    "standing_instructions",
];

// How long a connection waits for another process's lock before giving up with SQLITE_BUSY.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

// Every record statement is prepared once per connection and cached: six tables times a few
// statements each, plus the byte conduits', is more than rusqlite's default of 16.
const STATEMENT_CACHE: usize = 64;

// A staged stream older than this when a database is opened belongs to a process that died
// mid-upload: its rows are removed. The margin keeps a second handle on the same file (in this
// or another process) from removing a stream that is still arriving.
pub(super) const ABANDONED_STAGING_AGE_SECONDS: i64 = 60 * 60;

// One primitive table (schema 2). `sequence` is the insertion order fetches return; an UPDATE
// keeps it, so a mutated record keeps its place. A new row always gets a sequence above every
// existing one.
fn primitive_table(table: &str) -> String {
    format!(
        "CREATE TABLE {table} (
            sequence INTEGER PRIMARY KEY,
            app_name TEXT NOT NULL,
            user_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            record TEXT NOT NULL,
            UNIQUE (app_name, user_id, conversation_id, thread_id, id)
         );\n"
    )
}

fn primitive_index(table: &str) -> String {
    format!(
        "CREATE INDEX {table}_in_order
            ON {table} (app_name, user_id, conversation_id, thread_id, sequence);\n"
    )
}

// Schema 2's byte tables. `staged_at` is set while a streamed write is arriving (the row is
// then invisible to lookups) and cleared when the write completes; the unique index covers only
// completed bytes, so a staged write never collides with the bytes it is about to replace.
// AUTOINCREMENT so a rewritten blob never reuses the key of the one it replaced: a reader part-way
// through the old bytes then finds them gone instead of mixing two versions.
const BLOBS_TABLE: &str = "CREATE TABLE blobs (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    conduit TEXT NOT NULL,
    id TEXT NOT NULL,
    byte_length INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    staged_at INTEGER
 );\n";
const BLOB_INDEXES: &str = "CREATE UNIQUE INDEX blobs_by_owner
    ON blobs (app_name, user_id, conversation_id, thread_id, conduit, id)
    WHERE staged_at IS NULL;
 CREATE INDEX blobs_staged ON blobs (staged_at) WHERE staged_at IS NOT NULL;\n";
const BLOB_CHUNKS_TABLE: &str = "CREATE TABLE blob_chunks (
    blob_key INTEGER NOT NULL REFERENCES blobs (key) ON DELETE CASCADE,
    sequence INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (blob_key, sequence)
 ) WITHOUT ROWID;\n";

pub(super) fn open_writer(path: &Path) -> Result<Connection, StorageError> {
    let mut connection = Connection::open(path).map_err(backend(format!("opening {path:?}")))?;
    connection
        .busy_timeout(BUSY_TIMEOUT)
        .map_err(backend("setting the busy timeout"))?;
    let journal_mode: String = connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(backend("switching to WAL mode"))?;
    if !journal_mode.eq_ignore_ascii_case("wal") {
        return Err(StorageError::backend(format!(
            "SQLite refused WAL mode for {path:?} (journal mode is `{journal_mode}`); \
             use a file on a local file system"
        )));
    }
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .map_err(backend("setting synchronous=NORMAL"))?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(backend("enabling foreign keys"))?;
    migrate(&mut connection, path)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(connection)
}

/// A private in-memory database: no file, no WAL, one connection that both writes and reads.
pub(super) fn open_in_memory() -> Result<Connection, StorageError> {
    let mut connection =
        Connection::open_in_memory().map_err(backend("opening an in-memory database"))?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(backend("enabling foreign keys"))?;
    migrate(&mut connection, Path::new(":memory:"))?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(connection)
}

pub(super) fn open_reader(path: &Path) -> Result<Connection, StorageError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let connection = Connection::open_with_flags(path, flags)
        .map_err(backend(format!("opening {path:?} for reading")))?;
    connection
        .busy_timeout(BUSY_TIMEOUT)
        .map_err(backend("setting the busy timeout"))?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(backend("enabling foreign keys"))?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(connection)
}

fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StorageError> {
    // Rebuilding the `blobs` table (version 1 to 2) must not cascade into its chunks: foreign
    // keys are off for the migration (the pragma cannot change inside a transaction) and checked
    // before it commits.
    connection
        .pragma_update(None, "foreign_keys", "OFF")
        .map_err(backend("pausing foreign keys for the schema migration"))?;
    let migrated = migrate_in_transaction(connection, path);
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(backend("enabling foreign keys"))?;
    migrated?;
    remove_abandoned_staging(connection)
}

fn migrate_in_transaction(connection: &mut Connection, path: &Path) -> Result<(), StorageError> {
    let transaction = connection
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(backend("starting the schema migration"))?;
    let found: i64 = transaction
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(backend("reading the schema version"))?;
    if found > SCHEMA_VERSION {
        return Err(StorageError::backend(SqliteError::SchemaTooNew {
            path: path.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        }));
    }
    if found < 1 {
        let mut schema = String::new();
        for table in PRIMITIVE_TABLES {
            schema.push_str(&primitive_table(table));
            schema.push_str(&primitive_index(table));
        }
        schema.push_str(BLOBS_TABLE);
        schema.push_str(BLOB_CHUNKS_TABLE);
        schema.push_str(BLOB_INDEXES);
        transaction
            .execute_batch(&schema)
            .map_err(backend("creating the schema"))?;
    } else if found < 2 {
        upgrade_from_version_1(&transaction, path)?;
    }
    transaction
        .pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(backend("recording the schema version"))?;
    transaction
        .commit()
        .map_err(backend("committing the schema migration"))
}

// Version 1 kept records per conversation and bytes per (conduit, id) for every conversation,
// with the writing conversation recorded beside them. Everything it wrote was written before
// apps, users and threads existed, so it belongs to the default app, user and thread, and each
// blob to the conversation that wrote it. Every table is rebuilt (a uniqueness rule cannot be
// altered in place); keys, sequences and chunks are kept, so fetch order and readers are too.
fn upgrade_from_version_1(
    transaction: &rusqlite::Transaction<'_>,
    path: &Path,
) -> Result<(), StorageError> {
    let defaults = format!(
        "'{}', '{}'",
        crate::ids::AppName::DEFAULT,
        crate::ids::UserId::DEFAULT
    );
    let thread = format!("'{}'", crate::ids::ThreadId::MAIN);
    let mut upgrade = String::new();
    for table in PRIMITIVE_TABLES {
        upgrade.push_str(&primitive_table(&format!("{table}_v2")));
        upgrade.push_str(&format!(
            "INSERT INTO {table}_v2
                 (sequence, app_name, user_id, conversation_id, thread_id, id, turn_id, record)
                 SELECT sequence, {defaults}, conversation_id, {thread}, id, turn_id, record
                 FROM {table};
             DROP TABLE {table};
             ALTER TABLE {table}_v2 RENAME TO {table};\n"
        ));
        upgrade.push_str(&primitive_index(table));
    }
    upgrade.push_str(&BLOBS_TABLE.replacen("blobs", "blobs_v2", 1));
    upgrade.push_str(&format!(
        "INSERT INTO blobs_v2 (key, app_name, user_id, conversation_id, thread_id, conduit, id,
                               byte_length, chunk_count)
             SELECT key, {defaults}, conversation_id, {thread}, conduit, id, byte_length,
                    chunk_count
             FROM blobs;
         DROP TABLE blobs;
         ALTER TABLE blobs_v2 RENAME TO blobs;\n"
    ));
    upgrade.push_str(BLOB_INDEXES);
    transaction
        .execute_batch(&upgrade)
        .map_err(backend("upgrading the schema from version 1 to 2"))?;
    let dangling: Option<String> = transaction
        .query_row("PRAGMA foreign_key_check", [], |row| row.get(0))
        .optional()
        .map_err(backend("checking the upgraded byte tables"))?;
    if let Some(table) = dangling {
        return Err(StorageError::backend(format!(
            "upgrading {path:?} to schema version 2 left rows of `{table}` without their \
             parent; the file was not changed"
        )));
    }
    Ok(())
}

fn remove_abandoned_staging(connection: &Connection) -> Result<(), StorageError> {
    connection
        .execute(
            "DELETE FROM blobs WHERE staged_at IS NOT NULL AND staged_at < unixepoch() - ?1",
            [ABANDONED_STAGING_AGE_SECONDS],
        )
        .map_err(backend("removing abandoned staged bytes"))?;
    Ok(())
}

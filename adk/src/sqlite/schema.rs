//! Opening connections: the pragmas every connection gets and the versioned schema the writer
//! creates or upgrades on open.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::storage::StorageError;

use super::error::{SqliteError, backend};

/// The newest schema version this code writes and reads (`PRAGMA user_version`).
pub(super) const SCHEMA_VERSION: i64 = 1;

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
            // `sequence` is the insertion order fetches return; an UPDATE keeps it, so a mutated
            // record keeps its place. A new row always gets a sequence above every existing one.
            schema.push_str(&format!(
                "CREATE TABLE {table} (
                    sequence INTEGER PRIMARY KEY,
                    conversation_id TEXT NOT NULL,
                    id TEXT NOT NULL,
                    turn_id TEXT NOT NULL,
                    record TEXT NOT NULL,
                    UNIQUE (conversation_id, id)
                 );
                 CREATE INDEX {table}_in_order ON {table} (conversation_id, sequence);\n"
            ));
        }
        // AUTOINCREMENT so a rewritten blob never reuses the key of the one it replaced: a reader
        // part-way through the old bytes then finds them gone instead of mixing two versions.
        schema.push_str(
            "CREATE TABLE blobs (
                key INTEGER PRIMARY KEY AUTOINCREMENT,
                conduit TEXT NOT NULL,
                id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                byte_length INTEGER NOT NULL,
                chunk_count INTEGER NOT NULL,
                UNIQUE (conduit, id)
             );
             CREATE TABLE blob_chunks (
                blob_key INTEGER NOT NULL REFERENCES blobs (key) ON DELETE CASCADE,
                sequence INTEGER NOT NULL,
                data BLOB NOT NULL,
                PRIMARY KEY (blob_key, sequence)
             ) WITHOUT ROWID;",
        );
        transaction
            .execute_batch(&schema)
            .map_err(backend("creating the schema"))?;
    }
    transaction
        .pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(backend("recording the schema version"))?;
    transaction
        .commit()
        .map_err(backend("committing the schema migration"))
}

//! Opening connections: the pragmas every connection gets and the versioned schema the writer
//! creates or upgrades on open.

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::primitives::{Message, Thought, ToolCall, link_legacy_answers};
use crate::storage::StorageError;

use super::error::{SqliteError, backend};

/// The newest schema version this code writes and reads (`PRAGMA user_version`).
///
/// - 1: the six primitive tables keyed by (conversation, id), and bytes keyed by
///   (conduit, id) across all conversations.
/// - 2: every record and every byte keyed by its owner — app, user, conversation (session)
///   and thread — so no partition reads or replaces another's; a streamed byte write is staged
///   in rows no lookup sees until it is complete.
/// - 3: the same tables; every assistant message, thought and tool call written before records
///   carried their [`AnswerLink`](crate::primitives::AnswerLink) is given one, inferred turn by
///   turn from the records ([`link_legacy_answers`]).
/// - 4: the tool ledger, `tool_ledger` (one row per owner, turn and call id; see
///   [`crate::storage::ledger`]).
/// - 5: durable approvals, `tool_approvals` (one row per owner and call id; see
///   [`crate::storage::approvals`]).
pub(super) const SCHEMA_VERSION: i64 = 5;

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

/// Keeps up to `capacity` prepared statements cached on `connection`, and keeps them compiled:
/// turns on SQLite's query planner stability guarantee (QPSG). Without it SQLite marks a
/// statement whose plan might depend on a bound value (one that filters on `column = ?N`
/// outside its index, as the session store's middleware-record load does) to be compiled again
/// whenever its bindings are cleared, and rusqlite clears them each time a statement goes back
/// to its cache: that statement was re-prepared on every use, about a fifth of a turn's
/// instructions. adk's statements are fixed key lookups whose plans no bound value improves
/// (adk never runs `ANALYZE` and binds no `LIKE` pattern).
pub(super) fn cache_statements(
    connection: &Connection,
    capacity: usize,
) -> Result<(), StorageError> {
    connection.set_prepared_statement_cache_capacity(capacity);
    connection
        .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(backend("turning on the query planner stability guarantee"))?;
    Ok(())
}

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

/// The ledger's table (schema 4).
const LEDGER_TABLE: &str = "CREATE TABLE tool_ledger (
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    checksum TEXT NOT NULL,
    idempotency_key TEXT,
    effect TEXT NOT NULL,
    result_kind TEXT,
    result_text TEXT,
    PRIMARY KEY (app_name, user_id, conversation_id, thread_id, turn_id, call_id)
);\n";

/// The approvals' table (schema 5).
const APPROVALS_TABLE: &str = "CREATE TABLE tool_approvals (
    sequence INTEGER PRIMARY KEY,
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    prompt TEXT NOT NULL,
    decision TEXT,
    UNIQUE (app_name, user_id, conversation_id, thread_id, call_id)
);\n";

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
    // Everything that can refuse the file is read first: switching to WAL rewrites the file's
    // header, so a refused file must be turned away before it.
    refuse_unusable(&connection, path)?;
    // WAL is switched on for a new file only, and kept in the file from then on. A file with
    // tables already is one this crate made (WAL already) or google-adk's session file shared
    // with the session store (`adk web`'s keeps its rollback journal: adk does not change the
    // journal mode of a file it did not create).
    let new_file: bool = connection
        .query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table')",
            [],
            |row| row.get(0),
        )
        .map_err(backend("listing the tables already in the file"))?;
    if new_file {
        let journal_mode: String = connection
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(backend("switching to WAL mode"))?;
        if !journal_mode.eq_ignore_ascii_case("wal") {
            return Err(StorageError::backend(format!(
                "SQLite refused WAL mode for {path:?} (journal mode is `{journal_mode}`); \
                 use a file on a local file system"
            )));
        }
    }
    let journal_mode: String = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .map_err(backend("reading the journal mode"))?;
    // Safe from corruption in WAL mode only; another mode keeps SQLite's default (FULL).
    if journal_mode.eq_ignore_ascii_case("wal") {
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend("setting synchronous=NORMAL"))?;
    }
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(backend("enabling foreign keys"))?;
    migrate(&mut connection, path)?;
    cache_statements(&connection, STATEMENT_CACHE)?;
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
    cache_statements(&connection, STATEMENT_CACHE)?;
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
    cache_statements(&connection, STATEMENT_CACHE)?;
    Ok(connection)
}

// The tables `SqliteSessionStore` creates. A file it opened first (its schema has no
// `user_version`) may be shared with the storage, so these are adk's own when the store's marker
// table `adk_rs_middleware_state` is among them.
const SESSION_STORE_TABLES: [&str; 7] = [
    "adk_internal_metadata",
    "app_states",
    "user_states",
    "sessions",
    "events",
    "adk_rs_middleware_state",
    "adk_rs_thread_forks",
];

/// Refuses, with read-only queries only, a file this code must not write: one whose schema is
/// newer than [`SCHEMA_VERSION`], or one without a schema version that already holds tables adk
/// did not create (another program's database).
fn refuse_unusable(connection: &Connection, path: &Path) -> Result<(), StorageError> {
    let found = schema_version_at_most_ours(connection, path)?;
    if found > 0 {
        return Ok(());
    }
    let tables = connection
        .prepare(
            "SELECT name FROM sqlite_master
             WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
             ORDER BY name",
        )
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(backend("listing the tables already in the file"))?;
    let shared_with_sessions = tables
        .iter()
        .any(|table| table == "adk_rs_middleware_state");
    let foreign = tables.into_iter().find(|table| {
        let ours = PRIMITIVE_TABLES.contains(&table.as_str())
            || table == "blobs"
            || table == "blob_chunks"
            || table == "tool_ledger"
            || (shared_with_sessions && SESSION_STORE_TABLES.contains(&table.as_str()));
        !ours
    });
    match foreign {
        Some(table) => Err(StorageError::backend(SqliteError::ForeignTables {
            path: path.to_owned(),
            table,
        })),
        None => Ok(()),
    }
}

/// The file's schema version (`PRAGMA user_version`, a read), refused when it is newer than
/// [`SCHEMA_VERSION`]. Read before anything is written and again inside the migration's
/// transaction, since another process may migrate the file in between.
fn schema_version_at_most_ours(connection: &Connection, path: &Path) -> Result<i64, StorageError> {
    let found: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(backend("reading the schema version"))?;
    if found > SCHEMA_VERSION {
        return Err(StorageError::backend(SqliteError::SchemaTooNew {
            path: path.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        }));
    }
    Ok(found)
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
    let found = schema_version_at_most_ours(&transaction, path)?;
    if found < 1 {
        let mut schema = String::new();
        for table in PRIMITIVE_TABLES {
            schema.push_str(&primitive_table(table));
            schema.push_str(&primitive_index(table));
        }
        schema.push_str(BLOBS_TABLE);
        schema.push_str(BLOB_CHUNKS_TABLE);
        schema.push_str(BLOB_INDEXES);
        schema.push_str(LEDGER_TABLE);
        schema.push_str(APPROVALS_TABLE);
        transaction
            .execute_batch(&schema)
            .map_err(backend("creating the schema"))?;
    } else {
        if found < 2 {
            upgrade_from_version_1(&transaction, path)?;
        }
        if found < 3 {
            link_legacy_rows(&transaction)?;
        }
        if found < 4 {
            transaction
                .execute_batch(LEDGER_TABLE)
                .map_err(backend("creating the tool ledger"))?;
        }
        if found < 5 {
            transaction
                .execute_batch(APPROVALS_TABLE)
                .map_err(backend("creating the approvals table"))?;
        }
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

// Version 3: rows written before records carried answer links get them, so an answer whose
// tool calls were written before its text reads back in the order the model produced it. Turn by
// turn (an answer never spans two), in each table's insertion order; each row given a link is
// rewritten in place (same sequence). A turn holding a row that does not read back as its
// record is left as it was: fetching it reports the problem, as it did before.
fn link_legacy_rows(transaction: &rusqlite::Transaction<'_>) -> Result<(), StorageError> {
    let operation = "linking the answers of rows written before schema version 3";
    let turns: Vec<[String; 5]> = {
        let mut statement = transaction
            .prepare(
                "SELECT app_name, user_id, conversation_id, thread_id, turn_id FROM messages
                 UNION SELECT app_name, user_id, conversation_id, thread_id, turn_id FROM thoughts
                 UNION SELECT app_name, user_id, conversation_id, thread_id, turn_id
                       FROM tool_calls",
            )
            .map_err(backend(operation))?;
        let rows = statement
            .query_map([], |row| {
                Ok([
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ])
            })
            .map_err(backend(operation))?;
        rows.collect::<Result<_, _>>().map_err(backend(operation))?
    };
    for turn in turns {
        let (
            Some((message_rows, mut messages)),
            Some((thought_rows, mut thoughts)),
            Some((call_rows, mut calls)),
        ) = (
            turn_rows::<Message>(transaction, "messages", &turn)?,
            turn_rows::<Thought>(transaction, "thoughts", &turn)?,
            turn_rows::<ToolCall>(transaction, "tool_calls", &turn)?,
        )
        else {
            continue;
        };
        let prefix = format!("legacy/{}/", turn[4]);
        let Ok(linked) = link_legacy_answers(&prefix, &mut messages, &mut thoughts, &mut calls)
        else {
            continue;
        };
        for index in linked.messages {
            rewrite(
                transaction,
                "messages",
                message_rows[index],
                &messages[index],
            )?;
        }
        for index in linked.thoughts {
            rewrite(
                transaction,
                "thoughts",
                thought_rows[index],
                &thoughts[index],
            )?;
        }
        for index in linked.tool_calls {
            rewrite(transaction, "tool_calls", call_rows[index], &calls[index])?;
        }
    }
    Ok(())
}

// One turn's rows of `table`: their sequences and records, in insertion order; `None` when one
// of them does not read back as a record.
type Rows<Record> = (Vec<i64>, Vec<Record>);

fn turn_rows<Record: serde::de::DeserializeOwned>(
    transaction: &rusqlite::Transaction<'_>,
    table: &str,
    turn: &[String; 5],
) -> Result<Option<Rows<Record>>, StorageError> {
    let operation = "reading rows written before schema version 3";
    let mut statement = transaction
        .prepare(&format!(
            "SELECT sequence, record FROM {table}
             WHERE app_name = ?1 AND user_id = ?2 AND conversation_id = ?3 AND thread_id = ?4
               AND turn_id = ?5
             ORDER BY sequence"
        ))
        .map_err(backend(operation))?;
    let rows = statement
        .query_map(rusqlite::params_from_iter(turn), |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(backend(operation))?;
    let (mut sequences, mut records) = (Vec::new(), Vec::new());
    for row in rows {
        let (sequence, json) = row.map_err(backend(operation))?;
        match serde_json::from_str(&json) {
            Ok(record) => {
                sequences.push(sequence);
                records.push(record);
            }
            Err(_) => return Ok(None),
        }
    }
    Ok(Some((sequences, records)))
}

fn rewrite<Record: serde::Serialize>(
    transaction: &rusqlite::Transaction<'_>,
    table: &str,
    sequence: i64,
    record: &Record,
) -> Result<(), StorageError> {
    let operation = "rewriting a row with its answer link";
    let json = serde_json::to_string(record)
        .map_err(|error| StorageError::backend(format!("{operation}: {error}")))?;
    transaction
        .execute(
            &format!("UPDATE {table} SET record = ?1 WHERE sequence = ?2"),
            rusqlite::params![json, sequence],
        )
        .map_err(backend(operation))?;
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

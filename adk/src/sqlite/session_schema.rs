//! The session store's tables in a SQLite file: Google ADK's v1 layout and adk's own, created
//! or checked when a [`SqliteSessionStore`](super::SqliteSessionStore) opens its connection.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::error::SqliteError;
use super::session_events::TimeColumns;
use crate::storage::StorageError;

// Google ADK's v1 tables, created in a new file and completed in a v1 file; never in a
// `SqliteSessionService` file, whose own tables are used as they are.
const ADK_V1_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS adk_internal_metadata (\"key\" VARCHAR(128) PRIMARY KEY, value VARCHAR(256) NOT NULL);
CREATE TABLE IF NOT EXISTS app_states (app_name VARCHAR(128) PRIMARY KEY, state TEXT NOT NULL, update_time DATETIME NOT NULL);
CREATE TABLE IF NOT EXISTS user_states (app_name VARCHAR(128), user_id VARCHAR(128), state TEXT NOT NULL, update_time DATETIME NOT NULL,
    PRIMARY KEY (app_name, user_id));
CREATE TABLE IF NOT EXISTS sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128), state TEXT NOT NULL,
    create_time DATETIME NOT NULL, update_time DATETIME NOT NULL, PRIMARY KEY (app_name, user_id, id));
CREATE TABLE IF NOT EXISTS events (id VARCHAR(128), app_name VARCHAR(128), user_id VARCHAR(128), session_id VARCHAR(128),
    invocation_id VARCHAR(256) NOT NULL, timestamp DATETIME NOT NULL, event_data TEXT,
    PRIMARY KEY (id, app_name, user_id, session_id),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions(app_name, user_id, id) ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS idx_events_app_user_session_ts_id ON events (app_name, user_id, session_id, timestamp DESC, id DESC);
INSERT OR IGNORE INTO adk_internal_metadata (\"key\", value) VALUES ('schema_version', '1');
";

// adk's own table (middleware-state records), which google-adk ignores.
const ADK_RS_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS adk_rs_middleware_state (app_name VARCHAR(128), user_id VARCHAR(128), session_id VARCHAR(128),
    thread_id VARCHAR(128) NOT NULL, record_key VARCHAR(256) NOT NULL, version INTEGER NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, thread_id, record_key),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions(app_name, user_id, id) ON DELETE CASCADE);
";

// Every statement of a turn's load and commit is prepared once per connection and cached
// (preparing them afresh was a sixth of a turn's time); a dozen in all, under this bound.
pub(super) const STATEMENT_CACHE: usize = 32;
// A `SqliteStorage` writer's cache (64) with room for this store's statements beside it.
pub(super) const SHARED_STATEMENT_CACHE: usize = 96;

pub(super) fn prepare(connection: &mut Connection, cache: usize) -> Result<(), StorageError> {
    super::schema::cache_statements(connection, cache)?;
    connection
        .busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|error| StorageError::backend(error.to_string()))?;
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .map_err(|error| StorageError::backend(error.to_string()))?;
    let times = TimeColumns::of(connection).map_err(|error| {
        StorageError::backend(format!("reading the `sessions` columns: {error}"))
    })?;
    connection
        .execute_batch(ADK_RS_SCHEMA)
        .map_err(|error| StorageError::backend(format!("creating adk's tables: {error}")))?;
    connection
        .execute_batch(super::lineage::FORKS_TABLE)
        .map_err(|error| StorageError::backend(format!("creating the lineage table: {error}")))?;
    if times == TimeColumns::Real {
        // A `SqliteSessionService` file: its tables are used as google-adk made them.
        return Ok(());
    }
    connection
        .execute_batch(ADK_V1_SCHEMA)
        .map_err(|error| StorageError::backend(format!("creating the ADK v1 tables: {error}")))?;
    let version: String = connection
        .query_row(
            "SELECT value FROM adk_internal_metadata WHERE \"key\" = 'schema_version'",
            [],
            |row| row.get(0),
        )
        .map_err(|error| StorageError::backend(error.to_string()))?;
    if version != "1" {
        return Err(StorageError::backend(format!(
            "the session tables have ADK schema version `{version}`; this store reads version 1 \
             (migrate with google-adk's migration tools)"
        )));
    }
    Ok(())
}

// Google ADK's `sessions` columns this store reads and writes.
const SESSION_COLUMNS: [&str; 6] = [
    "app_name",
    "user_id",
    "id",
    "state",
    "create_time",
    "update_time",
];

/// Refuses, with read-only queries only, a file this store must not write: Google ADK session
/// tables of another schema version, or a `sessions` table that is not Google ADK's. Runs before
/// the WAL switch (which rewrites the file's header), so a refused file is left unchanged.
pub(super) fn refuse_unusable(connection: &Connection, path: &Path) -> Result<(), StorageError> {
    let failed = |operation: &'static str| {
        move |error: rusqlite::Error| {
            StorageError::backend(format!("SQLite failed while {operation}: {error}"))
        }
    };
    let has_table = |table: &str| {
        connection
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(failed("listing the tables already in the file"))
    };
    if has_table("adk_internal_metadata")? {
        let version: Option<String> = connection
            .query_row(
                "SELECT value FROM adk_internal_metadata WHERE \"key\" = 'schema_version'",
                [],
                |row| row.get(0),
            )
            .optional()
            .map_err(failed("reading the ADK schema version"))?;
        if let Some(found) = version.filter(|version| version != "1") {
            return Err(StorageError::backend(
                SqliteError::SessionSchemaUnsupported {
                    path: path.to_owned(),
                    found,
                },
            ));
        }
    }
    if has_table("sessions")? {
        let columns = connection
            .prepare("SELECT name FROM pragma_table_info('sessions')")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(failed("reading the columns of `sessions`"))?;
        if let Some(column) = SESSION_COLUMNS
            .into_iter()
            .find(|column| !columns.iter().any(|name| name == column))
        {
            return Err(StorageError::backend(SqliteError::ForeignSessionsTable {
                path: path.to_owned(),
                column,
            }));
        }
    }
    Ok(())
}

/// Whether the file holds any table yet: a file without one is new, made by this store.
pub(super) fn has_tables(connection: &Connection) -> Result<bool, StorageError> {
    connection
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table')",
            [],
            |row| row.get(0),
        )
        .map_err(|error| {
            StorageError::backend(format!("SQLite failed while listing the tables: {error}"))
        })
}

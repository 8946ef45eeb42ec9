//! What `SqliteStorage::open` and `SqliteSessionStore::open` refuse, and the promise that a
//! refused file is left byte-for-byte unchanged (no WAL switch, no tables, no `-wal` file).

use std::error::Error;
use std::path::{Path, PathBuf};

use adk::sqlite::{SqliteError, SqliteSessionStore, SqliteStorage};
use rusqlite::Connection;

/// The file's bytes and whether a `-wal` or `-shm` file sits beside it.
struct Snapshot {
    bytes: Vec<u8>,
    wal: bool,
    shm: bool,
}

fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn snapshot(path: &Path) -> Snapshot {
    Snapshot {
        bytes: std::fs::read(path).expect("the file is there"),
        wal: beside(path, "-wal").exists(),
        shm: beside(path, "-shm").exists(),
    }
}

/// Asserts the file and its neighbours are exactly as `before`, naming the first changed byte.
fn assert_unchanged(path: &Path, before: &Snapshot) {
    let after = snapshot(path);
    let first_change = before
        .bytes
        .iter()
        .zip(&after.bytes)
        .position(|(was, is)| was != is);
    assert!(
        first_change.is_none() && before.bytes.len() == after.bytes.len(),
        "{path:?} changed: {} bytes before, {} after, first difference at byte {first_change:?}",
        before.bytes.len(),
        after.bytes.len(),
    );
    assert!(!after.wal, "a -wal file appeared beside {path:?}");
    assert!(!after.shm, "a -shm file appeared beside {path:?}");
}

/// Writes a rollback-journal SQLite file with `sql` and closes it.
fn write_database(path: &Path, sql: &str) -> Snapshot {
    let connection = Connection::open(path).expect("a new file");
    connection.execute_batch(sql).expect("the fixture's SQL");
    connection.close().expect("closes");
    let written = snapshot(path);
    assert!(!written.wal && !written.shm, "the fixture has no WAL files");
    written
}

fn sqlite_error<'a>(error: &'a (dyn Error + 'static)) -> &'a SqliteError {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<SqliteError>() {
            return found;
        }
        current = error.source();
    }
    panic!("no SqliteError in the source chain of: {error}")
}

async fn storage_refusal(path: &Path) -> adk::storage::StorageError {
    match SqliteStorage::open(path).await {
        Ok(_) => panic!("{path:?} was opened, not refused"),
        Err(error) => error,
    }
}

async fn session_store_refusal(path: &Path) -> adk::state::SessionStoreError {
    match SqliteSessionStore::open(path).await {
        Ok(_) => panic!("{path:?} was opened, not refused"),
        Err(error) => error,
    }
}

const GOOGLE_ADK_V1: &str = "
CREATE TABLE adk_internal_metadata (\"key\" VARCHAR(128) PRIMARY KEY, value VARCHAR(256) NOT NULL);
CREATE TABLE app_states (app_name VARCHAR(128) PRIMARY KEY, state TEXT NOT NULL, update_time DATETIME NOT NULL);
CREATE TABLE user_states (app_name VARCHAR(128), user_id VARCHAR(128), state TEXT NOT NULL,
    update_time DATETIME NOT NULL, PRIMARY KEY (app_name, user_id));
CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128), state TEXT NOT NULL,
    create_time DATETIME NOT NULL, update_time DATETIME NOT NULL, PRIMARY KEY (app_name, user_id, id));
CREATE TABLE events (id VARCHAR(128), app_name VARCHAR(128), user_id VARCHAR(128), session_id VARCHAR(128),
    invocation_id VARCHAR(256) NOT NULL, timestamp DATETIME NOT NULL, event_data TEXT,
    PRIMARY KEY (id, app_name, user_id, session_id));
INSERT INTO sessions VALUES ('a', 'u1', 's1', '{}', '2025-01-01 00:00:00', '2025-01-01 00:00:00');
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_a_newer_schema_is_refused_without_a_byte_changed() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("newer.db");
    let before = write_database(
        &path,
        "CREATE TABLE messages (id TEXT); INSERT INTO messages VALUES ('m-1');
         PRAGMA user_version = 9;",
    );
    let error = storage_refusal(&path).await;
    match sqlite_error(&error) {
        SqliteError::SchemaTooNew {
            path: named,
            found: 9,
            ..
        } => assert_eq!(named, &path),
        other => panic!("refused for the wrong reason: {other}"),
    }
    assert_unchanged(&path, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_holding_foreign_tables_is_refused_without_a_byte_changed() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("customers.db");
    let before = write_database(
        &path,
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);
         INSERT INTO customers (name) VALUES ('Ada');",
    );
    let error = storage_refusal(&path).await;
    match sqlite_error(&error) {
        SqliteError::ForeignTables { path: named, table } => {
            assert_eq!(named, &path);
            assert_eq!(table, "customers");
        }
        other => panic!("refused for the wrong reason: {other}"),
    }
    assert!(error.to_string().contains("customers"), "{error}");
    assert_unchanged(&path, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_google_adk_session_file_is_refused_by_the_storage_without_a_byte_changed() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("session.db");
    let before = write_database(
        &path,
        &format!(
            "{GOOGLE_ADK_V1} INSERT INTO adk_internal_metadata VALUES ('schema_version', '1');"
        ),
    );
    let error = storage_refusal(&path).await;
    assert!(
        matches!(sqlite_error(&error), SqliteError::ForeignTables { table, .. } if table == "adk_internal_metadata"),
        "{error}"
    );
    assert_unchanged(&path, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_file_of_another_adk_schema_version_is_refused_without_a_byte_changed() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("session-v2.db");
    let before = write_database(
        &path,
        &format!(
            "{GOOGLE_ADK_V1} INSERT INTO adk_internal_metadata VALUES ('schema_version', '2');"
        ),
    );
    let error = session_store_refusal(&path).await;
    match sqlite_error(&error) {
        SqliteError::SessionSchemaUnsupported { path: named, found } => {
            assert_eq!(named, &path);
            assert_eq!(found, "2");
        }
        other => panic!("refused for the wrong reason: {other}"),
    }
    assert_unchanged(&path, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_sessions_table_is_refused_by_the_session_store_without_a_byte_changed() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("web-app.db");
    let before = write_database(
        &path,
        "CREATE TABLE sessions (token TEXT PRIMARY KEY, expires INTEGER);
         INSERT INTO sessions VALUES ('t-1', 0);",
    );
    let error = session_store_refusal(&path).await;
    match sqlite_error(&error) {
        SqliteError::ForeignSessionsTable {
            path: named,
            column,
        } => {
            assert_eq!(named, &path);
            assert_eq!(*column, "app_name");
        }
        other => panic!("refused for the wrong reason: {other}"),
    }
    assert_unchanged(&path, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_session_store_created_is_still_shared_with_the_storage() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("shared.db");
    let sessions = SqliteSessionStore::open(&path)
        .await
        .expect("the session store creates the file");
    let storage = SqliteStorage::open(&path)
        .await
        .expect("the storage adds its tables beside the session store's");
    drop((sessions, storage));
    SqliteSessionStore::open(&path)
        .await
        .expect("the session store opens the shared file again");
}

//! [`SqliteError`]: what can go wrong in the SQLite battery, carried inside
//! [`StorageError::Backend`](crate::storage::StorageError::Backend).

use std::path::PathBuf;

/// A failure of the SQLite battery. Callers receive it as the source of a
/// [`StorageError::Backend`](crate::storage::StorageError::Backend) and may downcast to it.
///
/// ```
/// use adk::sqlite::SqliteError;
///
/// let error = SqliteError::SchemaTooNew {
///     path: "data/agent.db".into(),
///     found: 9,
///     supported: 1,
/// };
/// assert!(error.to_string().contains("schema version 9"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// SQLite itself failed; the message is SQLite's own.
    #[error("SQLite failed while {operation}: {source}")]
    Sqlite {
        /// What the battery was doing, e.g. "storing message `m-1`".
        operation: String,
        /// The error from SQLite.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was written by a newer version of adk whose schema this version cannot read.
    #[error(
        "the database {path:?} has schema version {found}, but this version of adk knows only \
         versions up to {supported}; upgrade adk, or open a different file"
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version in the file (`PRAGMA user_version`).
        found: i64,
        /// The newest schema version this code can use.
        supported: i64,
    },
    /// The file has no adk schema version but already holds tables adk did not create: it is
    /// another program's database, which adk leaves unchanged.
    #[error(
        "the database {path:?} holds the table `{table}`, which adk did not create: it belongs \
         to another program, so adk left it unchanged; give adk a file of its own"
    )]
    ForeignTables {
        /// The database file.
        path: PathBuf,
        /// One table adk did not create.
        table: String,
    },
    /// The file holds Google ADK session tables of a schema version the session store cannot
    /// read; it was left unchanged.
    #[error(
        "the database {path:?} has ADK session schema version `{found}`; this store reads only \
         version 1, so the file was left unchanged (migrate it with google-adk's migration tools, \
         or open a different file)"
    )]
    SessionSchemaUnsupported {
        /// The database file.
        path: PathBuf,
        /// The `schema_version` in `adk_internal_metadata`.
        found: String,
    },
    /// The file holds a `sessions` table that is not Google ADK's (a column the session store
    /// needs is missing); it was left unchanged.
    #[error(
        "the database {path:?} holds a `sessions` table without the column `{column}`: it is not \
         Google ADK's session table, so the file was left unchanged; open a different file"
    )]
    ForeignSessionsTable {
        /// The database file.
        path: PathBuf,
        /// A column Google ADK's `sessions` table has and this one lacks.
        column: &'static str,
    },
    /// The folder for the database could not be created.
    #[error("could not create the folder {folder:?} for the SQLite database: {source}")]
    CreateFolder {
        /// The folder.
        folder: PathBuf,
        /// The file-system error.
        #[source]
        source: std::io::Error,
    },
    /// A stored record could not be read back as the primitive it should be.
    #[error(
        "the stored {kind} `{id}` of conversation `{conversation_id}` is not a valid {kind}: \
         {source}; the row was changed outside adk, or by an incompatible version"
    )]
    InvalidRecord {
        /// The kind of record, e.g. "message".
        kind: &'static str,
        /// The record's id (for a standing instruction, its text).
        id: String,
        /// The conversation it belongs to.
        conversation_id: String,
        /// Why the primitive's deserializer refused it.
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be turned into JSON for storage.
    #[error("the {kind} `{id}` could not be serialized for storage: {source}")]
    Unserializable {
        /// The kind of record.
        kind: &'static str,
        /// The record's id.
        id: String,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// A thread owning a connection could not be started.
    #[error("could not start the SQLite thread `{name}`: {source}")]
    ThreadStart {
        /// The thread's name.
        name: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A thread owning a connection has stopped, so the call could not be carried out.
    #[error("the SQLite thread `{name}` has stopped; open the database again")]
    WorkerStopped {
        /// The thread's name.
        name: &'static str,
    },
    /// The call panicked on the thread owning the connection; any transaction it opened was
    /// rolled back.
    #[error(
        "a call on the SQLite thread `{name}` panicked and was rolled back; this is a bug in adk, \
         please report it"
    )]
    CallPanicked {
        /// The thread's name.
        name: &'static str,
    },
}

impl SqliteError {
    pub(super) fn sqlite(operation: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> Self {
        let operation = operation.into();
        move |source| Self::Sqlite { operation, source }
    }
}

/// Shorthand for the common case: a SQLite error during `operation`, as a storage error.
pub(super) fn backend(
    operation: impl Into<String>,
) -> impl FnOnce(rusqlite::Error) -> crate::storage::StorageError {
    let wrap = SqliteError::sqlite(operation);
    move |source| crate::storage::StorageError::backend(wrap(source))
}

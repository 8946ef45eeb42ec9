//! [`PostgresError`]: what can go wrong in the PostgreSQL battery, carried inside
//! [`StorageError::Backend`](crate::storage::StorageError::Backend).

/// A failure of the PostgreSQL battery. Callers receive it as the source of a
/// [`StorageError::Backend`](crate::storage::StorageError::Backend) and may downcast to it.
///
/// ```
/// use adk::postgres::PostgresError;
///
/// let error = PostgresError::SchemaTooNew { found: 9, supported: 1 };
/// assert!(error.to_string().contains("schema version 9"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The server (or the connection to it) failed. The message names the cause: the server's
    /// own message, SQLSTATE and detail (`value too long for type character varying(128)
    /// (22001)`, `index row size 9016 exceeds btree version 4 maximum 2704 ... (54000)`, a NUL
    /// byte's `invalid byte sequence for encoding "UTF8": 0x00 (22021)`), or the driver's
    /// error and its cause; each part at most 240 characters.
    #[error("PostgreSQL failed while {operation}: {}", cause(source))]
    Postgres {
        /// What the battery was doing, e.g. "storing message `m-1`" (an id in it is cut to its
        /// first 64 characters).
        operation: String,
        /// The error from the driver, with the server's SQLSTATE when there is one.
        #[source]
        source: tokio_postgres::Error,
    },
    /// No connection could be had from the pool: the server is unreachable, refused the login,
    /// or every connection stayed busy for longer than the pool's wait timeout.
    #[error("no PostgreSQL connection for {operation}: {}", pool_cause(source))]
    Pool {
        /// What the battery was about to do.
        operation: String,
        /// The pool's error.
        #[source]
        source: deadpool_postgres::PoolError,
    },
    /// A group commit (turns committing at once sent as one transaction) lost its connection
    /// before the server answered its `COMMIT`, or its task ended before it could send it (the
    /// runtime shut down): whether this turn's commit was applied is not known. A turn alone in
    /// its group is told the driver's error ([`PostgresError::Postgres`]) instead.
    #[error(
        "PostgreSQL failed while committing a group of turns, this one among them; \
         whether it was applied is not known: {cause}"
    )]
    GroupCommit {
        /// What went wrong: the driver's error and its cause.
        cause: String,
    },
    /// The connection string could not be understood.
    #[error(
        "`{url}` is not a PostgreSQL connection string: {source}; \
         write it as postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
    )]
    InvalidUrl {
        /// The string as given, with any password replaced by `***`.
        url: String,
        /// The parser's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A schema name given to [`PostgresOptions::schema`](super::PostgresOptions::schema) is
    /// not a plain identifier.
    #[error(
        "`{name}` cannot be used as a PostgreSQL schema name: use letters, digits and `_`, \
         starting with a letter or `_`, at most 63 characters"
    )]
    InvalidSchemaName {
        /// The name as given.
        name: String,
    },
    /// The database was migrated by a newer version of adk whose schema this version cannot use.
    #[error(
        "the database has adk schema version {found}, but this version of adk knows only \
         versions up to {supported}; upgrade adk, or connect to a different database"
    )]
    SchemaTooNew {
        /// The newest migration recorded in the database (`adk_rs_migrations`).
        found: i64,
        /// The newest migration this code knows.
        supported: i64,
    },
    /// The Google ADK session tables in the database carry a schema version other than the
    /// `'1'` that [`PostgresSessionStore`](super::PostgresSessionStore) reads and writes.
    #[error(
        "the Google ADK session tables have schema version `{found}`, but this store reads and \
         writes version 1; migrate them with google-adk's migration tools, or connect to a \
         different database or schema"
    )]
    AdkSchemaVersion {
        /// The `schema_version` found in `adk_internal_metadata`.
        found: String,
    },
    /// A stored record could not be read back as the primitive it should be.
    #[error(
        "the stored {kind} `{id}` of session `{session_id}` is not a valid {kind}: {source}; \
         the row was changed outside adk, or by an incompatible version"
    )]
    InvalidRecord {
        /// The kind of record, e.g. "message".
        kind: &'static str,
        /// The record's id (for a standing instruction, its text).
        id: String,
        /// The session (conversation) it belongs to.
        session_id: String,
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
}

/// What the battery was doing when a call failed, put into words only when it failed: a
/// string, or a closure that formats one (so a call that succeeds formats nothing).
pub(super) trait Operation {
    /// The operation's description.
    fn describe(self) -> String;
}

impl Operation for &str {
    fn describe(self) -> String {
        self.to_owned()
    }
}

impl Operation for String {
    fn describe(self) -> String {
        self
    }
}

impl<F: FnOnce() -> String> Operation for F {
    fn describe(self) -> String {
        self()
    }
}

/// A driver error during `operation`.
pub(super) fn failed(
    operation: impl Operation,
) -> impl FnOnce(tokio_postgres::Error) -> PostgresError {
    move |source| PostgresError::Postgres {
        operation: shorten_ids(operation.describe()),
        source,
    }
}

/// The longest part of a cause shown in a message, in characters.
const SHOWN: usize = 240;

/// `text` cut to its first [`SHOWN`] characters, with `…` when cut.
fn clip(text: &str) -> String {
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().nth(SHOWN).is_some() {
        shown.push('…');
    }
    shown
}

/// The operation with each `` `quoted` `` id cut to its first 64 characters: a 10 KB id is not
/// copied whole into a message.
fn shorten_ids(operation: String) -> String {
    if !operation.contains('`') {
        return operation;
    }
    operation
        .split('`')
        .enumerate()
        .map(|(index, part)| {
            if index % 2 == 1 {
                crate::ids::shown(part)
            } else {
                part.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// What went wrong, from the driver's error: the server's message, SQLSTATE and detail for a
/// database error, else the driver's error and its cause. `tokio_postgres::Error` alone shows
/// only "db error".
pub(super) fn cause(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut text = format!("{} ({})", clip(db.message()), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str("; ");
            text.push_str(&clip(detail));
        }
        return text;
    }
    match std::error::Error::source(error) {
        Some(source) => format!("{error}: {}", clip(&source.to_string())),
        None => error.to_string(),
    }
}

fn pool_cause(error: &deadpool_postgres::PoolError) -> String {
    match error {
        deadpool_postgres::PoolError::Backend(error) => cause(error),
        other => clip(&other.to_string()),
    }
}

/// A pool error while getting a connection for `operation`.
pub(super) fn unavailable(
    operation: impl Operation,
) -> impl FnOnce(deadpool_postgres::PoolError) -> PostgresError {
    move |source| PostgresError::Pool {
        operation: shorten_ids(operation.describe()),
        source,
    }
}

/// Shorthand for the common case: a driver error during `operation`, as a storage error.
pub(super) fn backend(
    operation: impl Operation,
) -> impl FnOnce(tokio_postgres::Error) -> crate::storage::StorageError {
    move |source| crate::storage::StorageError::backend(failed(operation)(source))
}

/// A pool error while getting a connection for `operation`, as a storage error.
pub(super) fn no_connection(
    operation: impl Operation,
) -> impl FnOnce(deadpool_postgres::PoolError) -> crate::storage::StorageError {
    move |source| crate::storage::StorageError::backend(unavailable(operation)(source))
}

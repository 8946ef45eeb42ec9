//! [`SqliteSessionStore`]: session state in SQLite, in Google ADK's v1 tables.

use std::path::Path;
use std::sync::Arc;

use jiff::Timestamp;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::{Map, Value};

use super::app_row::AppRow;
use super::session_events::{TimeColumns, insert_events, read_events, read_time};
use super::session_schema::{
    SHARED_STATEMENT_CACHE, STATEMENT_CACHE, has_tables, prepare, refuse_unusable,
};
use super::worker::{Worker, Workers};
use crate::ids::{AppName, ThreadId, UserId};
use crate::state::{
    ForkPoint, ForkRecord, GetSessionConfig, LoadedTurn, MiddlewareStateRecord,
    MiddlewareStateWrite, RecordScope, Session, SessionKey, SessionStore, SessionStoreError,
    StateCommit, StateWrite, TurnCommit, merge_scopes, split_by_scope,
};
use crate::storage::{CommitPartner, StorageError};

/// A [`SessionStore`] in one SQLite file, laid out as Google ADK's `DatabaseSessionService`
/// v1 schema (`app_states`, `user_states`, `sessions`, `events`, `adk_internal_metadata` with
/// `schema_version` `'1'`), so state written by google-adk is read here and the other way
/// round; middleware-state records live in `adk_rs_middleware_state`, which ADK ignores.
///
/// One thread owns the connection; calls are sent to it, so no SQLite call runs on an async
/// runtime thread. A file it creates is in WAL mode (a google-adk file keeps its own journal
/// mode), and each commit is one `IMMEDIATE` transaction. Its statements are prepared once per
/// connection and cached, and it keeps the app row it last read or wrote parsed in memory (one
/// app's), parsing a row again only when the text stored in it differs.
/// It may share a file with [`SqliteStorage`](super::SqliteStorage); the store that
/// [`SqliteStorage::session_store_one_flush`](super::SqliteStorage::session_store_one_flush)
/// hands out commits on the storage's writer connection and loads turns on its readers instead
/// of a thread of its own, and commits a turn's assistant messages with its state.
///
/// ```
/// use adk::sqlite::SqliteSessionStore;
/// use adk::state::{SessionKey, SessionStore, conformance};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let store = SqliteSessionStore::in_memory().await?;
/// let key = SessionKey::new("shop", "ada", "s-1");
/// store.create_session(&key, serde_json::json!({"user:theme": "dark"}).as_object().unwrap().clone()).await?;
/// assert_eq!(store.user_state(&key.app, &key.user).await?["theme"], "dark");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SqliteSessionStore {
    worker: Arc<Worker>,
    times: TimeColumns,
    app_row: Arc<AppRow>,
    /// The `SqliteStorage`'s partner when the store runs on its writer: its commits then take
    /// the turn's held assistant messages (`storage::held`, `super::held`).
    partner: Option<CommitPartner>,
    /// The storage's connections when the store runs on its writer: a turn's load runs on
    /// one of its readers when the writer is busy, beside its commits (WAL lets them).
    readers: Option<Arc<Workers>>,
}

fn db(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> SessionStoreError {
    move |source| SessionStoreError::backend(format!("SQLite failed while {operation}: {source}"))
}

fn storage(error: StorageError) -> SessionStoreError {
    SessionStoreError::backend(error)
}

impl SqliteSessionStore {
    /// Opens (or creates) the database at `path` and its tables.
    ///
    /// A file this store creates is switched to WAL mode; a file that already holds tables
    /// (one google-adk or `adk web` wrote) keeps its journal mode.
    ///
    /// # Errors
    ///
    /// A backend error when the file cannot be opened or a new file switched to WAL. A file
    /// whose ADK schema version is not `'1'` ([`SqliteError::SessionSchemaUnsupported`]) or
    /// whose `sessions` table is not Google ADK's ([`SqliteError::ForeignSessionsTable`]) is
    /// refused before anything is written to it, so it is left byte-for-byte unchanged.
    ///
    /// [`SqliteError::SessionSchemaUnsupported`]: super::SqliteError::SessionSchemaUnsupported
    /// [`SqliteError::ForeignSessionsTable`]: super::SqliteError::ForeignSessionsTable
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, SessionStoreError> {
        let path = path.as_ref().to_owned();
        if let Some(folder) = path
            .parent()
            .filter(|folder| !folder.as_os_str().is_empty())
        {
            tokio::fs::create_dir_all(folder)
                .await
                .map_err(SessionStoreError::backend)?;
        }
        let worker = Worker::start("adk-sqlite-sessions", move || {
            let mut connection = Connection::open(&path)
                .map_err(|error| StorageError::backend(format!("opening {path:?}: {error}")))?;
            // Waits for another process's lock during the check as well as afterwards.
            connection
                .busy_timeout(std::time::Duration::from_secs(10))
                .map_err(|error| StorageError::backend(error.to_string()))?;
            refuse_unusable(&connection, &path)?;
            // WAL only for a file this store creates: the mode is kept in the file, so a file
            // it made earlier is WAL already, and a file another program made (google-adk's,
            // `adk web`'s `.adk/session.db`) keeps the journal mode that program chose.
            if !has_tables(&connection)? {
                connection
                    .pragma_update(None, "journal_mode", "WAL")
                    .map_err(|error| StorageError::backend(error.to_string()))?;
            }
            // `synchronous=NORMAL` is safe from corruption in WAL mode only; another mode keeps
            // SQLite's default (FULL).
            let journal_mode: String = connection
                .pragma_query_value(None, "journal_mode", |row| row.get(0))
                .map_err(|error| StorageError::backend(error.to_string()))?;
            if journal_mode.eq_ignore_ascii_case("wal") {
                connection
                    .pragma_update(None, "synchronous", "NORMAL")
                    .map_err(|error| StorageError::backend(error.to_string()))?;
            }
            prepare(&mut connection, STATEMENT_CACHE)?;
            Ok(connection)
        })
        .await
        .map_err(storage)?;
        Self::with_worker(worker, None).await
    }

    /// The store `SqliteStorage::session_store_one_flush` hands out: on the storage's writer
    /// connection (to the file at `path`), its commits taking the turn's held messages, its
    /// turns' loads on the storage's readers.
    pub(super) async fn on_storage(
        workers: Arc<Workers>,
        path: &Path,
        partner: CommitPartner,
    ) -> Result<Self, SessionStoreError> {
        let path = path.to_owned();
        workers
            .writer
            .run(move |connection| {
                refuse_unusable(connection, &path)?;
                prepare(connection, SHARED_STATEMENT_CACHE)
            })
            .await
            .map_err(storage)?;
        let mut store = Self::with_worker(workers.writer.clone(), Some(partner)).await?;
        store.readers = Some(workers);
        Ok(store)
    }

    /// A fresh database in memory only, for tests.
    ///
    /// # Errors
    ///
    /// A backend error when SQLite cannot create it.
    pub async fn in_memory() -> Result<Self, SessionStoreError> {
        let worker = Worker::start("adk-sqlite-sessions", || {
            let mut connection = Connection::open_in_memory()
                .map_err(|error| StorageError::backend(error.to_string()))?;
            prepare(&mut connection, STATEMENT_CACHE)?;
            Ok(connection)
        })
        .await
        .map_err(storage)?;
        Self::with_worker(worker, None).await
    }

    async fn with_worker(
        worker: Worker,
        partner: Option<CommitPartner>,
    ) -> Result<Self, SessionStoreError> {
        let times = worker
            .run(|connection| {
                TimeColumns::of(connection)
                    .map_err(|error| StorageError::backend(error.to_string()))
            })
            .await
            .map_err(storage)?;
        Ok(Self {
            worker: Arc::new(worker),
            times,
            app_row: Arc::default(),
            partner,
            readers: None,
        })
    }

    async fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, SessionStoreError> + Send + 'static,
    ) -> Result<T, SessionStoreError> {
        self.worker
            .run(move |connection| Ok(work(connection)))
            .await
            .map_err(storage)?
    }

    /// [`call`](Self::call) for a read, which runs on a reader connection when the store has
    /// them and the writer is busy. An idle writer takes it: its page cache is current (a
    /// reader's is stale after each commit, and re-reading pages cost more than the hand-off
    /// saved alone), while under load reads then run beside the commits.
    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, SessionStoreError> + Send + 'static,
    ) -> Result<T, SessionStoreError> {
        let worker = match &self.readers {
            Some(workers) if self.worker.is_busy() => workers.reader(),
            _ => &*self.worker,
        };
        worker
            .run(move |connection| Ok(work(connection)))
            .await
            .map_err(storage)?
    }
}

fn parse_state(text: &str) -> Result<Map<String, Value>, SessionStoreError> {
    serde_json::from_str(text)
        .map_err(|error| SessionStoreError::InvalidData(format!("state column `{text}`: {error}")))
}

fn to_json(state: &Map<String, Value>) -> String {
    super::adk_json::to_string(state)
}

/// Runs `sql` with `params` through the connection's statement cache (prepared once per
/// connection, see `STATEMENT_CACHE`).
fn execute_cached(
    tx: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<usize> {
    tx.prepare_cached(sql)?.execute(params)
}

/// The `state` text of `app`'s row, as stored.
fn app_text(tx: &Connection, app: &str) -> Result<Option<String>, SessionStoreError> {
    tx.prepare_cached("SELECT state FROM app_states WHERE app_name = ?1")
        .and_then(|mut statement| statement.query_row([app], |row| row.get::<_, String>(0)))
        .optional()
        .map_err(db("reading app state"))
}

fn app_state(tx: &Connection, app: &str) -> Result<Option<Map<String, Value>>, SessionStoreError> {
    app_text(tx, app)?
        .map(|text| parse_state(&text))
        .transpose()
}

fn user_state(
    tx: &Connection,
    app: &str,
    user: &str,
) -> Result<Option<Map<String, Value>>, SessionStoreError> {
    tx.prepare_cached("SELECT state FROM user_states WHERE app_name = ?1 AND user_id = ?2")
        .and_then(|mut statement| statement.query_row([app, user], |row| row.get::<_, String>(0)))
        .optional()
        .map_err(db("reading user state"))?
        .map(|text| parse_state(&text))
        .transpose()
}

/// A session row: its own state and its update time.
type StoredSession = (Map<String, Value>, Timestamp);

fn session_row(
    tx: &Connection,
    key: &SessionKey,
) -> Result<Option<StoredSession>, SessionStoreError> {
    tx.prepare_cached(
        "SELECT state, update_time FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
    )
    .and_then(|mut statement| {
        statement.query_row(
            [key.app.as_str(), key.user.as_str(), key.session.as_str()],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, SqlValue>(1)?)),
        )
    })
    .optional()
    .map_err(db("reading a session"))?
    .map(|(state, time)| Ok((parse_state(&state)?, read_time((&time).into())?)))
    .transpose()
}

fn write_app(
    tx: &Transaction<'_>,
    app: &str,
    state: &Map<String, Value>,
    now: &SqlValue,
) -> Result<(), SessionStoreError> {
    write_app_text(tx, app, &to_json(state), now)
}

/// Writes `text`, an app state in `json.dumps` layout, as `app`'s row.
fn write_app_text(
    tx: &Transaction<'_>,
    app: &str,
    text: &str,
    now: &SqlValue,
) -> Result<(), SessionStoreError> {
    execute_cached(
        tx,
        "INSERT INTO app_states (app_name, state, update_time) VALUES (?1, ?2, ?3)
         ON CONFLICT (app_name) DO UPDATE SET state = excluded.state, update_time = excluded.update_time",
        params![app, text, now],
    )
    .map_err(db("writing app state"))?;
    Ok(())
}

fn write_user(
    tx: &Transaction<'_>,
    app: &str,
    user: &str,
    state: &Map<String, Value>,
    now: &SqlValue,
) -> Result<(), SessionStoreError> {
    execute_cached(
        tx,
        "INSERT INTO user_states (app_name, user_id, state, update_time) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (app_name, user_id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time",
        params![app, user, to_json(state), now],
    )
    .map_err(db("writing user state"))?;
    Ok(())
}

fn session_of(tx: &Connection, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
    let Some((state, time)) = session_row(tx, key)? else {
        return Ok(None);
    };
    let app = app_state(tx, key.app.as_str())?.unwrap_or_default();
    let user = user_state(tx, key.app.as_str(), key.user.as_str())?.unwrap_or_default();
    Ok(Some(Session {
        key: key.clone(),
        state: merge_scopes(&app, &user, &state),
        last_update_time: time,
        events: Vec::new(),
    }))
}

fn scope_column(scope: &RecordScope) -> &str {
    match scope {
        RecordScope::Session => "",
        RecordScope::Thread(thread) => thread.as_str(),
    }
}

impl SessionStore for SqliteSessionStore {
    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        let (key, times) = (key.clone(), self.times);
        self.call(move |connection| {
            let tx = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db("starting a transaction"))?;
            if session_row(&tx, &key)?.is_some() {
                return Err(SessionStoreError::AlreadyExists {
                    app: key.app.clone(),
                    user: key.user.clone(),
                    session: key.session.clone(),
                });
            }
            let (app, user, session) = split_by_scope(state);
            let now = times.value(Timestamp::now());
            let mut stored_app = app_state(&tx, key.app.as_str())?.unwrap_or_default();
            stored_app.extend(app);
            write_app(&tx, key.app.as_str(), &stored_app, &now)?;
            let mut stored_user =
                user_state(&tx, key.app.as_str(), key.user.as_str())?.unwrap_or_default();
            stored_user.extend(user);
            write_user(&tx, key.app.as_str(), key.user.as_str(), &stored_user, &now)?;
            tx.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![
                    key.app.as_str(),
                    key.user.as_str(),
                    key.session.as_str(),
                    to_json(&session),
                    now
                ],
            )
            .map_err(db("creating a session"))?;
            let created = session_of(&tx, &key)?;
            tx.commit().map_err(db("committing a new session"))?;
            created.ok_or_else(|| SessionStoreError::InvalidData("the new session vanished".into()))
        })
        .await
    }

    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        let key = key.clone();
        self.call(move |connection| session_of(connection, &key))
            .await
    }

    async fn get_session_with(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> Result<Option<Session>, SessionStoreError> {
        let (key, times) = (key.clone(), self.times);
        self.call(move |connection| {
            // One read transaction: the events are the ones that produced the state.
            let tx = connection.transaction().map_err(db("starting a read"))?;
            let Some(mut session) = session_of(&tx, &key)? else {
                return Ok(None);
            };
            session.events = read_events(&tx, &key, times, config)?;
            Ok(Some(session))
        })
        .await
    }

    async fn list_sessions(
        &self,
        app: &AppName,
        user: Option<&UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        let app = app.clone();
        let user = user.cloned();
        self.call(move |connection| {
            let keys: Vec<(String, String)> = {
                let mut statement = connection
                    .prepare(
                        "SELECT user_id, id FROM sessions WHERE app_name = ?1
                         AND (?2 IS NULL OR user_id = ?2) ORDER BY update_time, user_id, id",
                    )
                    .map_err(db("listing sessions"))?;
                statement
                    .query_map(
                        params![app.as_str(), user.as_ref().map(UserId::as_str)],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .map_err(db("listing sessions"))?
                    .collect::<Result<_, _>>()
                    .map_err(db("listing sessions"))?
            };
            let mut sessions = Vec::with_capacity(keys.len());
            for (user, id) in keys {
                if let Some(session) =
                    session_of(connection, &SessionKey::new(app.clone(), user, id))?
                {
                    sessions.push(session);
                }
            }
            Ok(sessions)
        })
        .await
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        let key = key.clone();
        self.call(move |connection| {
            let tx = connection
                .transaction()
                .map_err(db("starting to delete a session"))?;
            tx.execute(
                "DELETE FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                [key.app.as_str(), key.user.as_str(), key.session.as_str()],
            )
            .map_err(db("deleting a session"))?;
            super::lineage::delete(&tx, &key)?;
            // The tool ledger and the approval requests, when `SqliteStorage` keeps them in
            // this file: their rows have no foreign key to `sessions` (a turn records intents
            // and requests before its first commit), and a session made again under the same
            // id must not find the deleted one's results or decisions.
            for (table, operation) in [
                ("tool_ledger", "deleting a session's tool ledger"),
                ("tool_approvals", "deleting a session's approval requests"),
            ] {
                let kept = tx
                    .query_row(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                        [table],
                        |_| Ok(()),
                    )
                    .optional()
                    .map_err(db("looking for the tool ledger and approvals"))?
                    .is_some();
                if kept {
                    tx.execute(
                        &format!(
                            "DELETE FROM {table}
                             WHERE app_name = ?1 AND user_id = ?2 AND conversation_id = ?3"
                        ),
                        [key.app.as_str(), key.user.as_str(), key.session.as_str()],
                    )
                    .map_err(db(operation))?;
                }
            }
            tx.commit().map_err(db("deleting a session"))
        })
        .await
    }

    async fn app_state(&self, app: &AppName) -> Result<Map<String, Value>, SessionStoreError> {
        let app = app.clone();
        self.call(move |connection| Ok(app_state(connection, app.as_str())?.unwrap_or_default()))
            .await
    }

    async fn user_state(
        &self,
        app: &AppName,
        user: &UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        let (app, user) = (app.clone(), user.clone());
        self.call(move |connection| {
            Ok(user_state(connection, app.as_str(), user.as_str())?.unwrap_or_default())
        })
        .await
    }

    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        thread.check()?;
        let (key, thread) = (key.clone(), thread.clone());
        let app_row = Arc::clone(&self.app_row);
        self.read(move |connection| {
            let tx = connection.transaction().map_err(db("starting a read"))?;
            let middleware = {
                let mut statement = tx
                    .prepare_cached(
                        "SELECT thread_id, record_key, version, record FROM adk_rs_middleware_state
                         WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3
                         AND (thread_id = '' OR thread_id = ?4) ORDER BY thread_id, record_key",
                    )
                    .map_err(db("loading middleware state"))?;
                let rows = statement
                    .query_map(
                        params![
                            key.app.as_str(),
                            key.user.as_str(),
                            key.session.as_str(),
                            thread.as_str()
                        ],
                        |row| {
                            Ok((
                                row.get::<_, String>(0)?,
                                row.get::<_, String>(1)?,
                                row.get::<_, u32>(2)?,
                                row.get::<_, String>(3)?,
                            ))
                        },
                    )
                    .map_err(db("loading middleware state"))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(db("loading middleware state"))?;
                rows.into_iter()
                    .map(|(thread_id, record_key, version, record)| {
                        Ok(MiddlewareStateRecord {
                            scope: if thread_id.is_empty() {
                                RecordScope::Session
                            } else {
                                RecordScope::Thread(ThreadId::from(thread_id))
                            },
                            key: record_key,
                            version,
                            json: serde_json::from_str(&record).map_err(|error| {
                                SessionStoreError::InvalidData(format!(
                                    "middleware record: {error}"
                                ))
                            })?,
                        })
                    })
                    .collect::<Result<Vec<_>, SessionStoreError>>()?
            };
            let app = match app_text(&tx, key.app.as_str())? {
                Some(text) => app_row.parsed(key.app.as_str(), text, parse_state)?,
                None => Arc::default(),
            };
            Ok(LoadedTurn {
                app,
                user: user_state(&tx, key.app.as_str(), key.user.as_str())?.unwrap_or_default(),
                session: session_row(&tx, &key)?
                    .map(|(state, _)| state)
                    .unwrap_or_default(),
                middleware,
            })
        })
        .await
    }

    async fn commit_turn(
        &self,
        key: &SessionKey,
        mut commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        commit.check_threads()?;
        let (key, times) = (key.clone(), self.times);
        let app_row = Arc::clone(&self.app_row);
        // The turn's assistant messages held for this commit: inserted last in its transaction.
        let turn_writes = commit.held.clone();
        let (writes, rows) = super::held::take(self.partner.as_ref(), &turn_writes)?;
        let committed = self
            .call(move |connection| {
                let tx = connection
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(db("starting a commit"))?;
                let (app, user) = (key.app.as_str(), key.user.as_str());
                // The row's text as stored now; the app's state written, when this commit writes it.
                let mut app_text = app_text(&tx, app)?;
                let (mut app_map, mut spans) = match &app_text {
                    Some(text) => app_row.take(app, text, parse_state)?,
                    None => (Arc::default(), None),
                };
                let mut user_map = user_state(&tx, app, user)?.unwrap_or_default();
                let existing = session_row(&tx, &key)?;
                let session_exists = existing.is_some();
                let mut session_map = existing.map(|(state, _)| state).unwrap_or_default();
                commit.resolve(&app_map, &user_map, &session_map)?;
                let now = times.value(Timestamp::now());
                // A copy only while a turn still holds the state it loaded (`app_row.rs`).
                if !commit.app.is_empty() {
                    StateWrite::apply_all(&commit.app, Arc::make_mut(&mut app_map));
                }
                // ADK expects the app and user rows of every session to exist.
                if !commit.app.is_empty() || !session_exists {
                    // Only the entries this commit changed are serialized when the store wrote the
                    // row's text itself; the others are copied from it.
                    let previous = app_text.as_deref().zip(spans.as_deref());
                    let (text, written) = super::adk_json::rewrite(&app_map, previous, &commit.app);
                    write_app_text(&tx, app, &text, &now)?;
                    (app_text, spans) = (Some(text), Some(written));
                }
                if !commit.user.is_empty() || !session_exists {
                    StateWrite::apply_all(&commit.user, &mut user_map);
                    write_user(&tx, app, user, &user_map, &now)?;
                }
                StateWrite::apply_all(&commit.session, &mut session_map);
                execute_cached(
                    &tx,
                    "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT (app_name, user_id, id) DO UPDATE SET state = excluded.state,
                 update_time = excluded.update_time",
                    params![app, user, key.session.as_str(), to_json(&session_map), now],
                )
                .map_err(db("writing session state"))?;
                insert_events(&tx, &key, times, &commit.events)?;
                for write in &commit.middleware {
                    match write {
                        MiddlewareStateWrite::Put(record) => execute_cached(
                            &tx,
                            "INSERT INTO adk_rs_middleware_state
                             (app_name, user_id, session_id, thread_id, record_key, version, record)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                             ON CONFLICT (app_name, user_id, session_id, thread_id, record_key)
                             DO UPDATE SET version = excluded.version, record = excluded.record",
                            params![
                                app,
                                user,
                                key.session.as_str(),
                                scope_column(&record.scope),
                                record.key,
                                record.version,
                                record.json.to_string()
                            ],
                        ),
                        MiddlewareStateWrite::Delete {
                            scope,
                            key: record_key,
                        } => execute_cached(
                            &tx,
                            "DELETE FROM adk_rs_middleware_state WHERE app_name = ?1
                             AND user_id = ?2 AND session_id = ?3 AND thread_id = ?4
                             AND record_key = ?5",
                            params![
                                app,
                                user,
                                key.session.as_str(),
                                scope_column(scope),
                                record_key
                            ],
                        ),
                    }
                    .map_err(db("writing middleware state"))?;
                }
                super::held::insert_all(&tx, rows).map_err(SessionStoreError::backend)?;
                tx.commit().map_err(db("committing a turn"))?;
                if let Some(text) = app_text {
                    app_row.keep(app, text, app_map, spans);
                }
                Ok(())
            })
            .await;
        if committed.is_err() {
            turn_writes.put_back_for(self.partner.as_ref(), writes);
        }
        committed
    }

    fn commit_partner(&self) -> Option<CommitPartner> {
        self.partner.clone()
    }

    async fn commit_state(
        &self,
        app: &AppName,
        user: &UserId,
        mut commit: StateCommit,
    ) -> Result<(), SessionStoreError> {
        let (app, user, times) = (app.clone(), user.clone(), self.times);
        self.call(move |connection| {
            let tx = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db("starting a state commit"))?;
            let (app, user) = (app.as_str(), user.as_str());
            let mut app_map = app_state(&tx, app)?.unwrap_or_default();
            let mut user_map = user_state(&tx, app, user)?.unwrap_or_default();
            commit.resolve(&app_map, &user_map)?;
            let now = times.value(Timestamp::now());
            if !commit.app.is_empty() {
                StateWrite::apply_all(&commit.app, &mut app_map);
                write_app(&tx, app, &app_map, &now)?;
            }
            if !commit.user.is_empty() {
                StateWrite::apply_all(&commit.user, &mut user_map);
                write_user(&tx, app, user, &user_map, &now)?;
            }
            tx.commit().map_err(db("committing state"))
        })
        .await
    }

    async fn record_fork(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
        point: ForkPoint,
    ) -> Result<ForkRecord, SessionStoreError> {
        thread.check()?;
        point.thread.check()?;
        let (key, thread) = (key.clone(), thread.clone());
        self.call(move |connection| super::lineage::record(connection, &key, &thread, point))
            .await
    }

    async fn forks(&self, key: &SessionKey) -> Result<Vec<ForkRecord>, SessionStoreError> {
        let key = key.clone();
        self.call(move |connection| super::lineage::all(connection, &key))
            .await
    }

    async fn copy_thread_records(
        &self,
        key: &SessionKey,
        from: &ThreadId,
        to: &ThreadId,
    ) -> Result<(), SessionStoreError> {
        from.check()?;
        to.check()?;
        if from == to {
            // Replacing a thread's records with themselves: deleting the target first would
            // lose them.
            return Ok(());
        }
        let (key, from, to) = (key.clone(), from.clone(), to.clone());
        self.call(move |connection| {
            let tx = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db("starting a copy"))?;
            let ids = params![
                key.app.as_str(),
                key.user.as_str(),
                key.session.as_str(),
                to.as_str()
            ];
            tx.execute(
                "DELETE FROM adk_rs_middleware_state WHERE app_name = ?1 AND user_id = ?2
                 AND session_id = ?3 AND thread_id = ?4",
                ids,
            )
            .map_err(db("copying thread records"))?;
            tx.execute(
                "INSERT INTO adk_rs_middleware_state
                 (app_name, user_id, session_id, thread_id, record_key, version, record)
                 SELECT app_name, user_id, session_id, ?4, record_key, version, record
                 FROM adk_rs_middleware_state WHERE app_name = ?1 AND user_id = ?2
                 AND session_id = ?3 AND thread_id = ?5",
                params![
                    key.app.as_str(),
                    key.user.as_str(),
                    key.session.as_str(),
                    to.as_str(),
                    from.as_str()
                ],
            )
            .map_err(db("copying thread records"))?;
            tx.commit().map_err(db("committing a copy"))
        })
        .await
    }
}

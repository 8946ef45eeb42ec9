//! [`PostgresSessionStore`]: session state in PostgreSQL, in Google ADK's v1 tables, shared by
//! any number of processes. A commit is one short transaction that locks the rows it changes
//! (`SELECT … FOR UPDATE`), checks the turn's expected values against them and writes, so
//! commits from many processes are applied one at a time per row, and a stale one is refused
//! with nothing applied.

use std::sync::Arc;

use deadpool_postgres::{GenericClient, Object, Pool};
use jiff::Timestamp;
use serde_json::{Map, Value};
use tokio_postgres::Row;
use tokio_postgres::types::{Json, ToSql};

use crate::ids::{AppName, ThreadId, UserId};
use crate::state::{
    ForkPoint, ForkRecord, GetSessionConfig, LoadedTurn, MiddlewareStateRecord,
    MiddlewareStateWrite, RecordScope, Session, SessionKey, SessionStore, SessionStoreError,
    StateCommit, StateWrite, TurnCommit, merge_scopes, split_by_scope,
};
use crate::storage::CommitPartner;

use super::app_cache::{AppCache, LOAD_TURN};
use super::commit::{DELETE_RECORD, PUT_RECORD, thread_column};
use super::error::{PostgresError, failed, unavailable};
use super::group::{Group, Outcome, Queued};
use super::options::PostgresOptions;
use super::schema;
use super::session_events::{insert_events, read_events};

// The database server's clock, so that every process stamps times from one clock, written as
// naive UTC the way google-adk writes `TIMESTAMP` columns. `clock_timestamp()`, not `now()`:
// a commit that waited for another's lock is stamped after it, so `list_sessions` orders
// sessions by when their commits landed.
macro_rules! now_utc {
    () => {
        "(clock_timestamp() AT TIME ZONE 'UTC')"
    };
}

// A naive UTC `TIMESTAMP` column as microseconds since the epoch.
macro_rules! micros {
    ($column:literal) => {
        concat!("(EXTRACT(EPOCH FROM ", $column, ") * 1000000)::BIGINT")
    };
}

const LOCK_SESSION: &str =
    "SELECT state FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3 FOR UPDATE";
const CREATE_SESSION: &str = concat!(
    "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) ",
    "VALUES ($1, $2, $3, $4, ",
    now_utc!(),
    ", ",
    now_utc!(),
    ") ON CONFLICT (app_name, user_id, id) DO NOTHING"
);
const ENSURE_SESSION: &str = concat!(
    "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) ",
    "VALUES ($1, $2, $3, '{}', ",
    now_utc!(),
    ", ",
    now_utc!(),
    ") ON CONFLICT (app_name, user_id, id) DO NOTHING"
);
const WRITE_SESSION: &str = concat!(
    "UPDATE sessions SET state = $4, update_time = ",
    now_utc!(),
    " WHERE app_name = $1 AND user_id = $2 AND id = $3"
);
const LOCK_APP: &str = "SELECT state FROM app_states WHERE app_name = $1 FOR UPDATE";
const ENSURE_APP: &str = concat!(
    "INSERT INTO app_states (app_name, state, update_time) VALUES ($1, '{}', ",
    now_utc!(),
    ") ON CONFLICT (app_name) DO NOTHING"
);
const WRITE_APP: &str = concat!(
    "UPDATE app_states SET state = $2, update_time = ",
    now_utc!(),
    " WHERE app_name = $1"
);
// JSONB `||` keeps the stored keys and lets the new ones win: `create_session`'s merge.
const MERGE_APP: &str = concat!(
    "INSERT INTO app_states (app_name, state, update_time) VALUES ($1, $2, ",
    now_utc!(),
    ") ON CONFLICT (app_name) DO UPDATE SET state = app_states.state || EXCLUDED.state, ",
    "update_time = EXCLUDED.update_time"
);
const LOCK_USER: &str =
    "SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2 FOR UPDATE";
const ENSURE_USER: &str = concat!(
    "INSERT INTO user_states (app_name, user_id, state, update_time) VALUES ($1, $2, '{}', ",
    now_utc!(),
    ") ON CONFLICT (app_name, user_id) DO NOTHING"
);
const WRITE_USER: &str = concat!(
    "UPDATE user_states SET state = $3, update_time = ",
    now_utc!(),
    " WHERE app_name = $1 AND user_id = $2"
);
const MERGE_USER: &str = concat!(
    "INSERT INTO user_states (app_name, user_id, state, update_time) VALUES ($1, $2, $3, ",
    now_utc!(),
    ") ON CONFLICT (app_name, user_id) DO UPDATE SET state = user_states.state || ",
    "EXCLUDED.state, update_time = EXCLUDED.update_time"
);
const GET_SESSION: &str = concat!(
    "SELECT s.state, ",
    micros!("s.update_time"),
    ", (SELECT a.state FROM app_states a WHERE a.app_name = s.app_name), ",
    "(SELECT u.state FROM user_states u WHERE u.app_name = s.app_name AND u.user_id = s.user_id) ",
    "FROM sessions s WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3"
);
const LIST_SESSIONS: &str = concat!(
    "SELECT s.user_id, s.id, s.state, ",
    micros!("s.update_time"),
    ", a.state, u.state FROM sessions s ",
    "LEFT JOIN app_states a ON a.app_name = s.app_name ",
    "LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id ",
    "WHERE s.app_name = $1 AND ($2::VARCHAR IS NULL OR s.user_id = $2::VARCHAR) ",
    "ORDER BY s.update_time, s.user_id, s.id"
);
/// A [`SessionStore`] in a PostgreSQL database that any number of processes share, laid out as
/// Google ADK's `DatabaseSessionService` v1 schema on PostgreSQL (`app_states`, `user_states`,
/// `sessions`, `events`, `adk_internal_metadata` with `schema_version` `'1'`; JSONB state,
/// naive UTC times), so a google-adk deployment and adk processes can share one state
/// database. Middleware-state records live in `adk_rs_middleware_state`, which ADK ignores.
///
/// Each commit is one short transaction that locks the session's row, and the app's and user's
/// rows when it writes them, with `SELECT … FOR UPDATE`, compares the values the turn loaded
/// with the stored ones and writes, so commits of many processes to one session are applied
/// one after another and a stale one is refused ([`SessionStoreError::Stale`]) with nothing
/// applied. Commits of turns in flight at once through one store (and its clones) are sent
/// together as one transaction, each turn told its own result (`docs/postgres.md`).
///
/// Get one from a [`PostgresStorage`](super::PostgresStorage) to share its connection pool
/// ([`PostgresStorage::session_store`](super::PostgresStorage::session_store)), or connect on its own.
///
/// ```no_run
/// use adk::postgres::PostgresStorage;
/// use adk::state::{SessionKey, SessionStore};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let storage = PostgresStorage::connect("postgresql://agent@db.internal/agents").await?;
/// let sessions = storage.session_store().await?;
/// let key = SessionKey::new("shop", "ada", "s-1");
/// sessions.create_session(&key, serde_json::json!({"user:theme": "dark"}).as_object().unwrap().clone()).await?;
/// assert_eq!(sessions.user_state(&key.app, &key.user).await?["theme"], "dark");
/// let runner = adk::TurnRunner::builder()
///     .storage(storage)
///     .session_store(sessions)
/// #   .executor(adk::dispatch::ScriptedModel::new())
///     .build();
/// # let _ = runner;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresSessionStore {
    pool: Pool,
    /// The `PostgresStorage`'s partner when the store came from it: its commits then take
    /// the turn's held assistant messages (`storage::held`).
    partner: Option<CommitPartner>,
    /// Commits queued to be sent together (`group.rs`).
    group: Arc<Group>,
    /// The app documents last read or written, with their row versions (`app_cache.rs`).
    apps: Arc<AppCache>,
}

impl std::fmt::Debug for PostgresSessionStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        formatter
            .debug_struct("PostgresSessionStore")
            .field("max_connections", &status.max_size)
            .field("open_connections", &status.size)
            .finish()
    }
}

fn db(operation: &'static str) -> impl FnOnce(tokio_postgres::Error) -> SessionStoreError {
    let failed = failed(operation);
    move |source| SessionStoreError::backend(failed(source))
}

fn object(value: Value, what: &str) -> Result<Map<String, Value>, SessionStoreError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(SessionStoreError::InvalidData(format!(
            "the {what} column holds `{other}`, not a JSON object"
        ))),
    }
}

fn optional_object(
    value: Option<Value>,
    what: &str,
) -> Result<Map<String, Value>, SessionStoreError> {
    value.map_or_else(|| Ok(Map::new()), |value| object(value, what))
}

fn timestamp(micros: i64) -> Result<Timestamp, SessionStoreError> {
    Timestamp::from_microsecond(micros).map_err(|error| {
        SessionStoreError::InvalidData(format!("the session's update_time: {error}"))
    })
}

fn records(aggregated: Option<Value>) -> Result<Vec<MiddlewareStateRecord>, SessionStoreError> {
    let Some(aggregated) = aggregated else {
        return Ok(Vec::new());
    };
    let rows: Vec<(String, String, u32, Value)> =
        serde_json::from_value(aggregated).map_err(|error| {
            SessionStoreError::InvalidData(format!("a middleware-state record: {error}"))
        })?;
    Ok(rows
        .into_iter()
        .map(|(thread, key, version, json)| MiddlewareStateRecord {
            scope: if thread.is_empty() {
                RecordScope::Session
            } else {
                RecordScope::Thread(ThreadId::from(thread))
            },
            key,
            version,
            json,
        })
        .collect())
}

/// The session in a [`GET_SESSION`] row (session state, update time, app state, user state).
fn session_from(
    key: SessionKey,
    state: Value,
    micros: i64,
    app: Option<Value>,
    user: Option<Value>,
) -> Result<Session, SessionStoreError> {
    let state = object(state, "sessions.state")?;
    let app = optional_object(app, "app_states.state")?;
    let user = optional_object(user, "user_states.state")?;
    Ok(Session {
        key,
        state: merge_scopes(&app, &user, &state),
        last_update_time: timestamp(micros)?,
        events: Vec::new(),
    })
}

async fn session_of(
    client: &impl GenericClient,
    key: &SessionKey,
) -> Result<Option<Session>, SessionStoreError> {
    let operation = "reading a session";
    let statement = client
        .prepare_cached(GET_SESSION)
        .await
        .map_err(db(operation))?;
    let row = client
        .query_opt(
            &statement,
            &[&key.app.as_str(), &key.user.as_str(), &key.session.as_str()],
        )
        .await
        .map_err(db(operation))?;
    row.map(|row| session_from(key.clone(), row.get(0), row.get(1), row.get(2), row.get(3)))
        .transpose()
}

/// Locks the row `lock` selects for the rest of the transaction, creating it empty with
/// `create` first when it is missing (both take `params`). Returns its state and whether this
/// transaction created it.
async fn lock_or_create(
    client: &impl GenericClient,
    lock: &str,
    create: &str,
    params: &[&(dyn ToSql + Sync)],
    operation: &'static str,
) -> Result<(Map<String, Value>, bool), SessionStoreError> {
    let lock = client.prepare_cached(lock).await.map_err(db(operation))?;
    if let Some(row) = client
        .query_opt(&lock, params)
        .await
        .map_err(db(operation))?
    {
        return Ok((object(row.get(0), operation)?, false));
    }
    let create = client.prepare_cached(create).await.map_err(db(operation))?;
    // A process creating the same row at the same moment makes this insert wait for it and
    // add nothing; the row is there either way, and the lock below waits for its creator.
    let created = client
        .execute(&create, params)
        .await
        .map_err(db(operation))?
        == 1;
    let row = client
        .query_one(&lock, params)
        .await
        .map_err(db(operation))?;
    Ok((object(row.get(0), operation)?, created))
}

async fn execute(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
    operation: &'static str,
) -> Result<u64, SessionStoreError> {
    let statement = client.prepare_cached(sql).await.map_err(db(operation))?;
    client
        .execute(&statement, params)
        .await
        .map_err(db(operation))
}

impl PostgresSessionStore {
    /// Connects to the database at `url` with a pool of
    /// [`DEFAULT_POOL_SIZE`](super::DEFAULT_POOL_SIZE) connections and no TLS, and brings its
    /// schema up to date (the same migrations as [`PostgresStorage::connect`](super::PostgresStorage::connect)).
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::Backend`] with a [`PostgresError`] as its source, as for
    /// [`PostgresStorage::connect`](super::PostgresStorage::connect), and [`PostgresError::AdkSchemaVersion`] when the database's
    /// Google ADK tables are of another schema version than 1.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), adk::state::SessionStoreError> {
    /// let sessions = adk::postgres::PostgresSessionStore::connect("postgresql://agent@localhost/agents").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, SessionStoreError> {
        let options = PostgresOptions::from_url(url).map_err(SessionStoreError::backend)?;
        Self::connect_with(options).await
    }

    /// Connects as `options` say (pool size, schema, TLS) and brings the schema up to date.
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect).
    ///
    /// ```no_run
    /// use adk::postgres::{PostgresOptions, PostgresSessionStore};
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let options = PostgresOptions::from_url("postgresql://agent@localhost/agents")?.pool_size(8);
    /// let sessions = PostgresSessionStore::connect_with(options).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_with(options: PostgresOptions) -> Result<Self, SessionStoreError> {
        let pool = options.build_pool().map_err(SessionStoreError::backend)?;
        schema::migrate(&pool, options.schema_name())
            .await
            .map_err(SessionStoreError::backend)?;
        Self::on_pool(pool, None).await
    }

    /// The store on a pool whose database is migrated, once its ADK tables are known to be of
    /// schema version 1.
    pub(super) async fn on_pool(
        pool: Pool,
        partner: Option<CommitPartner>,
    ) -> Result<Self, SessionStoreError> {
        let operation = "reading the Google ADK schema version";
        let client = pool
            .get()
            .await
            .map_err(|error| SessionStoreError::backend(unavailable(operation)(error)))?;
        let found: Option<String> = client
            .query_opt(
                "SELECT value FROM adk_internal_metadata WHERE \"key\" = 'schema_version'",
                &[],
            )
            .await
            .map_err(db(operation))?
            .map(|row| row.get(0));
        match found.as_deref() {
            Some("1") => Ok(Self {
                pool,
                partner,
                group: Arc::default(),
                apps: Arc::default(),
            }),
            other => Err(SessionStoreError::backend(
                PostgresError::AdkSchemaVersion {
                    found: other.unwrap_or("(none)").to_owned(),
                },
            )),
        }
    }

    async fn client(&self, operation: &'static str) -> Result<Object, SessionStoreError> {
        self.pool
            .get()
            .await
            .map_err(|error| SessionStoreError::backend(unavailable(operation)(error)))
    }
}

impl SessionStore for PostgresSessionStore {
    fn commit_partner(&self) -> Option<CommitPartner> {
        self.partner.clone()
    }

    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        let operation = "creating a session";
        let mut client = self.client(operation).await?;
        let transaction = client.transaction().await.map_err(db(operation))?;
        let (app, user, session) = split_by_scope(state);
        let (app_name, user_id, id) = (key.app.as_str(), key.user.as_str(), key.session.as_str());
        let inserted = execute(
            &transaction,
            CREATE_SESSION,
            &[&app_name, &user_id, &id, &Json(&session)],
            operation,
        )
        .await?;
        if inserted == 0 {
            return Err(SessionStoreError::AlreadyExists {
                app: key.app.clone(),
                user: key.user.clone(),
                session: key.session.clone(),
            });
        }
        // ADK expects the app and user rows of every session to exist; an empty part leaves an
        // existing row alone (and unlocked), a non-empty one is merged into it.
        if app.is_empty() {
            execute(&transaction, ENSURE_APP, &[&app_name], operation).await?;
        } else {
            execute(
                &transaction,
                MERGE_APP,
                &[&app_name, &Json(&app)],
                operation,
            )
            .await?;
        }
        if user.is_empty() {
            execute(&transaction, ENSURE_USER, &[&app_name, &user_id], operation).await?;
        } else {
            let params: [&(dyn ToSql + Sync); 3] = [&app_name, &user_id, &Json(&user)];
            execute(&transaction, MERGE_USER, &params, operation).await?;
        }
        let created = session_of(&transaction, key).await?;
        transaction.commit().await.map_err(db(operation))?;
        created.ok_or_else(|| SessionStoreError::InvalidData("the new session vanished".into()))
    }

    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        let client = self.client("reading a session").await?;
        session_of(&client, key).await
    }

    async fn get_session_with(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> Result<Option<Session>, SessionStoreError> {
        let operation = "reading a session with its events";
        let mut client = self.client(operation).await?;
        // One snapshot: the events are the ones that produced the state.
        let transaction = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(db(operation))?;
        let Some(mut session) = session_of(&transaction, key).await? else {
            return Ok(None);
        };
        session.events = read_events(&transaction, key, config).await?;
        transaction.commit().await.map_err(db(operation))?;
        Ok(Some(session))
    }

    async fn list_sessions(
        &self,
        app: &AppName,
        user: Option<&UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        let operation = "listing sessions";
        let client = self.client(operation).await?;
        let statement = client
            .prepare_cached(LIST_SESSIONS)
            .await
            .map_err(db(operation))?;
        let rows = client
            .query(&statement, &[&app.as_str(), &user.map(UserId::as_str)])
            .await
            .map_err(db(operation))?;
        rows.into_iter()
            .map(|row: Row| {
                let key = SessionKey::new(
                    app.clone(),
                    row.get::<_, String>(0),
                    row.get::<_, String>(1),
                );
                session_from(key, row.get(2), row.get(3), row.get(4), row.get(5))
            })
            .collect()
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        let operation = "deleting a session";
        let mut client = self.client(operation).await?;
        let transaction = client.transaction().await.map_err(db(operation))?;
        // Its events and middleware-state records go with it (ON DELETE CASCADE).
        execute(
            &transaction,
            "DELETE FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3",
            &[&key.app.as_str(), &key.user.as_str(), &key.session.as_str()],
            operation,
        )
        .await?;
        super::lineage::delete(&transaction, key).await?;
        // The ledger and the approval requests have no foreign key to `sessions` (a turn
        // records intents and requests before its session's first commit), so their rows are
        // deleted here: a session made again under the same id must not find the deleted
        // one's results or decisions.
        execute(
            &transaction,
            "DELETE FROM adk_rs_tool_ledger WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
            &[&key.app.as_str(), &key.user.as_str(), &key.session.as_str()],
            "deleting a session's tool ledger",
        )
        .await?;
        execute(
            &transaction,
            "DELETE FROM adk_rs_tool_approvals \
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
            &[&key.app.as_str(), &key.user.as_str(), &key.session.as_str()],
            "deleting a session's approval requests",
        )
        .await?;
        transaction.commit().await.map_err(db(operation))
    }

    async fn app_state(&self, app: &AppName) -> Result<Map<String, Value>, SessionStoreError> {
        let operation = "reading app state";
        let client = self.client(operation).await?;
        let statement = client
            .prepare_cached("SELECT state FROM app_states WHERE app_name = $1")
            .await
            .map_err(db(operation))?;
        let row = client
            .query_opt(&statement, &[&app.as_str()])
            .await
            .map_err(db(operation))?;
        optional_object(row.map(|row| row.get(0)), "app_states.state")
    }

    async fn user_state(
        &self,
        app: &AppName,
        user: &UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        let operation = "reading user state";
        let client = self.client(operation).await?;
        let statement = client
            .prepare_cached("SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2")
            .await
            .map_err(db(operation))?;
        let row = client
            .query_opt(&statement, &[&app.as_str(), &user.as_str()])
            .await
            .map_err(db(operation))?;
        optional_object(row.map(|row| row.get(0)), "user_states.state")
    }

    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        thread.check()?;
        let operation = "loading a turn's state";
        let client = self.client(operation).await?;
        let statement = client
            .prepare_cached(LOAD_TURN)
            .await
            .map_err(db(operation))?;
        let sent = self.apps.before_load(key.app.as_str());
        let row = client
            .query_one(
                &statement,
                &[
                    &key.app.as_str(),
                    &key.user.as_str(),
                    &key.session.as_str(),
                    &thread.as_str(),
                    &sent.version(),
                ],
            )
            .await
            .map_err(db(operation))?;
        Ok(LoadedTurn {
            app: AppCache::loaded(sent, row.get(0), row.get(1))?,
            user: optional_object(row.get(2), "user_states.state")?,
            session: optional_object(row.get(3), "sessions.state")?,
            middleware: records(row.get(4))?,
        })
    }

    async fn commit_turn(
        &self,
        key: &SessionKey,
        commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        commit.check_threads()?;
        let operation = "committing a turn";
        // The turn's assistant messages held for this commit (`storage::held`): written in its
        // transaction when it takes one round trip, and otherwise before the locking one, so
        // a crash never leaves the state committed without the answer that produced it.
        let writes = commit.held.take_for(self.partner.as_ref());
        // Most commits: the session exists and nothing went stale; one round trip, sent with
        // the commits of other turns queued meanwhile (`group.rs`, `commit.rs`). The rest take
        // the locking transaction below. A commit with a merge takes the round trip only when
        // no other commit is under way: its merges are applied to the values the turn loaded
        // and checked against the stored ones (`scope_writes.rs`), which other turns' commits
        // of a shared counter would have moved on by then.
        let merging = super::scope_writes::merges(&commit).then(|| self.group.merging());
        let (mut commit, writes, alone) = if let Some(merging) = &merging {
            (commit, writes, merging.alone())
        } else {
            let queued = Queued {
                key: key.clone(),
                commit,
                held: writes,
            };
            match self.group.commit(&self.pool, &self.apps, queued).await {
                Outcome::Committed => return Ok(()),
                Outcome::Refused(queued) => (queued.commit, queued.held, false),
                Outcome::Alone(queued) => (queued.commit, queued.held, true),
                Outcome::Failed(queued, error) => {
                    queued
                        .commit
                        .held
                        .put_back_for(self.partner.as_ref(), queued.held);
                    return Err(error);
                }
                Outcome::Abandoned(error) => return Err(error),
            }
        };
        let mut client = self.client(operation).await?;
        let committed = if alone {
            super::commit::one_round_trip(&client, &self.apps, key, &commit, &writes).await
        } else {
            Ok(false)
        };
        if matches!(committed, Ok(true)) {
            return Ok(());
        }
        commit.held.put_back_for(self.partner.as_ref(), writes);
        committed?;
        let held = self
            .partner
            .as_ref()
            .and_then(|partner| commit.held.for_partner(partner));
        if let Some(held) = held {
            super::records::write_held_on(&client, held)
                .await
                .map_err(SessionStoreError::backend)?;
        }
        let transaction = client.transaction().await.map_err(db(operation))?;
        let (app_name, user_id, id) = (key.app.as_str(), key.user.as_str(), key.session.as_str());
        // Locks in one order, session → app → user, in every transaction that takes more than
        // one, so two commits never wait for each other in a cycle. The app and user rows are
        // locked only when written: most turns leave them alone and must not queue behind
        // every other session of the app.
        let (mut session, created) = lock_or_create(
            &transaction,
            LOCK_SESSION,
            ENSURE_SESSION,
            &[&app_name, &user_id, &id],
            operation,
        )
        .await?;
        let mut app = Map::new();
        if !commit.app.is_empty() {
            (app, _) =
                lock_or_create(&transaction, LOCK_APP, ENSURE_APP, &[&app_name], operation).await?;
        } else if created {
            // ADK expects the app and user rows of every session to exist.
            execute(&transaction, ENSURE_APP, &[&app_name], operation).await?;
        }
        let mut user = Map::new();
        if !commit.user.is_empty() {
            (user, _) = lock_or_create(
                &transaction,
                LOCK_USER,
                ENSURE_USER,
                &[&app_name, &user_id],
                operation,
            )
            .await?;
        } else if created {
            execute(&transaction, ENSURE_USER, &[&app_name, &user_id], operation).await?;
        }
        // The rows are locked, so the values compared here are the ones the writes replace.
        commit.resolve(&app, &user, &session)?;
        if !commit.app.is_empty() {
            StateWrite::apply_all(&commit.app, &mut app);
            execute(
                &transaction,
                WRITE_APP,
                &[&app_name, &Json(&app)],
                operation,
            )
            .await?;
        }
        if !commit.user.is_empty() {
            StateWrite::apply_all(&commit.user, &mut user);
            execute(
                &transaction,
                WRITE_USER,
                &[&app_name, &user_id, &Json(&user)],
                operation,
            )
            .await?;
        }
        // Written even without session writes: the update time says the session was used.
        StateWrite::apply_all(&commit.session, &mut session);
        execute(
            &transaction,
            WRITE_SESSION,
            &[&app_name, &user_id, &id, &Json(&session)],
            operation,
        )
        .await?;
        insert_events(&transaction, key, &commit.events).await?;
        for write in &commit.middleware {
            match write {
                MiddlewareStateWrite::Put(record) => {
                    execute(
                        &transaction,
                        PUT_RECORD,
                        &[
                            &app_name,
                            &user_id,
                            &id,
                            &thread_column(&record.scope),
                            &record.key,
                            &i64::from(record.version),
                            &Json(&record.json),
                        ],
                        operation,
                    )
                    .await?;
                }
                MiddlewareStateWrite::Delete {
                    scope,
                    key: record_key,
                } => {
                    execute(
                        &transaction,
                        DELETE_RECORD,
                        &[&app_name, &user_id, &id, &thread_column(scope), record_key],
                        operation,
                    )
                    .await?;
                }
            }
        }
        transaction.commit().await.map_err(db(operation))
    }

    async fn commit_state(
        &self,
        app: &AppName,
        user: &UserId,
        mut commit: StateCommit,
    ) -> Result<(), SessionStoreError> {
        if commit.is_empty() {
            return Ok(());
        }
        let operation = "committing state outside a turn";
        let mut client = self.client(operation).await?;
        let transaction = client.transaction().await.map_err(db(operation))?;
        let (app_name, user_id) = (app.as_str(), user.as_str());
        // The turn's lock order (app → user), and only the rows written.
        let mut app = Map::new();
        if !commit.app.is_empty() {
            (app, _) =
                lock_or_create(&transaction, LOCK_APP, ENSURE_APP, &[&app_name], operation).await?;
        }
        let mut user = Map::new();
        if !commit.user.is_empty() {
            (user, _) = lock_or_create(
                &transaction,
                LOCK_USER,
                ENSURE_USER,
                &[&app_name, &user_id],
                operation,
            )
            .await?;
        }
        commit.resolve(&app, &user)?;
        if !commit.app.is_empty() {
            StateWrite::apply_all(&commit.app, &mut app);
            execute(
                &transaction,
                WRITE_APP,
                &[&app_name, &Json(&app)],
                operation,
            )
            .await?;
        }
        if !commit.user.is_empty() {
            StateWrite::apply_all(&commit.user, &mut user);
            execute(
                &transaction,
                WRITE_USER,
                &[&app_name, &user_id, &Json(&user)],
                operation,
            )
            .await?;
        }
        transaction.commit().await.map_err(db(operation))
    }

    async fn record_fork(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
        point: ForkPoint,
    ) -> Result<ForkRecord, SessionStoreError> {
        thread.check()?;
        point.thread.check()?;
        let mut client = self.client("recording a fork").await?;
        super::lineage::record(&mut client, key, thread, point).await
    }

    async fn forks(&self, key: &SessionKey) -> Result<Vec<ForkRecord>, SessionStoreError> {
        let client = self.client("reading fork records").await?;
        super::lineage::all(&client, key).await
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
        let operation = "copying a thread's middleware-state records";
        let mut client = self.client(operation).await?;
        let transaction = client.transaction().await.map_err(db(operation))?;
        let (app_name, user_id, id) = (key.app.as_str(), key.user.as_str(), key.session.as_str());
        // The session row first, as a commit takes it, so a commit writing the target thread's
        // records at the same moment waits for the copy (or the copy for it) instead of
        // deadlocking. A missing session has no records to copy.
        execute(
            &transaction,
            "SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3 FOR UPDATE",
            &[&app_name, &user_id, &id],
            operation,
        )
        .await?;
        execute(
            &transaction,
            "DELETE FROM adk_rs_middleware_state
             WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4",
            &[&app_name, &user_id, &id, &to.as_str()],
            operation,
        )
        .await?;
        execute(
            &transaction,
            "INSERT INTO adk_rs_middleware_state
                 (app_name, user_id, session_id, thread_id, record_key, version, record)
             SELECT app_name, user_id, session_id, $4, record_key, version, record
               FROM adk_rs_middleware_state
              WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $5",
            &[&app_name, &user_id, &id, &to.as_str(), &from.as_str()],
            operation,
        )
        .await?;
        transaction.commit().await.map_err(db(operation))
    }
}

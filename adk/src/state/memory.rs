//! [`InMemorySessionStore`]: sessions and their state in process memory, for tests, examples and
//! single-process programs that may forget everything on restart.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::lineage::{ForkPoint, ForkRecord};
use super::store::{
    LoadedTurn, Session, SessionKey, SessionStore, StateCommit, StateWrite, TurnCommit,
    merge_scopes, split_by_scope,
};
use super::{GetSessionConfig, SessionEvent, SessionStoreError};
use crate::ids::{AppName, ThreadId, UserId};
use crate::middleware_state::{MiddlewareStateRecord, MiddlewareStateWrite, RecordScope};

/// A [`SessionStore`] in memory. Cheap to clone; clones share the sessions. Every call takes one
/// short lock, so a commit is atomic and concurrent turns are checked against each other exactly
/// as a database store checks them. Nothing survives the process.
///
/// ```
/// use adk::state::{InMemorySessionStore, SessionKey, SessionStore};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemorySessionStore::new();
/// let key = SessionKey::new("shop", "ada", "s-1");
/// let initial = json!({"step": 1, "user:theme": "dark", "temp:x": 1});
/// let session = store.create_session(&key, initial.as_object().unwrap().clone()).await?;
/// assert_eq!(session.state, *json!({"step": 1, "user:theme": "dark"}).as_object().unwrap());
/// assert_eq!(store.user_state(&key.app, &key.user).await?["theme"], "dark");
/// # Ok::<(), adk::state::SessionStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, Default)]
pub struct InMemorySessionStore {
    inner: Arc<Mutex<Stored>>,
}

#[derive(Debug, Default)]
struct Stored {
    /// Each app's state, shared with the turns that loaded it: a commit changes it in place when
    /// no turn holds it, and otherwise writes a new map, the turns keeping the one they read.
    apps: HashMap<AppName, Arc<Map<String, Value>>>,
    users: HashMap<(AppName, UserId), Map<String, Value>>,
    sessions: HashMap<SessionKey, StoredSession>,
    forks: HashMap<SessionKey, Vec<ForkRecord>>,
}

#[derive(Debug)]
struct StoredSession {
    state: Map<String, Value>,
    last_update_time: Timestamp,
    records: BTreeMap<(RecordScope, String), (u32, Value)>,
    events: Vec<SessionEvent>,
}

impl StoredSession {
    fn new() -> Self {
        Self {
            state: Map::new(),
            last_update_time: Timestamp::now(),
            records: BTreeMap::new(),
            events: Vec::new(),
        }
    }
}

impl InMemorySessionStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Stored> {
        // The data is only changed after every check passed, so a panic elsewhere cannot leave a
        // half-applied commit behind: the poisoned state is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Stored {
    fn session_with(&self, key: &SessionKey, config: GetSessionConfig) -> Option<Session> {
        let mut session = self.session(key)?;
        session.events = config.select(&self.sessions.get(key)?.events);
        Some(session)
    }

    fn session(&self, key: &SessionKey) -> Option<Session> {
        let stored = self.sessions.get(key)?;
        Some(self.session_of(key, stored))
    }

    /// `stored`, the session at `key`, merged with its app's and user's state.
    fn session_of(&self, key: &SessionKey, stored: &StoredSession) -> Session {
        let empty = Map::new();
        let app = self.apps.get(&key.app).map_or(&empty, |app| &**app);
        let user = self
            .users
            .get(&(key.app.clone(), key.user.clone()))
            .unwrap_or(&empty);
        Session {
            key: key.clone(),
            state: merge_scopes(app, user, &stored.state),
            last_update_time: stored.last_update_time,
            events: Vec::new(),
        }
    }
}

impl SessionStore for InMemorySessionStore {
    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        let mut stored = self.lock();
        if stored.sessions.contains_key(key) {
            return Err(SessionStoreError::AlreadyExists {
                app: key.app.clone(),
                user: key.user.clone(),
                session: key.session.clone(),
            });
        }
        let (app, user, session) = split_by_scope(state);
        let kept = stored.apps.entry(key.app.clone()).or_default();
        if !app.is_empty() {
            Arc::make_mut(kept).extend(app);
        }
        stored
            .users
            .entry((key.app.clone(), key.user.clone()))
            .or_default()
            .extend(user);
        let mut new = StoredSession::new();
        new.state = session;
        let session = stored.session_of(key, &new);
        stored.sessions.insert(key.clone(), new);
        Ok(session)
    }

    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        Ok(self.lock().session(key))
    }

    async fn get_session_with(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> Result<Option<Session>, SessionStoreError> {
        Ok(self.lock().session_with(key, config))
    }

    async fn list_sessions(
        &self,
        app: &AppName,
        user: Option<&UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        let stored = self.lock();
        let mut sessions: Vec<Session> = stored
            .sessions
            .keys()
            .filter(|key| &key.app == app && user.is_none_or(|user| &key.user == user))
            .filter_map(|key| stored.session(key))
            .collect();
        sessions.sort_by(|left, right| {
            (left.last_update_time, &left.key.user, &left.key.session).cmp(&(
                right.last_update_time,
                &right.key.user,
                &right.key.session,
            ))
        });
        Ok(sessions)
    }

    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        let mut stored = self.lock();
        stored.sessions.remove(key);
        stored.forks.remove(key);
        Ok(())
    }

    async fn app_state(&self, app: &AppName) -> Result<Map<String, Value>, SessionStoreError> {
        Ok(self
            .lock()
            .apps
            .get(app)
            .map(|app| Map::clone(app))
            .unwrap_or_default())
    }

    async fn user_state(
        &self,
        app: &AppName,
        user: &UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        Ok(self
            .lock()
            .users
            .get(&(app.clone(), user.clone()))
            .cloned()
            .unwrap_or_default())
    }

    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        thread.check()?;
        let stored = self.lock();
        let session = stored.sessions.get(key);
        let middleware = session
            .map(|session| {
                session
                    .records
                    .iter()
                    .filter(|((scope, _), _)| match scope {
                        RecordScope::Session => true,
                        RecordScope::Thread(of) => of == thread,
                    })
                    .map(|((scope, key), (version, json))| MiddlewareStateRecord {
                        scope: scope.clone(),
                        key: key.clone(),
                        version: *version,
                        json: json.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(LoadedTurn {
            app: stored.apps.get(&key.app).cloned().unwrap_or_default(),
            user: stored
                .users
                .get(&(key.app.clone(), key.user.clone()))
                .cloned()
                .unwrap_or_default(),
            session: session
                .map(|session| session.state.clone())
                .unwrap_or_default(),
            middleware,
        })
    }

    async fn commit_turn(
        &self,
        key: &SessionKey,
        mut commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        commit.check_threads()?;
        let mut guard = self.lock();
        let stored = &mut *guard;
        let empty = Map::new();
        let user_key = (key.app.clone(), key.user.clone());
        commit.resolve(
            stored.apps.get(&key.app).map_or(&empty, |app| &**app),
            stored.users.get(&user_key).unwrap_or(&empty),
            stored
                .sessions
                .get(key)
                .map_or(&empty, |session| &session.state),
        )?;
        // Checked: from here on nothing can fail, so the commit is applied whole.
        if !commit.app.is_empty() {
            let kept = stored.apps.entry(key.app.clone()).or_default();
            StateWrite::apply_all(&commit.app, Arc::make_mut(kept));
        }
        if !commit.user.is_empty() {
            StateWrite::apply_all(&commit.user, stored.users.entry(user_key).or_default());
        }
        let session = stored
            .sessions
            .entry(key.clone())
            .or_insert_with(StoredSession::new);
        StateWrite::apply_all(&commit.session, &mut session.state);
        for write in commit.middleware {
            match write {
                MiddlewareStateWrite::Put(record) => {
                    session
                        .records
                        .insert((record.scope, record.key), (record.version, record.json));
                }
                MiddlewareStateWrite::Delete { scope, key } => {
                    session.records.remove(&(scope, key));
                }
            }
        }
        append_events(&mut session.events, commit.events);
        session.last_update_time = Timestamp::now();
        Ok(())
    }

    async fn commit_state(
        &self,
        app: &AppName,
        user: &UserId,
        mut commit: StateCommit,
    ) -> Result<(), SessionStoreError> {
        let mut guard = self.lock();
        let stored = &mut *guard;
        let empty = Map::new();
        let user_key = (app.clone(), user.clone());
        commit.resolve(
            stored.apps.get(app).map_or(&empty, |app| &**app),
            stored.users.get(&user_key).unwrap_or(&empty),
        )?;
        if !commit.app.is_empty() {
            let kept = stored.apps.entry(app.clone()).or_default();
            StateWrite::apply_all(&commit.app, Arc::make_mut(kept));
        }
        if !commit.user.is_empty() {
            StateWrite::apply_all(&commit.user, stored.users.entry(user_key).or_default());
        }
        Ok(())
    }

    async fn record_fork(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
        point: ForkPoint,
    ) -> Result<ForkRecord, SessionStoreError> {
        thread.check()?;
        point.thread.check()?;
        let mut stored = self.lock();
        let forks = stored.forks.entry(key.clone()).or_default();
        if forks.iter().any(|fork| &fork.thread == thread) {
            return Err(SessionStoreError::ThreadAlreadyForked {
                thread: thread.clone(),
            });
        }
        let sibling_index = forks
            .iter()
            .filter(|fork| fork.point == point)
            .map(|fork| fork.sibling_index)
            .max()
            .unwrap_or(0)
            + 1;
        let record = ForkRecord {
            thread: thread.clone(),
            point,
            sibling_index,
        };
        forks.push(record.clone());
        Ok(record)
    }

    async fn forks(&self, key: &SessionKey) -> Result<Vec<ForkRecord>, SessionStoreError> {
        Ok(self.lock().forks.get(key).cloned().unwrap_or_default())
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
            // Replacing a thread's records with themselves: clearing the target first would
            // lose them.
            return Ok(());
        }
        let mut stored = self.lock();
        let Some(session) = stored.sessions.get_mut(key) else {
            return Ok(());
        };
        let source = RecordScope::Thread(from.clone());
        let target = RecordScope::Thread(to.clone());
        session.records.retain(|(scope, _), _| scope != &target);
        let copies: Vec<_> = session
            .records
            .iter()
            .filter(|((scope, _), _)| scope == &source)
            .map(|((_, name), value)| ((target.clone(), name.clone()), value.clone()))
            .collect();
        session.records.extend(copies);
        Ok(())
    }
}

/// Appends `new` keeping `events` ordered by timestamp (stable: equal timestamps keep the order
/// appended), as the database stores read them back.
fn append_events(events: &mut Vec<SessionEvent>, new: Vec<SessionEvent>) {
    for event in new {
        let at = events.partition_point(|stored| stored.timestamp <= event.timestamp);
        events.insert(at, event);
    }
}

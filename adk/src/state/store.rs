//! The [`SessionStore`] contract: sessions and their state, one load and one atomic commit per
//! turn, and the type-erased form the runner holds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::lineage::{ForkPoint, ForkRecord, ThreadLineage};
use super::{GetSessionConfig, Scope, SessionEvent, SessionStoreError, StateChange};
use crate::ids::{AppName, SessionId, ThreadId, UserId};
use crate::middleware_state::{MiddlewareStateRecord, MiddlewareStateWrite, RecordScope};

/// Which session: app, user and session id together (a session id is unique within its user and
/// app, as in Google ADK).
///
/// ```
/// use adk::state::SessionKey;
///
/// let key = SessionKey::new("shop", "ada", "s-1");
/// assert_eq!(key.app.as_str(), "shop");
/// assert_eq!(key.to_string(), "shop/ada/s-1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    /// The app.
    pub app: AppName,
    /// The user.
    pub user: UserId,
    /// The session.
    pub session: SessionId,
}

impl SessionKey {
    /// The key of session `session` of `user` in `app`.
    pub fn new(
        app: impl Into<AppName>,
        user: impl Into<UserId>,
        session: impl Into<SessionId>,
    ) -> Self {
        Self {
            app: app.into(),
            user: user.into(),
            session: session.into(),
        }
    }
}

impl std::fmt::Display for SessionKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}/{}/{}", self.app, self.user, self.session)
    }
}

/// A session as a store returns it: its key, its merged state (session keys bare, `user:` and
/// `app:` keys with their prefixes, never `temp:`), when it last changed, and the events the
/// read asked for ([`SessionStore::get_session_with`]; none from the other reads).
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// Which session.
    pub key: SessionKey,
    /// The merged state.
    pub state: Map<String, Value>,
    /// When the session was created or last committed to.
    pub last_update_time: jiff::Timestamp,
    /// The events in the window asked for, oldest first; empty from `get_session`,
    /// `list_sessions` and `create_session`, which read no events.
    pub events: Vec<SessionEvent>,
}

/// Everything a turn needs from the store, read once at turn start. Keys are stored without
/// their prefixes; [`State::from_loaded`](super::State::from_loaded) merges them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedTurn {
    /// The app's state, shared: a store that keeps the app's document between turns hands every
    /// turn the same map instead of a copy (build one from an owned map with `Arc::new(map)` or
    /// `map.into()`).
    pub app: Arc<Map<String, Value>>,
    /// The user's state in this app.
    pub user: Map<String, Value>,
    /// The session's state (empty for a session that does not exist yet).
    pub session: Map<String, Value>,
    /// The session's middleware-state records, and the turn's thread's.
    pub middleware: Vec<MiddlewareStateRecord>,
}

/// One write of a turn's commit: a key's name (prefix stripped), its change, and the value the
/// turn loaded for it (`None`: absent). A store refuses the whole commit with
/// [`SessionStoreError::Stale`] when a `Set` or `Delete` key's stored value is no longer
/// `expected`; a [`StateChange::Merge`] is never stale (its `expected` is not checked).
#[derive(Clone, Debug, PartialEq)]
pub struct StateWrite {
    /// The key without its scope prefix.
    pub name: String,
    /// The new value, or a deletion.
    pub change: StateChange,
    /// What the turn loaded for this key.
    pub expected: Option<Value>,
}

impl StateWrite {
    /// Applies `writes` to `state` (unprefixed keys), in order. For store implementations: call
    /// it on the state read inside the commit's transaction, after
    /// [`TurnCommit::resolve`] (which reports a merge that cannot be applied; here such a merge
    /// leaves the key unchanged).
    pub fn apply_all(writes: &[StateWrite], state: &mut Map<String, Value>) {
        for write in writes {
            match &write.change {
                StateChange::Set(value) => {
                    state.insert(write.name.clone(), value.clone());
                }
                StateChange::Merge(merge) => {
                    if let Ok(value) = merge.apply(state.get(&write.name)) {
                        state.insert(write.name.clone(), value);
                    }
                }
                StateChange::Delete => {
                    state.remove(&write.name);
                }
            }
        }
    }
}

/// Splits the state given to `create_session` into app, user and session parts (prefixes
/// stripped), dropping `temp:` keys. For store implementations.
///
/// ```
/// use serde_json::json;
///
/// let state = json!({"app:motd": "hi", "user:theme": "dark", "step": 1, "temp:x": true});
/// let (app, user, session) = adk::state::split_by_scope(state.as_object().unwrap().clone());
/// assert_eq!(app, *json!({"motd": "hi"}).as_object().unwrap());
/// assert_eq!(user, *json!({"theme": "dark"}).as_object().unwrap());
/// assert_eq!(session, *json!({"step": 1}).as_object().unwrap());
/// ```
#[must_use]
pub fn split_by_scope(
    state: Map<String, Value>,
) -> (Map<String, Value>, Map<String, Value>, Map<String, Value>) {
    let (mut app, mut user, mut session) = (Map::new(), Map::new(), Map::new());
    for (key, value) in state {
        match Scope::of(&key) {
            (Scope::App, name) => app.insert(name.to_owned(), value),
            (Scope::User, name) => user.insert(name.to_owned(), value),
            (Scope::Session, _) => session.insert(key, value),
            (Scope::Temp, _) => None,
        };
    }
    (app, user, session)
}

/// The merged view of a session's state: session keys bare, then `user:` and `app:` keys with
/// their prefixes. For store implementations.
#[must_use]
pub fn merge_scopes(
    app: &Map<String, Value>,
    user: &Map<String, Value>,
    session: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = session.clone();
    for (name, value) in user {
        merged.insert(Scope::User.key(name), value.clone());
    }
    for (name, value) in app {
        merged.insert(Scope::App.key(name), value.clone());
    }
    merged
}

/// What a turn commits, in one atomic write: the state delta by scope (never `temp:`), the
/// middleware-state record writes and the session events the turn appends.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnCommit {
    /// The thread the turn ran in (for thread-scoped middleware-state records).
    pub thread: ThreadId,
    /// `app:` writes.
    pub app: Vec<StateWrite>,
    /// `user:` writes.
    pub user: Vec<StateWrite>,
    /// Session writes.
    pub session: Vec<StateWrite>,
    /// Middleware-state record writes, applied in order.
    pub middleware: Vec<MiddlewareStateWrite>,
    /// The events the turn appends to the session, oldest first.
    pub events: Vec<SessionEvent>,
    /// The turn's assistant messages its storage adapter held back for this commit (see
    /// [`SessionStore::commit_partner`]); a store without a partner ignores them.
    #[doc(hidden)]
    pub held: crate::storage::TurnWrites,
}

impl TurnCommit {
    /// The keys (prefixed) whose stored values are no longer what the turn loaded, given the
    /// stored app, user and session state (unprefixed). Empty means the commit may be applied.
    /// For store implementations.
    ///
    /// ```
    /// use adk::state::{StateChange, StateWrite, TurnCommit};
    /// use serde_json::{json, Map};
    ///
    /// let commit = TurnCommit {
    ///     user: vec![StateWrite { name: "theme".into(), change: StateChange::Set(json!("dark")), expected: None }],
    ///     ..TurnCommit::default()
    /// };
    /// let mut stored_user = Map::new();
    /// assert!(commit.stale_keys(&Map::new(), &stored_user, &Map::new()).is_empty());
    /// stored_user.insert("theme".into(), json!("light")); // another turn wrote it meanwhile
    /// assert_eq!(commit.stale_keys(&Map::new(), &stored_user, &Map::new()), ["user:theme"]);
    /// ```
    #[must_use]
    pub fn stale_keys(
        &self,
        app: &Map<String, Value>,
        user: &Map<String, Value>,
        session: &Map<String, Value>,
    ) -> Vec<String> {
        let mut stale = Vec::new();
        for (scope, writes, stored) in [
            (Scope::App, &self.app, app),
            (Scope::User, &self.user, user),
            (Scope::Session, &self.session, session),
        ] {
            for write in writes {
                if !matches!(write.change, StateChange::Merge(_))
                    && stored.get(&write.name) != write.expected.as_ref()
                {
                    stale.push(scope.key(&write.name));
                }
            }
        }
        stale
    }

    /// Checks the commit against the stored app, user and session state (unprefixed) read
    /// inside the commit's transaction, and turns each merge into the value it produces from
    /// them, so [`StateWrite::apply_all`] then writes plain values. For store implementations:
    /// this is the whole contention rule (stale refusal for `refuse` keys, last writer wins,
    /// merges applied to the stored value).
    ///
    /// ```
    /// use adk::state::{StateChange, StateWrite, TurnCommit};
    /// use serde_json::{json, Map};
    ///
    /// let commit = TurnCommit {
    ///     app: vec![StateWrite { name: "motd".into(), change: StateChange::Set(json!("hi")), expected: None }],
    ///     ..TurnCommit::default()
    /// };
    /// let mut stored_app = Map::new();
    /// stored_app.insert("motd".into(), json!("hello")); // another turn wrote it meanwhile
    /// let error = commit.clone().resolve(&stored_app, &Map::new(), &Map::new()).unwrap_err();
    /// assert!(error.to_string().contains("app:motd"), "{error}");
    /// ```
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::Stale`] naming every stale key, or
    /// [`SessionStoreError::MergeRefused`]; the commit must then apply nothing.
    pub fn resolve(
        &mut self,
        app: &Map<String, Value>,
        user: &Map<String, Value>,
        session: &Map<String, Value>,
    ) -> Result<(), SessionStoreError> {
        let stale = self.stale_keys(app, user, session);
        if !stale.is_empty() {
            return Err(SessionStoreError::Stale { keys: stale });
        }
        for (scope, writes, stored) in [
            (Scope::App, &mut self.app, app),
            (Scope::User, &mut self.user, user),
            (Scope::Session, &mut self.session, session),
        ] {
            resolve_merges(scope, writes, stored)?;
        }
        Ok(())
    }

    /// Checks every thread id the commit names (its thread and each thread-scoped record) with
    /// [`ThreadId::check`]. For store implementations: a store refuses a commit that fails it
    /// before writing anything.
    ///
    /// ```
    /// use adk::state::TurnCommit;
    ///
    /// assert!(TurnCommit::default().check_threads().is_ok());
    /// let commit = TurnCommit { thread: "".into(), ..TurnCommit::default() };
    /// assert!(commit.check_threads().is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`InvalidThreadId`](crate::ids::InvalidThreadId).
    pub fn check_threads(&self) -> Result<(), crate::ids::InvalidThreadId> {
        self.thread.check()?;
        for write in &self.middleware {
            let scope = match write {
                MiddlewareStateWrite::Put(record) => &record.scope,
                MiddlewareStateWrite::Delete { scope, .. } => scope,
            };
            if let RecordScope::Thread(thread) = scope {
                thread.check()?;
            }
        }
        Ok(())
    }

    /// Whether there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.app.is_empty()
            && self.user.is_empty()
            && self.session.is_empty()
            && self.middleware.is_empty()
            && self.events.is_empty()
    }
}

/// What [`SessionStore::commit_state`] applies outside any turn, atomically: app and user
/// writes, each with the value the writer read for its key (the stale check, as in a turn's
/// commit). [`StateEdit`](super::StateEdit) builds one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StateCommit {
    /// `app:` writes (names without the prefix).
    pub app: Vec<StateWrite>,
    /// `user:` writes (names without the prefix).
    pub user: Vec<StateWrite>,
}

/// Replaces each merge of `writes` with the value it produces from `stored`.
fn resolve_merges(
    scope: Scope,
    writes: &mut [StateWrite],
    stored: &Map<String, Value>,
) -> Result<(), SessionStoreError> {
    for write in writes {
        if let StateChange::Merge(merge) = &write.change {
            let value = merge.apply(stored.get(&write.name)).map_err(|reason| {
                SessionStoreError::MergeRefused {
                    key: scope.key(&write.name),
                    reason,
                }
            })?;
            write.change = StateChange::Set(value);
        }
    }
    Ok(())
}

impl StateCommit {
    /// As [`TurnCommit::resolve`], for app and user writes outside a turn. For store
    /// implementations.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::Stale`] or [`SessionStoreError::MergeRefused`].
    pub fn resolve(
        &mut self,
        app: &Map<String, Value>,
        user: &Map<String, Value>,
    ) -> Result<(), SessionStoreError> {
        let stale = self.stale_keys(app, user);
        if !stale.is_empty() {
            return Err(SessionStoreError::Stale { keys: stale });
        }
        resolve_merges(Scope::App, &mut self.app, app)?;
        resolve_merges(Scope::User, &mut self.user, user)
    }

    /// The keys (prefixed) whose stored values are no longer what the writer read, given the
    /// stored app and user state. For store implementations.
    #[must_use]
    pub fn stale_keys(&self, app: &Map<String, Value>, user: &Map<String, Value>) -> Vec<String> {
        TurnCommit {
            app: self.app.clone(),
            user: self.user.clone(),
            ..TurnCommit::default()
        }
        .stale_keys(app, user, &Map::new())
    }

    /// Whether there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.app.is_empty() && self.user.is_empty()
    }
}

type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

/// Where sessions and their state live between turns.
///
/// The runner calls [`load_turn`](Self::load_turn) once when a turn starts and
/// [`commit_turn`](Self::commit_turn) once when it completes; the rest is for applications and
/// tools. Every method must be safe to call from many turns at once. Check an implementation
/// with [`conformance`](super::conformance).
///
/// Rules every store keeps (Google ADK's `DatabaseSessionService`, per key):
/// - `temp:` keys are never stored: `create_session` drops them.
/// - App and user state are stored without their prefix and merged back, prefixed, on read.
/// - JSON `null` is a value; a [`StateChange::Delete`] removes the key.
/// - A commit is all or nothing: app, user, session and middleware parts together, or none.
/// - A commit whose write would overwrite a key whose stored value is no longer the one the turn
///   loaded is refused with [`SessionStoreError::Stale`], applying nothing. Writes to other keys
///   by other turns do not make a commit stale.
/// - A [`StateChange::Merge`] (a `last_writer_wins` or merge-policy key) is never stale: it is
///   applied to the value stored when the commit is applied, read inside the same atomic write
///   ([`TurnCommit::resolve`] does both rules; a merge the stored value cannot take refuses the
///   commit with [`SessionStoreError::MergeRefused`]).
/// - Committing to a session that does not exist creates it.
/// - A thread id that fails [`ThreadId::check`] (empty, too long, a control character) is
///   refused with [`SessionStoreError::InvalidThreadId`] by `load_turn`, `commit_turn` and
///   `copy_thread_records`, before anything is read or written.
/// - A commit's events are appended with its state, in the same all-or-nothing write; a refused
///   commit appends none. [`get_session_with`](Self::get_session_with) returns them oldest
///   first (by timestamp, then in the order appended) and applies the window as Google ADK
///   does: `after_timestamp` inclusive, then the `num_recent_events` most recent.
/// - Deleting a session keeps its app and user state and deletes its events.
pub trait SessionStore: Send + Sync + 'static {
    /// Creates a session with `state` (`temp:` keys dropped; `app:`/`user:` keys go to the app's
    /// and user's state) and returns it merged.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::AlreadyExists`] when the key is taken.
    fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> impl Future<Output = Result<Session, SessionStoreError>> + Send;

    /// The session with its merged state, or `None`.
    fn get_session(
        &self,
        key: &SessionKey,
    ) -> impl Future<Output = Result<Option<Session>, SessionStoreError>> + Send;

    /// The session with its merged state and the events `config` selects (Google ADK's
    /// `get_session(config=...)`; [`GetSessionConfig::default`]: every event), or `None`. State
    /// and events are read together, so the events are the ones that produced that state.
    ///
    /// # Errors
    ///
    /// The default implementation, for a store that keeps no events, returns
    /// [`SessionStoreError::EventsUnsupported`].
    fn get_session_with(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> impl Future<Output = Result<Option<Session>, SessionStoreError>> + Send {
        let _ = (key, config);
        async { Err(SessionStoreError::EventsUnsupported) }
    }

    /// The app's sessions (of one user, or of all when `user` is `None`) with merged state,
    /// ordered by last update time, then user, then id.
    fn list_sessions(
        &self,
        app: &AppName,
        user: Option<&UserId>,
    ) -> impl Future<Output = Result<Vec<Session>, SessionStoreError>> + Send;

    /// Deletes the session and its middleware-state records; its app and user state stay.
    /// Deleting a missing session is not an error.
    fn delete_session(
        &self,
        key: &SessionKey,
    ) -> impl Future<Output = Result<(), SessionStoreError>> + Send;

    /// The app's state, keys without their prefix.
    fn app_state(
        &self,
        app: &AppName,
    ) -> impl Future<Output = Result<Map<String, Value>, SessionStoreError>> + Send;

    /// The user's state in the app, keys without their prefix.
    fn user_state(
        &self,
        app: &AppName,
        user: &UserId,
    ) -> impl Future<Output = Result<Map<String, Value>, SessionStoreError>> + Send;

    /// Everything a turn of `key` in `thread` needs, in one read.
    fn load_turn(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> impl Future<Output = Result<LoadedTurn, SessionStoreError>> + Send;

    /// Applies one turn's commit atomically.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::Stale`] (nothing applied) or a backend failure (nothing applied).
    fn commit_turn(
        &self,
        key: &SessionKey,
        commit: TurnCommit,
    ) -> impl Future<Output = Result<(), SessionStoreError>> + Send;

    /// The database this store commits to, when a storage adapter on the same database may
    /// hold a turn's assistant messages for [`commit_turn`](Self::commit_turn) to write in the
    /// commit's transaction (PostgreSQL's store and adapter from one pool do). `None`, the
    /// default: every write goes out when it is made.
    #[doc(hidden)]
    fn commit_partner(&self) -> Option<crate::storage::CommitPartner> {
        None
    }

    /// Copies the thread-scoped middleware-state records of `from` to `to` (replacing `to`'s),
    /// atomically: the record-level primitive a fork needs.
    fn copy_thread_records(
        &self,
        key: &SessionKey,
        from: &ThreadId,
        to: &ThreadId,
    ) -> impl Future<Output = Result<(), SessionStoreError>> + Send;

    /// Applies app and user writes outside any turn (an onboarding form setting a preference),
    /// atomically and under a turn's stale rule: when a key's stored value is no longer the
    /// `expected` one, nothing is applied and the keys are named in
    /// [`SessionStoreError::Stale`]. No session is created or touched. Use it through
    /// [`StateEdit`](super::StateEdit).
    ///
    /// The default refuses with [`SessionStoreError::Unsupported`], so stores written before
    /// this method keep compiling; the crate's stores implement it.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::Stale`] or a backend failure; nothing was applied.
    fn commit_state(
        &self,
        app: &AppName,
        user: &UserId,
        commit: StateCommit,
    ) -> impl Future<Output = Result<(), SessionStoreError>> + Send {
        let _ = (app, user, commit);
        std::future::ready(Err(SessionStoreError::Unsupported {
            operation: "commit_state",
        }))
    }

    /// Records that `thread` was forked from `point` (HPD's thread lineage), assigning its
    /// sibling index atomically: one more than the forks already recorded at `point` (the
    /// first is 1). [`Fork`](super::Fork) calls it; read it back with
    /// [`thread_lineage`](Self::thread_lineage). Deleting the session deletes its records.
    ///
    /// The default refuses with [`SessionStoreError::Unsupported`]; the crate's stores
    /// implement it.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::InvalidThreadId`] for a bad thread id (nothing written),
    /// [`SessionStoreError::ThreadAlreadyForked`] when `thread` already has a record, or a
    /// backend failure.
    fn record_fork(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
        point: ForkPoint,
    ) -> impl Future<Output = Result<ForkRecord, SessionStoreError>> + Send {
        let _ = (key, thread, point);
        std::future::ready(Err(SessionStoreError::Unsupported {
            operation: "record_fork",
        }))
    }

    /// Every fork recorded in the session, in no particular order.
    ///
    /// The default refuses with [`SessionStoreError::Unsupported`].
    fn forks(
        &self,
        key: &SessionKey,
    ) -> impl Future<Output = Result<Vec<ForkRecord>, SessionStoreError>> + Send {
        let _ = key;
        std::future::ready(Err(SessionStoreError::Unsupported { operation: "forks" }))
    }

    /// The lineage of `thread`: where it was forked from, its sibling index, previous and next
    /// sibling, whether it is an original, and the forks taken from it (see
    /// [`ThreadLineage`]). A thread with no record is an original.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::InvalidThreadId`], or what [`forks`](Self::forks) returns.
    fn thread_lineage(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> impl Future<Output = Result<ThreadLineage, SessionStoreError>> + Send {
        async move {
            thread.check()?;
            let forks = self.forks(key).await?;
            Ok(ThreadLineage::of(thread, &forks))
        }
    }
}

/// The object-safe mirror of [`SessionStore`], implemented for every store.
#[doc(hidden)]
pub trait DynSessionStore: Send + Sync + 'static {
    fn create_session<'a>(
        &'a self,
        key: &'a SessionKey,
        state: Map<String, Value>,
    ) -> StoreFuture<'a, Session>;
    fn get_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<Session>>;
    fn get_session_with<'a>(
        &'a self,
        key: &'a SessionKey,
        config: GetSessionConfig,
    ) -> StoreFuture<'a, Option<Session>>;
    fn list_sessions<'a>(
        &'a self,
        app: &'a AppName,
        user: Option<&'a UserId>,
    ) -> StoreFuture<'a, Vec<Session>>;
    fn delete_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, ()>;
    fn app_state<'a>(&'a self, app: &'a AppName) -> StoreFuture<'a, Map<String, Value>>;
    fn user_state<'a>(
        &'a self,
        app: &'a AppName,
        user: &'a UserId,
    ) -> StoreFuture<'a, Map<String, Value>>;
    fn load_turn<'a>(
        &'a self,
        key: &'a SessionKey,
        thread: &'a ThreadId,
    ) -> StoreFuture<'a, LoadedTurn>;
    fn commit_turn<'a>(&'a self, key: &'a SessionKey, commit: TurnCommit) -> StoreFuture<'a, ()>;
    fn commit_partner(&self) -> Option<crate::storage::CommitPartner>;
    fn copy_thread_records<'a>(
        &'a self,
        key: &'a SessionKey,
        from: &'a ThreadId,
        to: &'a ThreadId,
    ) -> StoreFuture<'a, ()>;
    fn commit_state<'a>(
        &'a self,
        app: &'a AppName,
        user: &'a UserId,
        commit: StateCommit,
    ) -> StoreFuture<'a, ()>;
    fn record_fork<'a>(
        &'a self,
        key: &'a SessionKey,
        thread: &'a ThreadId,
        point: ForkPoint,
    ) -> StoreFuture<'a, ForkRecord>;
    fn forks<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Vec<ForkRecord>>;
}

impl<S: SessionStore> DynSessionStore for S {
    fn create_session<'a>(
        &'a self,
        key: &'a SessionKey,
        state: Map<String, Value>,
    ) -> StoreFuture<'a, Session> {
        Box::pin(SessionStore::create_session(self, key, state))
    }
    fn get_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Option<Session>> {
        Box::pin(SessionStore::get_session(self, key))
    }
    fn get_session_with<'a>(
        &'a self,
        key: &'a SessionKey,
        config: GetSessionConfig,
    ) -> StoreFuture<'a, Option<Session>> {
        Box::pin(SessionStore::get_session_with(self, key, config))
    }
    fn list_sessions<'a>(
        &'a self,
        app: &'a AppName,
        user: Option<&'a UserId>,
    ) -> StoreFuture<'a, Vec<Session>> {
        Box::pin(SessionStore::list_sessions(self, app, user))
    }
    fn delete_session<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, ()> {
        Box::pin(SessionStore::delete_session(self, key))
    }
    fn app_state<'a>(&'a self, app: &'a AppName) -> StoreFuture<'a, Map<String, Value>> {
        Box::pin(SessionStore::app_state(self, app))
    }
    fn user_state<'a>(
        &'a self,
        app: &'a AppName,
        user: &'a UserId,
    ) -> StoreFuture<'a, Map<String, Value>> {
        Box::pin(SessionStore::user_state(self, app, user))
    }
    fn load_turn<'a>(
        &'a self,
        key: &'a SessionKey,
        thread: &'a ThreadId,
    ) -> StoreFuture<'a, LoadedTurn> {
        Box::pin(SessionStore::load_turn(self, key, thread))
    }
    fn commit_turn<'a>(&'a self, key: &'a SessionKey, commit: TurnCommit) -> StoreFuture<'a, ()> {
        Box::pin(SessionStore::commit_turn(self, key, commit))
    }
    fn commit_partner(&self) -> Option<crate::storage::CommitPartner> {
        SessionStore::commit_partner(self)
    }
    fn copy_thread_records<'a>(
        &'a self,
        key: &'a SessionKey,
        from: &'a ThreadId,
        to: &'a ThreadId,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SessionStore::copy_thread_records(self, key, from, to))
    }
    fn commit_state<'a>(
        &'a self,
        app: &'a AppName,
        user: &'a UserId,
        commit: StateCommit,
    ) -> StoreFuture<'a, ()> {
        Box::pin(SessionStore::commit_state(self, app, user, commit))
    }
    fn record_fork<'a>(
        &'a self,
        key: &'a SessionKey,
        thread: &'a ThreadId,
        point: ForkPoint,
    ) -> StoreFuture<'a, ForkRecord> {
        Box::pin(SessionStore::record_fork(self, key, thread, point))
    }
    fn forks<'a>(&'a self, key: &'a SessionKey) -> StoreFuture<'a, Vec<ForkRecord>> {
        Box::pin(SessionStore::forks(self, key))
    }
}

/// A session store behind an `Arc`, type-erased: what the runner holds. Cheap to clone; it is
/// itself a [`SessionStore`], so code written against the trait takes it too.
///
/// ```
/// use adk::state::{InMemorySessionStore, SessionKey, SharedSessionStore, SessionStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = SharedSessionStore::new(InMemorySessionStore::new());
/// let key = SessionKey::new("shop", "ada", "s-1");
/// store.create_session(&key, Default::default()).await?;
/// assert!(store.get_session(&key).await?.is_some());
/// # Ok::<(), adk::state::SessionStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SharedSessionStore(Arc<dyn DynSessionStore>);

impl SharedSessionStore {
    /// Erases `store`.
    pub fn new(store: impl SessionStore) -> Self {
        Self(Arc::new(store))
    }
}

impl std::fmt::Debug for SharedSessionStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SharedSessionStore")
    }
}

impl SessionStore for SharedSessionStore {
    async fn create_session(
        &self,
        key: &SessionKey,
        state: Map<String, Value>,
    ) -> Result<Session, SessionStoreError> {
        self.0.create_session(key, state).await
    }
    async fn get_session(&self, key: &SessionKey) -> Result<Option<Session>, SessionStoreError> {
        self.0.get_session(key).await
    }
    async fn get_session_with(
        &self,
        key: &SessionKey,
        config: GetSessionConfig,
    ) -> Result<Option<Session>, SessionStoreError> {
        self.0.get_session_with(key, config).await
    }
    async fn list_sessions(
        &self,
        app: &AppName,
        user: Option<&UserId>,
    ) -> Result<Vec<Session>, SessionStoreError> {
        self.0.list_sessions(app, user).await
    }
    async fn delete_session(&self, key: &SessionKey) -> Result<(), SessionStoreError> {
        self.0.delete_session(key).await
    }
    async fn app_state(&self, app: &AppName) -> Result<Map<String, Value>, SessionStoreError> {
        self.0.app_state(app).await
    }
    async fn user_state(
        &self,
        app: &AppName,
        user: &UserId,
    ) -> Result<Map<String, Value>, SessionStoreError> {
        self.0.user_state(app, user).await
    }
    async fn load_turn(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
    ) -> Result<LoadedTurn, SessionStoreError> {
        self.0.load_turn(key, thread).await
    }
    async fn commit_turn(
        &self,
        key: &SessionKey,
        commit: TurnCommit,
    ) -> Result<(), SessionStoreError> {
        self.0.commit_turn(key, commit).await
    }
    fn commit_partner(&self) -> Option<crate::storage::CommitPartner> {
        self.0.commit_partner()
    }
    async fn copy_thread_records(
        &self,
        key: &SessionKey,
        from: &ThreadId,
        to: &ThreadId,
    ) -> Result<(), SessionStoreError> {
        self.0.copy_thread_records(key, from, to).await
    }
    async fn commit_state(
        &self,
        app: &AppName,
        user: &UserId,
        commit: StateCommit,
    ) -> Result<(), SessionStoreError> {
        self.0.commit_state(app, user, commit).await
    }
    async fn record_fork(
        &self,
        key: &SessionKey,
        thread: &ThreadId,
        point: ForkPoint,
    ) -> Result<ForkRecord, SessionStoreError> {
        self.0.record_fork(key, thread, point).await
    }
    async fn forks(&self, key: &SessionKey) -> Result<Vec<ForkRecord>, SessionStoreError> {
        self.0.forks(key).await
    }
}

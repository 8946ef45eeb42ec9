//! [`State`]: the merged view of session, user, app and temporary state a turn reads and writes,
//! and the delta it records.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::contention::{Add, Counter, MergeOp, MergePolicy, Policy, PolicyKind};
use super::store::{LoadedTurn, StateWrite, TurnCommit, merge_scopes};
use super::{Scope, StateError, StateKey, StateValue};
use crate::ids::ThreadId;
use crate::lean::Lean;
use crate::middleware_state::MiddlewareStates;
use crate::middleware_state::{MiddlewareStateRecord, MiddlewareStateWrite};

/// One recorded change to a key: a new value (JSON `null` included), a deletion, or a merge the
/// store applies to the value it holds at commit.
#[derive(Clone, Debug, PartialEq)]
pub enum StateChange {
    /// The key now holds this value. `Value::Null` is a value, not a deletion. Refused as stale
    /// when another turn changed the key since this turn loaded it.
    Set(Value),
    /// The key was deleted (refused as stale like a `Set`).
    Delete,
    /// A merge of a `last_writer_wins` or merge-policy key (see
    /// [`contention`](super::contention)): never stale, applied by the store to the value it
    /// reads inside the commit's transaction.
    Merge(MergeOp),
}

/// The state a turn sees: what the session store loaded (session keys bare, app and user keys
/// with their prefixes) overlaid with the turn's own writes.
///
/// Writes go through at once: the next read, by any later middleware of the turn, sees them. Each
/// write is also recorded in the turn's delta, which the runner commits to the session store at
/// the end of a completed turn (`temp:` keys are never committed). Reach it through
/// `ctx.state()` and `ctx.state_mut()` on [`TurnContext`](crate::TurnContext) and
/// [`DispatchContext`](crate::DispatchContext).
///
/// ```rust,standalone_crate
/// use adk::state::State;
/// use serde_json::json;
///
/// const THEME: adk::state::StateKey<String> = adk::state_key!("user:theme" => String);
///
/// let mut state = State::new();
/// state.set(THEME, "dark".to_owned())?;
/// state.set_value("step", json!(2))?;
/// state.set_value("temp:scratch", json!(null))?;
///
/// assert_eq!(state.get(THEME)?, Some("dark".to_owned()));
/// assert!(state.has("temp:scratch")); // null is a value
/// assert!(state.delete("step"));
/// assert!(!state.has("step"));
/// assert_eq!(state.to_map(), json!({"user:theme": "dark", "temp:scratch": null}).as_object().unwrap().clone());
/// # Ok::<(), adk::state::StateError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct State {
    /// `None`: nothing loaded (a turn without a session store), read as [`Loaded::empty`].
    /// Not a clone of a shared empty `Arc`: that was two locked increments and two decrements
    /// a turn (its state and its dispatch's copy), for nothing.
    ///
    /// Every field is [`Lean`]: most states hold nothing, and a turn drops two (its own and its
    /// dispatch's copy), each field's drop glue an out-of-line call otherwise.
    loaded: Lean<Option<Arc<Loaded>>>,
    changes: Changes,
    /// Changes not yet handed on, kept only by a dispatch's copy (see `with_journal`).
    journal: Option<Lean<Vec<(String, StateChange)>>>,
    /// `None`: no records loaded.
    middleware_loaded: Lean<Option<Arc<Vec<MiddlewareStateRecord>>>>,
    middleware_writes: Lean<Vec<MiddlewareStateWrite>>,
    /// Typed middleware state, decoded from `middleware_loaded`. `None` until a turn loads a
    /// record or writes a state, so a turn that uses none pays for one word, not a map.
    typed: Lean<Option<Box<MiddlewareStates>>>,
}

/// A state's own changes by key, in key order. The map is made with the first change: most
/// turns change no state, and an empty `BTreeMap` still cost about 50 instructions to drop (a
/// turn's state and its dispatch's copy, every turn).
#[derive(Clone, Debug, Default)]
struct Changes(Lean<Option<BTreeMap<String, StateChange>>>);

impl Changes {
    fn get(&self, key: &str) -> Option<&StateChange> {
        self.0.as_ref()?.get(key)
    }

    fn insert(&mut self, key: String, change: StateChange) {
        self.0.get_or_insert_default().insert(key, change);
    }

    fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(BTreeMap::is_empty)
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &StateChange)> {
        self.0.iter().flatten()
    }

    fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().flat_map(BTreeMap::keys)
    }
}

impl State {
    /// What the session store loaded; empty when nothing was.
    fn loaded(&self) -> &Loaded {
        match &*self.loaded {
            Some(loaded) => loaded,
            None => Loaded::empty(),
        }
    }

    /// Empty state: what a turn sees without a session store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The state a turn starts with, from what a session store loaded.
    #[must_use]
    pub fn from_loaded(loaded: LoadedTurn) -> Self {
        let typed = (!loaded.middleware.is_empty())
            .then(|| Box::new(MiddlewareStates::from_records(&loaded.middleware)));
        Self {
            loaded: Lean::new(Some(Arc::new(Loaded {
                session: loaded.session,
                user: loaded.user,
                app: loaded.app,
            }))),
            middleware_loaded: Lean::new(Some(Arc::new(loaded.middleware))),
            typed: Lean::new(typed),
            ..Self::default()
        }
    }

    /// The JSON value of `key` (any scope, prefix included), or `None` when it is absent or was
    /// deleted. A stored `null` is `Some(&Value::Null)`.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<&Value> {
        match self.changes.get(key) {
            Some(StateChange::Set(value)) => Some(value),
            Some(StateChange::Merge(merge)) => Some(merge.preview()),
            Some(StateChange::Delete) => None,
            None => self.loaded().get(key),
        }
    }

    /// The value of a typed key, or `None` when absent. For a merge-policy key written by this
    /// turn: the turn's merges applied to the value it loaded (the store applies them to the
    /// value it holds at commit, which other turns may have changed).
    ///
    /// # Errors
    ///
    /// [`StateError::Deserialize`] when the stored JSON is not a `T`.
    pub fn get<T: StateValue, P>(&self, key: StateKey<T, P>) -> Result<Option<T>, StateError> {
        self.value(key.key())
            .map(|value| {
                T::deserialize(value).map_err(|source| StateError::Deserialize {
                    key: key.key().to_owned(),
                    expected: std::any::type_name::<T>(),
                    source,
                })
            })
            .transpose()
    }

    /// Whether `key` holds a value (`null` included).
    #[must_use]
    pub fn has(&self, key: impl AsRef<str>) -> bool {
        self.value(key.as_ref()).is_some()
    }

    /// Writes a typed key. For a `last_writer_wins` key the write is never refused as stale;
    /// for a merge-policy key (`add`, `union`, `max`, `merge`) it is an absolute write under the
    /// `refuse` rule (a reset), and [`merge`](Self::merge) is the write that merges.
    ///
    /// # Errors
    ///
    /// [`StateError::Serialize`] when `value` cannot be turned into JSON.
    pub fn set<T: StateValue + 'static, P: Policy>(
        &mut self,
        key: StateKey<T, P>,
        value: T,
    ) -> Result<(), StateError> {
        if P::KIND == PolicyKind::LastWriterWins
            && let Some(function) = key.merge_fn()
        {
            return self.record_merge(key.key(), P::NAME, function, value);
        }
        let json = serde_json::to_value(value).map_err(|source| StateError::Serialize {
            key: key.key().to_owned(),
            source,
        })?;
        self.record(key.key().to_owned(), StateChange::Set(json));
        Ok(())
    }

    /// Merges `operand` into a merge-policy key: recorded as the operation (for `union`, "add
    /// these members"), applied by the store to the value it holds at commit, so concurrent
    /// turns' merges all land and none is refused. The turn reads the merge applied to what it
    /// loaded at once.
    ///
    /// ```rust,standalone_crate
    /// use adk::state::State;
    /// use adk::state::contention::Union;
    ///
    /// const TAGS: adk::state::StateKey<Vec<String>, Union> =
    ///     adk::state_key!("user:tags" => Vec<String>, on_conflict = union);
    ///
    /// let mut state = State::new();
    /// state.merge(TAGS, vec!["new".to_owned()])?;
    /// state.merge(TAGS, vec!["new".to_owned(), "vip".to_owned()])?;
    /// assert_eq!(state.get(TAGS)?, Some(vec!["new".to_owned(), "vip".to_owned()]));
    /// # Ok::<(), adk::state::StateError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StateError::Merge`] when the value the turn sees for the key is not the key's type, or
    /// the merge refuses (an overflowing counter); nothing was recorded.
    pub fn merge<T: StateValue + 'static, P: MergePolicy>(
        &mut self,
        key: StateKey<T, P>,
        operand: T,
    ) -> Result<(), StateError> {
        match key.merge_fn() {
            Some(function) => self.record_merge(key.key(), P::NAME, function, operand),
            None => Err(StateError::Merge {
                key: key.key().to_owned(),
                reason: "the key was declared without its merge".to_owned(),
            }),
        }
    }

    /// Adds `amount` to a counter key (`on_conflict = add`): concurrent turns' additions all
    /// land. Only counter keys compile here.
    ///
    /// ```rust,standalone_crate
    /// use adk::state::State;
    /// use adk::state::contention::Add;
    ///
    /// const VISITS: adk::state::StateKey<u64, Add> =
    ///     adk::state_key!("app:visits" => u64, on_conflict = add);
    ///
    /// let mut state = State::new();
    /// state.add(VISITS, 1)?;
    /// state.add(VISITS, 2)?;
    /// assert_eq!(state.get(VISITS)?, Some(3));
    /// # Ok::<(), adk::state::StateError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`merge`](Self::merge).
    pub fn add<T: Counter + 'static>(
        &mut self,
        key: StateKey<T, Add>,
        amount: T,
    ) -> Result<(), StateError> {
        self.merge(key, amount)
    }

    fn record_merge<T: StateValue + 'static>(
        &mut self,
        key: &'static str,
        rule: &'static str,
        function: super::contention::MergeFn<T>,
        operand: T,
    ) -> Result<(), StateError> {
        let refused = |reason: String| StateError::Merge {
            key: key.to_owned(),
            reason,
        };
        let merge = MergeOp::typed(rule, function, operand, self.value(key)).map_err(refused)?;
        let change = match self.changes.get(key) {
            // After an absolute write the turn's own value is the base: still an absolute
            // write, under the refuse rule.
            Some(StateChange::Set(_) | StateChange::Delete) => {
                StateChange::Set(merge.preview().clone())
            }
            Some(StateChange::Merge(earlier)) => {
                StateChange::Merge(earlier.clone().then(merge).map_err(refused)?)
            }
            None => StateChange::Merge(merge),
        };
        self.record(key.to_owned(), change);
        Ok(())
    }

    /// Writes `value` under `key` (string form; the prefix picks the scope).
    ///
    /// # Errors
    ///
    /// [`StateError::EmptyName`] when the key or its name after the prefix is empty.
    pub fn set_value(&mut self, key: impl Into<String>, value: Value) -> Result<(), StateError> {
        let key = checked(key.into())?;
        self.record(key, StateChange::Set(value));
        Ok(())
    }

    /// Writes every entry, or none when one key is invalid.
    ///
    /// # Errors
    ///
    /// [`StateError::EmptyName`] for the first invalid key; nothing was written.
    pub fn update(
        &mut self,
        entries: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), StateError> {
        let entries = entries
            .into_iter()
            .map(|(key, value)| Ok((checked(key)?, value)))
            .collect::<Result<Vec<_>, StateError>>()?;
        for (key, value) in entries {
            self.record(key, StateChange::Set(value));
        }
        Ok(())
    }

    /// Deletes `key`; the deletion is recorded in the delta and reaches the store like a write.
    /// Returns whether the key held a value (deleting an absent key records nothing).
    pub fn delete(&mut self, key: impl AsRef<str>) -> bool {
        let key = key.as_ref();
        if !self.has(key) {
            return false;
        }
        self.record(key.to_owned(), StateChange::Delete);
        true
    }

    /// The merged view: every key with a value, prefixes included, `temp:` keys too.
    #[must_use]
    pub fn to_map(&self) -> Map<String, Value> {
        let mut merged = self.loaded().merged();
        for (key, change) in self.changes.iter() {
            match change {
                StateChange::Set(value) => {
                    merged.insert(key.clone(), value.clone());
                }
                StateChange::Merge(merge) => {
                    merged.insert(key.clone(), merge.preview().clone());
                }
                StateChange::Delete => {
                    merged.remove(key);
                }
            }
        }
        merged
    }

    /// The turn's delta so far: each key written or deleted, with its last change, in key order
    /// (`temp:` keys included; the runner leaves them out of the commit).
    pub fn delta(&self) -> impl Iterator<Item = (&str, &StateChange)> {
        self.changes
            .iter()
            .map(|(key, change)| (key.as_str(), change))
    }

    /// Whether the turn changed anything (state or middleware-state records).
    #[must_use]
    pub fn has_delta(&self) -> bool {
        !self.changes.is_empty()
            || !self.middleware_writes.is_empty()
            || self.typed.as_ref().is_some_and(|typed| typed.has_changes())
    }

    /// The middleware-state records the session store loaded for this turn: the session's and
    /// the turn's thread's. Opaque JSON for typed middleware state to interpret.
    #[must_use]
    pub fn middleware_records(&self) -> &[MiddlewareStateRecord] {
        self.middleware_loaded.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The turn's typed middleware state (see [`crate::middleware_state`]).
    #[must_use]
    pub fn middleware_states(&self) -> &MiddlewareStates {
        static NONE: MiddlewareStates = MiddlewareStates::EMPTY;
        self.typed.as_deref().unwrap_or(&NONE)
    }

    /// The turn's typed middleware state, to write.
    pub fn middleware_states_mut(&mut self) -> &mut MiddlewareStates {
        // A dispatch's copy journals its writes, also for states it creates first.
        let journaling = self.journal.is_some();
        self.typed.get_or_insert_with(|| {
            Box::new(if journaling {
                MiddlewareStates::EMPTY.with_journal()
            } else {
                MiddlewareStates::EMPTY
            })
        })
    }

    /// The typed middleware state, when the turn loaded or wrote any.
    pub(crate) fn middleware_states_in_use(&mut self) -> Option<&mut MiddlewareStates> {
        self.typed.as_deref_mut()
    }

    /// Queues a middleware-state record write (or deletion) for the turn's commit.
    pub fn write_middleware_record(&mut self, write: MiddlewareStateWrite) {
        self.middleware_writes.push(write);
    }

    /// The change this state recorded for `key`, if any.
    pub(crate) fn change_of(&self, key: &str) -> Option<&StateChange> {
        self.changes.get(key)
    }

    /// Records a change made elsewhere (a tool handler's write), as if made here: visible at
    /// once and journaled by a dispatch's copy. The key was checked where it was written.
    pub(crate) fn apply_change(&mut self, key: String, change: StateChange) {
        self.record(key, change);
    }

    fn record(&mut self, key: String, change: StateChange) {
        if let Some(journal) = &mut self.journal {
            journal.push((key.clone(), change.clone()));
        }
        self.changes.insert(key, change);
    }

    /// A plain copy of the key-value state (loaded values and changes), without a journal or
    /// typed middleware state: what a tool handler reads and writes.
    pub(crate) fn detached(&self) -> Self {
        Self {
            loaded: self.loaded.clone(),
            changes: self.changes.clone(),
            ..Self::default()
        }
    }

    /// A copy that also journals its changes, so a dispatch can hand them to the turn when it
    /// completes an iteration or is acknowledged.
    ///
    /// Built field by field: through `..self.clone()` the turn's journal and typed state were
    /// cloned only to be dropped, and an empty vector of middleware writes still cost a clone
    /// call (every dispatch).
    pub(crate) fn with_journal(&self) -> Self {
        Self {
            loaded: self.loaded.clone(),
            changes: self.changes.clone(),
            journal: Some(Lean::default()),
            middleware_loaded: self.middleware_loaded.clone(),
            middleware_writes: if self.middleware_writes.is_empty() {
                Lean::default()
            } else {
                self.middleware_writes.clone()
            },
            typed: Lean::new(
                self.typed
                    .as_ref()
                    .map(|typed| Box::new(typed.with_journal())),
            ),
        }
    }

    /// Applies the journaled changes of a dispatch's copy to `turn`, in the order they were made.
    pub(crate) fn flush_journal_into(&mut self, turn: &mut State) {
        // Mostly empty: an empty vector's drain is not free.
        if let Some(journal) = &mut self.journal
            && !journal.is_empty()
        {
            for (key, change) in journal.drain(..) {
                turn.changes.insert(key, change);
            }
        }
        if let Some(typed) = &mut *self.typed {
            typed.flush_journal_into(turn.middleware_states_mut());
        }
    }

    /// Drops the journaled changes: the turn never sees them.
    pub(crate) fn discard_journal(&mut self) {
        if let Some(journal) = &mut self.journal {
            journal.clear();
        }
        if let Some(typed) = &mut *self.typed {
            typed.discard_journal();
        }
    }

    /// What this turn changed that only a session store keeps: every key it wrote or deleted
    /// outside `temp:`, then every persistent middleware state it changed (as `key (type)`) and
    /// every middleware record it queued. Empty when the turn's changes end with it anyway.
    pub(crate) fn kept_beyond_turn(&self) -> Vec<String> {
        if !self.has_delta() {
            return Vec::new();
        }
        let mut kept: Vec<String> = self
            .changes
            .keys()
            .filter(|key| Scope::of(key).0.is_persistent())
            .map(|key| format!("`{key}`"))
            .collect();
        kept.extend(
            self.middleware_states()
                .persistent_changes()
                .into_iter()
                .map(|(key, type_name)| format!("middleware state `{type_name}` (key `{key}`)")),
        );
        kept.extend(self.middleware_writes.iter().map(|write| {
            let key = match write {
                MiddlewareStateWrite::Put(record) => record.key.as_str(),
                MiddlewareStateWrite::Delete { key, .. } => key.as_str(),
            };
            format!("middleware record `{key}`")
        }));
        kept
    }

    /// The commit for this turn: persistent changes split by scope, each with the value the turn
    /// loaded for it (the stale check), and the middleware-state writes.
    #[must_use]
    pub fn to_commit(&self, thread: &ThreadId) -> TurnCommit {
        let mut commit = TurnCommit {
            thread: thread.clone(),
            ..TurnCommit::default()
        };
        for (key, change) in self.changes.iter() {
            let (scope, name) = Scope::of(key);
            let write = StateWrite {
                name: name.to_owned(),
                change: change.clone(),
                expected: self.loaded().get(key.as_str()).cloned(),
            };
            match scope {
                Scope::Session => commit.session.push(write),
                Scope::User => commit.user.push(write),
                Scope::App => commit.app.push(write),
                Scope::Temp => {}
            }
        }
        commit.middleware = Vec::clone(&self.middleware_writes);
        commit
    }
}

fn checked(key: String) -> Result<String, StateError> {
    if Scope::of(&key).1.is_empty() {
        return Err(StateError::EmptyName { key });
    }
    Ok(key)
}

/// What a session store loaded for the turn, kept by scope as the store returned it (app and
/// user keys without their prefixes): a turn reads a few keys, so each read finds its scope's
/// map by the key's prefix instead of the turn first copying every key of the app's and the
/// user's documents (hundreds, for an app shared by many sessions) into one prefixed map.
#[derive(Debug, Default)]
struct Loaded {
    session: Map<String, Value>,
    user: Map<String, Value>,
    /// Shared with the store that loaded it (and every other turn of the app): a turn's writes
    /// go to its own changes, never to this map.
    app: Arc<Map<String, Value>>,
}

impl Loaded {
    /// What a turn without a session store reads: nothing, shared by every such state.
    fn empty() -> &'static Self {
        static EMPTY: std::sync::LazyLock<Loaded> = std::sync::LazyLock::new(Loaded::default);
        &EMPTY
    }

    /// The value of `key`, prefix included. The same answer as a lookup in
    /// [`merged`](Self::merged): an app or user key, then a session key of that exact name.
    fn get(&self, key: &str) -> Option<&Value> {
        let by_scope = match Scope::of(key) {
            (Scope::App, name) => self.app.get(name),
            (Scope::User, name) => self.user.get(name),
            (Scope::Session | Scope::Temp, _) => None,
        };
        by_scope.or_else(|| self.session.get(key))
    }

    /// Every loaded key in one map, app and user keys prefixed: the session's keys, then the
    /// user's, then the app's, a later one replacing an equal key.
    fn merged(&self) -> Map<String, Value> {
        merge_scopes(&self.app, &self.user, &self.session)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails loudly on a broken set-up")]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    /// Reads by scope answer what one merged map did: an app or user key first, then a session
    /// key of that exact name (a store never writes one, but a session row may hold it).
    #[test]
    fn a_loaded_turn_reads_each_key_as_the_merged_map_holds_it() {
        let state = State::from_loaded(LoadedTurn {
            app: map(json!({"theme": "app", "shared": 1})).into(),
            user: map(json!({"theme": "user", "lang": "fr"})),
            session: map(json!({"step": 2, "user:theme": "stray", "app:only": true, "temp:t": 0})),
            middleware: Vec::new(),
        });
        let merged = state.to_map();
        assert_eq!(
            merged,
            map(json!({
                "step": 2, "user:theme": "user", "app:only": true, "temp:t": 0,
                "user:lang": "fr", "app:theme": "app", "app:shared": 1,
            }))
        );
        for key in [
            "step",
            "user:theme",
            "user:lang",
            "app:theme",
            "app:shared",
            "app:only",
            "temp:t",
            "missing",
            "user:missing",
            "app:missing",
            "temp:missing",
        ] {
            assert_eq!(state.value(key), merged.get(key), "{key}");
        }
    }
}

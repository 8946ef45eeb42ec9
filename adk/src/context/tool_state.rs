//! Session state for tool handlers: a [`ToolInvocation`] reads the dispatch's state and writes
//! to it, like middleware do (Google ADK's `tool_context.state`).
//!
//! Each call's invocation carries a [`StateLink`]: a copy of the dispatch's state taken when the
//! call was prepared (with the writes of the calls before it), and the dispatch's inbox, where
//! every write the handler makes is queued. The dispatch context takes the inbox in as its own
//! writes when the executor returns, on `state_mut()`, and when the iteration's writes reach the
//! turn; a nack, an abort or an error drops them with the dispatch's other writes.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};

use crate::primitives::{InvocationState, ToolInvocation, TurnState};
use crate::state::contention::{MergePolicy, Policy};
use crate::state::{State, StateChange, StateError, StateKey, StateValue};

pub(crate) type Inbox = Arc<Mutex<Vec<(String, StateChange)>>>;

/// A handler's view of the session state and the inbox its writes go to.
#[derive(Clone, Debug, Default)]
pub(crate) struct StateLink {
    view: Arc<Mutex<State>>,
    inbox: Inbox,
}

impl InvocationState for TurnState {
    type Link = StateLink;

    fn standalone() -> StateLink {
        StateLink::default()
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every change below is made whole under the lock (a write is checked before it is
    // applied), so a poisoned lock still guards consistent data.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl StateLink {
    /// The link of a call prepared now: `view` is the dispatch's state, to which the writes
    /// already in `inbox` (earlier calls') are added.
    pub(crate) fn new(mut view: State, inbox: &Inbox) -> Self {
        for (key, change) in locked(inbox).iter() {
            view.apply_change(key.clone(), change.clone());
        }
        Self {
            view: Arc::new(Mutex::new(view)),
            inbox: Arc::clone(inbox),
        }
    }

    /// Runs `write` on the handler's view and queues the change it leaves on `key` (a typed
    /// write, whose policy decides the change: a value or a merge).
    fn write_with(
        &self,
        key: &str,
        write: impl FnOnce(&mut State) -> Result<(), StateError>,
    ) -> Result<(), StateError> {
        let mut view = locked(&self.view);
        write(&mut view)?;
        if let Some(change) = view.change_of(key) {
            locked(&self.inbox).push((key.to_owned(), change.clone()));
        }
        Ok(())
    }

    fn write(&self, changes: Vec<(String, StateChange)>) {
        let mut view = locked(&self.view);
        let mut inbox = locked(&self.inbox);
        for (key, change) in changes {
            view.apply_change(key.clone(), change.clone());
            inbox.push((key, change));
        }
    }
}

/// Takes the writes queued in `inbox` into `state`, in the order they were made.
pub(crate) fn absorb(inbox: &Inbox, state: &mut State) {
    let queued = std::mem::take(&mut *locked(inbox));
    for (key, change) in queued {
        state.apply_change(key, change);
    }
}

/// Drops the writes queued in `inbox`.
pub(crate) fn discard(inbox: &Inbox) {
    locked(inbox).clear();
}

impl ToolInvocation {
    /// The JSON value of a session-state key (any scope, prefix included), as the dispatch saw
    /// it when this call was prepared, with the writes of the calls before it and this
    /// handler's own; `None` when absent. See `docs/tools.md`, "Session state in a handler".
    ///
    /// ```
    /// use adk::prelude::*;
    /// use serde_json::json;
    ///
    /// let greet = Tool::builder("greet")
    ///     .description("Greets the user by name.")
    ///     .handler(|_args: serde_json::Value, invocation: adk::primitives::ToolInvocation| async move {
    ///         let name = invocation.state_value("user:name");
    ///         let name = name.as_ref().and_then(|n| n.as_str()).unwrap_or("there");
    ///         invocation.set_state_value("greeted", json!(true))?;
    ///         Ok(format!("Hello, {name}!"))
    ///     })
    ///     .build()?;
    /// # let _ = greet;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn state_value(&self, key: &str) -> Option<Value> {
        locked(&self.state.view).value(key).cloned()
    }

    /// The value of a typed session-state key; see [`state_value`](Self::state_value).
    ///
    /// # Errors
    ///
    /// [`StateError::Deserialize`] when the stored JSON is not a `T`.
    pub fn state<T: StateValue, P>(&self, key: StateKey<T, P>) -> Result<Option<T>, StateError> {
        locked(&self.state.view).get(key)
    }

    /// Whether a session-state key holds a value (`null` included).
    pub fn has_state(&self, key: &str) -> bool {
        locked(&self.state.view).has(key)
    }

    /// The merged session state the handler sees: every key with a value, prefixes included.
    pub fn state_map(&self) -> Map<String, Value> {
        locked(&self.state.view).to_map()
    }

    /// Writes a typed session-state key: visible at once to this handler, then to the
    /// dispatch, and committed with the turn like a middleware's write (the same scopes,
    /// `temp:` never stored, the key's contention policy).
    ///
    /// # Errors
    ///
    /// [`StateError::Serialize`] when `value` cannot be turned into JSON; nothing was written.
    pub fn set_state<T: StateValue + 'static, P: Policy>(
        &self,
        key: StateKey<T, P>,
        value: T,
    ) -> Result<(), StateError> {
        self.state
            .write_with(key.key(), |state| state.set(key, value))
    }

    /// Merges `operand` into a merge-policy key (`add`, `union`, `max`, `merge`), as
    /// [`State::merge`] does for middleware: committed as the operation, so concurrent turns'
    /// merges all land.
    ///
    /// # Errors
    ///
    /// [`StateError::Merge`]; nothing was written.
    pub fn merge_state<T: StateValue + 'static, P: MergePolicy>(
        &self,
        key: StateKey<T, P>,
        operand: T,
    ) -> Result<(), StateError> {
        self.state
            .write_with(key.key(), |state| state.merge(key, operand))
    }

    /// Writes `value` under `key` (string form; the prefix picks the scope); see
    /// [`set_state`](Self::set_state).
    ///
    /// # Errors
    ///
    /// [`StateError::EmptyName`] when the key or its name after the prefix is empty.
    pub fn set_state_value(&self, key: impl Into<String>, value: Value) -> Result<(), StateError> {
        self.write_checked([(key.into(), value)])
    }

    /// Writes every entry, or none when one key is invalid.
    ///
    /// # Errors
    ///
    /// [`StateError::EmptyName`] for the first invalid key; nothing was written.
    pub fn update_state(
        &self,
        entries: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), StateError> {
        self.write_checked(entries)
    }

    /// Deletes a session-state key, recorded like a write; returns whether it held a value.
    pub fn delete_state(&self, key: &str) -> bool {
        if !self.has_state(key) {
            return false;
        }
        self.state
            .write(vec![(key.to_owned(), StateChange::Delete)]);
        true
    }

    fn write_checked(
        &self,
        entries: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), StateError> {
        let entries: Vec<(String, Value)> = entries.into_iter().collect();
        // The same check a middleware's write passes, before anything is written.
        State::new().update(entries.iter().cloned())?;
        self.state.write(
            entries
                .into_iter()
                .map(|(key, value)| (key, StateChange::Set(value)))
                .collect(),
        );
        Ok(())
    }
}

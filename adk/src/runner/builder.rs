//! The typestate builder: `build()` exists only once storage and an executor are given.

use std::sync::Arc;

use crate::context::TurnEnv;
use crate::dispatch::{DEFAULT_MAX_ITERATIONS, Executor};
use crate::events::{Event, EventSink, Listener};
use crate::pipeline::{
    DispatchInput, DispatchOutput, Middleware, Stack, ToolExecution, TurnInput, TurnOutput,
};
use crate::primitives::Tool;
use crate::state::{SessionStore, SharedSessionStore, StateKey};
use crate::storage::{SharedStorage, StorageAdapter};

use super::{RunnerParts, TurnRunner};

/// The builder has no storage adapter yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStorage;

/// The builder has no executor yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExecutor;

/// The builder's storage slot is filled.
#[diagnostic::on_unimplemented(
    message = "the turn runner has no storage adapter",
    label = "`build()` needs a storage adapter first",
    note = "call `.storage(adapter)` before `.build()`; `adk::storage::NoopStorage` persists nothing, for tests and prototypes"
)]
pub trait HasStorage: sealed::Sealed {
    #[doc(hidden)]
    fn into_storage(self) -> SharedStorage;
}

/// The builder's executor slot is filled.
#[diagnostic::on_unimplemented(
    message = "the turn runner has no executor",
    label = "`build()` needs an executor first",
    note = "call `.executor(executor)` before `.build()`; the executor is the model call, see `adk::dispatch::Executor`"
)]
pub trait HasExecutor: sealed::Sealed {
    #[doc(hidden)]
    fn into_executor(self) -> Arc<dyn Executor>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::storage::SharedStorage {}
    impl Sealed for std::sync::Arc<dyn crate::dispatch::Executor> {}
}

#[diagnostic::do_not_recommend]
impl HasStorage for SharedStorage {
    fn into_storage(self) -> SharedStorage {
        self
    }
}

#[diagnostic::do_not_recommend]
impl HasExecutor for Arc<dyn Executor> {
    fn into_executor(self) -> Arc<dyn Executor> {
        self
    }
}

/// Builds a [`TurnRunner`]. Start with [`TurnRunner::builder`].
///
/// Middleware run in the order they are registered on each pipeline. `build()` compiles only
/// once a storage adapter and an executor were given.
#[must_use = "a builder does nothing until `.build()`"]
pub struct TurnRunnerBuilder<S = NoStorage, X = NoExecutor> {
    storage: S,
    executor: X,
    tools: Vec<Tool>,
    turn_input: Stack<TurnInput>,
    turn_output: Stack<TurnOutput>,
    dispatch_input: Stack<DispatchInput>,
    dispatch_output: Stack<DispatchOutput>,
    tool_execution: Stack<ToolExecution>,
    listeners: Vec<Listener>,
    max_iterations: u32,
    session_store: Option<SharedSessionStore>,
    output_key: Option<StateKey<String>>,
}

impl std::fmt::Debug for TurnRunnerBuilder {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TurnRunnerBuilder")
            .finish_non_exhaustive()
    }
}

impl TurnRunnerBuilder {
    pub(crate) fn new() -> Self {
        Self {
            storage: NoStorage,
            executor: NoExecutor,
            tools: Vec::new(),
            turn_input: Stack::new(),
            turn_output: Stack::new(),
            dispatch_input: Stack::new(),
            dispatch_output: Stack::new(),
            tool_execution: Stack::new(),
            listeners: Vec::new(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            session_store: None,
            output_key: None,
        }
    }
}

impl<S, X> TurnRunnerBuilder<S, X> {
    /// The storage adapter every turn's context delegates to.
    pub fn storage(self, adapter: impl StorageAdapter) -> TurnRunnerBuilder<SharedStorage, X> {
        self.shared_storage(SharedStorage::new(adapter))
    }

    /// A storage adapter that is already shared (to keep a handle on it, for example).
    pub fn shared_storage(self, storage: SharedStorage) -> TurnRunnerBuilder<SharedStorage, X> {
        TurnRunnerBuilder {
            storage,
            executor: self.executor,
            tools: self.tools,
            turn_input: self.turn_input,
            turn_output: self.turn_output,
            dispatch_input: self.dispatch_input,
            dispatch_output: self.dispatch_output,
            tool_execution: self.tool_execution,
            listeners: self.listeners,
            max_iterations: self.max_iterations,
            session_store: self.session_store,
            output_key: self.output_key,
        }
    }

    /// The executor: the model call each dispatch iteration makes.
    pub fn executor(self, executor: impl Executor) -> TurnRunnerBuilder<S, Arc<dyn Executor>> {
        TurnRunnerBuilder {
            storage: self.storage,
            executor: Arc::new(executor),
            tools: self.tools,
            turn_input: self.turn_input,
            turn_output: self.turn_output,
            dispatch_input: self.dispatch_input,
            dispatch_output: self.dispatch_output,
            tool_execution: self.tool_execution,
            listeners: self.listeners,
            max_iterations: self.max_iterations,
            session_store: self.session_store,
            output_key: self.output_key,
        }
    }

    /// Appends middleware to `turn_input`, run once before the dispatch.
    pub fn turn_input(mut self, middleware: impl Middleware<TurnInput>) -> Self {
        self.turn_input.push(middleware);
        self
    }

    /// Appends middleware to `turn_output`, run once after an acknowledged dispatch.
    pub fn turn_output(mut self, middleware: impl Middleware<TurnOutput>) -> Self {
        self.turn_output.push(middleware);
        self
    }

    /// Appends middleware to `dispatch_input`, run every iteration before the executor.
    pub fn dispatch_input(mut self, middleware: impl Middleware<DispatchInput>) -> Self {
        self.dispatch_input.push(middleware);
        self
    }

    /// Appends middleware to `dispatch_output`, run every iteration after the executor.
    pub fn dispatch_output(mut self, middleware: impl Middleware<DispatchOutput>) -> Self {
        self.dispatch_output.push(middleware);
        self
    }

    /// Appends middleware to `tool_execution`, run around every tool call a dispatch executes
    /// (`ctx.execute_tool`, `ctx.call_tool`), the tool's handler at its end. See
    /// [`ToolContext`](crate::ToolContext) and the tools guide.
    pub fn tool_execution(mut self, middleware: impl Middleware<ToolExecution>) -> Self {
        self.tool_execution.push(middleware);
        self
    }

    /// Adds a tool every turn starts with. Duplicate names are refused when a turn runs, with
    /// `E_TOOL_ALREADY_REGISTERED`.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds several tools; see [`TurnRunnerBuilder::tool`].
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Listens to every event of every turn, synchronously and in order. Keep listeners quick:
    /// they run on the turn's task.
    pub fn observe(mut self, listener: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.listeners.push(Arc::new(listener));
        self
    }

    /// Bounds the dispatch loop (default [`DEFAULT_MAX_ITERATIONS`]). A dispatch still running
    /// after this many completed iterations ends as nack with
    /// `E_DISPATCH_ITERATION_LIMIT_EXCEEDED`.
    pub fn max_iterations(mut self, iterations: u32) -> Self {
        self.max_iterations = iterations;
        self
    }

    /// Keeps session state between turns in `store`: each turn loads its state once when it
    /// starts and commits its delta once, atomically, when it completes (see `docs/state.md`).
    /// Without a store, only state that lives one turn may be written (`temp:` keys, transient
    /// middleware state): [`build`](Self::build) refuses an output key outside `temp:` and
    /// registered middleware known to write any other key or persistent middleware state
    /// ([`BuildError::StateWithoutStore`]), and a turn that writes such state the build could
    /// not see fails with `E_STATE_NO_SESSION_STORE` (`docs/state.md`, "Without a session
    /// store").
    pub fn session_store(mut self, store: impl SessionStore) -> Self {
        self.session_store = Some(SharedSessionStore::new(store));
        self
    }

    /// Saves the final assistant text of every completed turn under `key` (Google ADK's
    /// `output_key`): the text of the last assistant message the dispatch added, picked when
    /// the dispatch ends (an assistant message `turn_output` stores is not the model's reply)
    /// and written after `turn_output`, before the commit. Any scope works; `temp:` keeps it for
    /// the turn only. A key of any other scope needs a [`session_store`](Self::session_store):
    /// without one, [`build`](Self::build) refuses the runner ([`BuildError::NoSessionStore`])
    /// rather than let the reply vanish after every turn.
    ///
    /// ```rust,standalone_crate
    /// # use adk::TurnRunner;
    /// # use adk::storage::NoopStorage;
    /// # use adk::dispatch::ScriptedModel;
    /// let runner = TurnRunner::builder()
    ///     .storage(NoopStorage::new())
    ///     .executor(ScriptedModel::new())
    ///     .session_store(adk::state::InMemorySessionStore::new())
    ///     .output_key(adk::state_key!("last_reply" => String))
    ///     .build();
    /// # let _ = runner;
    /// ```
    pub fn output_key(mut self, key: StateKey<String>) -> Self {
        self.output_key = Some(key);
        self
    }

    /// Builds the runner. Compiles only once `.storage(..)` and `.executor(..)` were called.
    ///
    /// # Panics
    ///
    /// With the report [`try_build`](Self::try_build) returns as an error:
    ///
    /// - in every build profile, when two keys declared anywhere in the program disagree: two
    ///   stash keys (one path with two types, one path declared twice, or a path under another;
    ///   see [`crate::stash::check_declared_keys`]), or two middleware state types with one key
    ///   (see [`crate::middleware_state::check_declared_keys`]). Such keys lose data silently
    ///   at run time, so the check runs before any turn can;
    /// - when the runner is told to keep state between turns but has nowhere to keep it: an
    ///   [`output_key`](Self::output_key) outside `temp:` without a
    ///   [`session_store`](Self::session_store) ([`BuildError::NoSessionStore`]), or
    ///   middleware known to write a key outside `temp:` or persistent middleware state
    ///   ([`BuildError::StateWithoutStore`]): the writes `#[middleware]` found in a registered
    ///   fn's body, and the crate's own `TokenBudget` and `Compaction`.
    pub fn build(self) -> TurnRunner
    where
        S: HasStorage,
        X: HasExecutor,
    {
        match self.try_build() {
            Ok(runner) => runner,
            Err(error) => panic!("{error}"),
        }
    }

    /// Builds the runner once every key declared in the program agrees and the runner has a
    /// session store for the state it is told to keep; the checks [`build`](Self::build) panics
    /// on, as an error. The declaration check runs in release builds too, once per process (the
    /// declarations are fixed when the program is linked).
    ///
    /// ```
    /// # use adk::TurnRunner;
    /// # use adk::storage::NoopStorage;
    /// # use adk::dispatch::ScriptedModel;
    /// let runner = TurnRunner::builder()
    ///     .storage(NoopStorage::new())
    ///     .executor(ScriptedModel::new())
    ///     .try_build()
    ///     .expect("the program's keys agree");
    /// # let _ = runner;
    /// ```
    ///
    /// # Errors
    ///
    /// [`BuildError::Conflicts`] naming both declarations of every disagreement, with their
    /// `file:line`: among the stash keys first, then among the middleware state keys.
    /// [`BuildError::NoSessionStore`] for an output key outside `temp:` without a session
    /// store; [`BuildError::StateWithoutStore`] listing every write of the runner's middleware
    /// that only a session store keeps, without one.
    pub fn try_build(self) -> Result<TurnRunner, BuildError>
    where
        S: HasStorage,
        X: HasExecutor,
    {
        declared_keys_agree()?;
        if self.session_store.is_none()
            && let Some(key) = self.output_key
            && key.scope().is_persistent()
        {
            return Err(BuildError::NoSessionStore {
                what: format!("`.output_key({:?})`", key.key()),
            });
        }
        if self.session_store.is_none() {
            let mut writes = Vec::new();
            super::wiring::unkept_writes(&self.turn_input, &mut writes);
            super::wiring::unkept_writes(&self.dispatch_input, &mut writes);
            super::wiring::unkept_writes(&self.dispatch_output, &mut writes);
            super::wiring::unkept_writes(&self.tool_execution, &mut writes);
            super::wiring::unkept_writes(&self.turn_output, &mut writes);
            if !writes.is_empty() {
                return Err(BuildError::StateWithoutStore { writes });
            }
        }
        let turn_env = Arc::new(TurnEnv {
            storage: self.storage.into_storage(),
            events: EventSink::new(self.listeners.into()),
            tool_pipeline: crate::dispatch::tool_pipeline(self.tool_execution),
        });
        Ok(TurnRunner::from_parts(RunnerParts {
            executor: self.executor.into_executor(),
            tools: self.tools,
            turn_input: self.turn_input,
            turn_output: self.turn_output,
            dispatch_input: self.dispatch_input,
            dispatch_output: self.dispatch_output,
            turn_env,
            max_iterations: self.max_iterations,
            session_store: self.session_store,
            output_key: self.output_key,
            reported_unknown: std::sync::Mutex::default(),
        }))
    }
}

/// Why [`TurnRunnerBuilder::try_build`] (and the agent's) refused to build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Keys declared in the program disagree; the report names both declarations of every
    /// conflict.
    #[error(transparent)]
    Conflicts(#[from] crate::declarations::Conflicts),
    /// The runner is told to keep state between turns (`what`, as written on the builder) but
    /// was built without a session store, so the state would reset every turn.
    #[error(
        "{what} keeps state between turns, but the runner has no session store, so it would be \
         lost after every turn: add `.session_store(..)` to the builder (an \
         `adk::state::InMemorySessionStore`, a SQLite or PostgreSQL store), or use a `temp:` key \
         for what lives one turn"
    )]
    NoSessionStore {
        /// The builder call that needs the store, as written: `` `.output_key("last_reply")` ``.
        what: String,
    },
    /// The runner's middleware write state only a session store keeps (keys outside `temp:`,
    /// persistent middleware state), but the runner was built without one, so the writes would
    /// be lost after every turn. Lists each write `#[middleware]` found in a registered fn's
    /// body; see `docs/state.md`, "Without a session store", for which writes are found here
    /// and which the first turn refuses instead.
    #[error(
        "the runner has no session store, but its middleware write state only a store keeps, \
         which would be lost after every turn:{}\nadd `.session_store(..)` to the builder (an \
         `adk::state::InMemorySessionStore`, a SQLite or PostgreSQL store), or keep what lives \
         one turn in `temp:` keys and transient middleware state",
        super::wiring::report(writes)
    )]
    StateWithoutStore {
        /// Every such write, in pipeline order (`turn_input`, `dispatch_input`,
        /// `dispatch_output`, `tool_execution`, `turn_output`), then registration order.
        writes: Vec<super::UnkeptWrite>,
    },
}

/// Every key the program declares, checked once per process: the declarations are collected
/// when the program is linked, so the answer cannot change while it runs.
fn declared_keys_agree() -> Result<(), crate::declarations::Conflicts> {
    static CHECKED: std::sync::OnceLock<Result<(), crate::declarations::Conflicts>> =
        std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| {
            crate::stash::check_declared_keys()?;
            crate::middleware_state::check_declared_keys()
        })
        .clone()
}

//! [`Agent`]: a small facade over [`TurnRunner`] for the common case — a name, instructions,
//! a model, tools, history, a session store — run with `agent.run(session, "user text")`.
//!
//! Nothing here is new machinery. The builder fills a [`TurnRunnerBuilder`] and keeps the
//! instructions; [`Agent::run`] builds the [`RawTurnContext`] a hand-written turn would:
//!
//! | agent | is, on the runner |
//! |---|---|
//! | `Agent::builder(name)` | the app the turns run as ([`RawTurnContext::app_name`]): `app:` state and app-partitioned records belong to it |
//! | `.instructions(text)` | every turn's system prompt, `{key}` placeholders filled from state before each model call ([`crate::state::template`]) |
//! | `.model(executor)` | [`TurnRunnerBuilder::executor`] |
//! | `.storage(adapter)` | [`TurnRunnerBuilder::storage`] |
//! | `.history(LoadHistory::..)` | [`LoadHistory`] appended to `turn_input`, where `.history` is called |
//! | `.tool(..)`, `.tools(..)` | [`TurnRunnerBuilder::tool`], [`TurnRunnerBuilder::tools`] |
//! | `.session_store(store)` | [`TurnRunnerBuilder::session_store`] |
//! | `.turn_input(m)` … `.dispatch_output(m)` | the runner's pipelines, with the same compile-time check: middleware that does not fit the pipeline is a compile error |
//! | `.observe(f)`, `.max_iterations(n)`, `.output_key(k)` | the runner's own |
//!
//! Middleware run in the order they are registered on each pipeline, `.history` included, so
//! call `.history` before `turn_input` middleware that reads the loaded messages. For anything
//! the facade does not say — a user id, a stash seed, a cancellation token — build the turn with
//! [`Agent::turn`], change it, and run it with [`Agent::run_turn`]; or take the runner itself
//! with [`Agent::runner`].
//!
//! [`Agent::chat`] is a terminal chat over the same turns: each line read from stdin is
//! [`Agent::run`] on one conversation, its reply printed, until stdin ends;
//! [`Agent::chat_over`] does it over any reader and writer.
//!
//! ```
//! use adk::prelude::*;
//! use adk::history::LoadHistory;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let agent = Agent::builder("helper")
//!     .instructions("You are brief.")
//!     .model(ScriptedModel::new())
//!     .storage(adk::sqlite::SqliteStorage::in_memory().await?)
//!     .history(LoadHistory::last_turns(10))
//!     .build();
//! agent.run("conversation-1", "Hello!").await?.into_result()?;
//! let second = agent.run("conversation-1", "What do you remember?").await?.into_result()?;
//! let reply = second.reply().and_then(Message::content).map(|text| text.render());
//! assert_eq!(reply.as_deref(), Some(r#"Earlier you said: "Hello!"."#));
//! # Ok::<(), BoxError>(())
//! # })?;
//! # Ok::<(), BoxError>(())
//! ```

mod chat;

use std::sync::Arc;

use crate::context::{InvalidTurnContext, RawTurnContext, UserMessage};
use crate::dispatch::Executor;
use crate::events::Event;
use crate::history::LoadHistory;
use crate::ids::{AppName, SessionId};
use crate::pipeline::{DispatchInput, DispatchOutput, Middleware, TurnInput, TurnOutput};
use crate::primitives::{Tokenizable, Tool};
use crate::runner::{
    HasExecutor, HasStorage, NoExecutor, NoStorage, TurnOutcome, TurnRunner, TurnRunnerBuilder,
};
use crate::state::{SessionStore, StateKey};
use crate::storage::{SharedStorage, StorageAdapter};

/// An agent: a [`TurnRunner`] with its name and instructions. Cheap to clone, `Send + Sync`;
/// see the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Agent {
    name: AppName,
    instructions: Arc<Tokenizable>,
    runner: TurnRunner,
}

impl Agent {
    /// Starts building an agent named `name`; the name is the app its turns run as.
    pub fn builder(name: impl Into<AppName>) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            instructions: None,
            runner: TurnRunner::builder(),
        }
    }

    /// The agent's name (the app its turns run as).
    #[must_use]
    pub fn name(&self) -> &AppName {
        &self.name
    }

    /// The instructions, before templating.
    #[must_use]
    pub fn instructions(&self) -> &Tokenizable {
        &self.instructions
    }

    /// The runner every turn goes through.
    #[must_use]
    pub fn runner(&self) -> &TurnRunner {
        &self.runner
    }

    /// The turn [`run`](Self::run) would run: conversation `session`, the agent's instructions
    /// as system prompt, its name as app, `message` as the user's message. Change it (a user
    /// id, a stash seed, a cancellation token) and run it with [`run_turn`](Self::run_turn).
    ///
    /// ```
    /// use adk::prelude::*;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let agent = Agent::builder("shop")
    ///     .instructions("Greet {user:name?} briefly.")
    ///     .model(ScriptedModel::new())
    ///     .storage(NoopStorage::new())
    ///     .build();
    /// let turn = agent.turn("conversation-1", "Hi").user_id("ada");
    /// let outcome = agent.run_turn(turn).await?.into_result()?;
    /// assert_eq!(outcome.context.storage_context().user_id().as_str(), "ada");
    /// assert_eq!(outcome.context.storage_context().app_name().as_str(), "shop");
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    #[must_use]
    pub fn turn(
        &self,
        session: impl Into<SessionId>,
        message: impl Into<UserMessage>,
    ) -> RawTurnContext {
        RawTurnContext::new(session, (*self.instructions).clone())
            .app_name(self.name.clone())
            .user_message(message)
    }

    /// Runs one turn of conversation `session` with the user's `message`; see
    /// [`TurnRunner::run`] for what the result says.
    ///
    /// # Errors
    ///
    /// [`InvalidTurnContext`] when the turn is refused before it starts (empty text, duplicate
    /// tool names).
    pub async fn run(
        &self,
        session: impl Into<SessionId>,
        message: impl Into<UserMessage>,
    ) -> Result<TurnOutcome, InvalidTurnContext> {
        self.runner.run(self.turn(session, message)).await
    }

    /// Runs a turn built with [`turn`](Self::turn) (or any [`RawTurnContext`]) on the agent's
    /// runner.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub async fn run_turn(&self, turn: RawTurnContext) -> Result<TurnOutcome, InvalidTurnContext> {
        self.runner.run(turn).await
    }
}

/// Builds an [`Agent`]; start with [`Agent::builder`]. Like the runner's builder, `build()`
/// compiles only once a model and storage were given.
#[must_use = "a builder does nothing until `.build()`"]
pub struct AgentBuilder<S = NoStorage, X = NoExecutor> {
    name: AppName,
    instructions: Option<Tokenizable>,
    runner: TurnRunnerBuilder<S, X>,
}

impl<S, X> std::fmt::Debug for AgentBuilder<S, X> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AgentBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<S, X> AgentBuilder<S, X> {
    fn map<S2, X2>(
        self,
        change: impl FnOnce(TurnRunnerBuilder<S, X>) -> TurnRunnerBuilder<S2, X2>,
    ) -> AgentBuilder<S2, X2> {
        AgentBuilder {
            name: self.name,
            instructions: self.instructions,
            runner: change(self.runner),
        }
    }

    /// The system prompt of every turn. `{key}` placeholders are filled from the turn's state
    /// before each model call (`{user:name}`, `{name?}` for optional; see
    /// [`crate::state::template`]); a required key that is missing fails the turn with
    /// `E_STATE_TEMPLATE_KEY_MISSING`. Without instructions, the system prompt is
    /// `"You are a helpful assistant."`.
    pub fn instructions(mut self, instructions: impl Into<Tokenizable>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The model: any [`Executor`] ([`crate::dispatch::ScriptedModel`], an OpenAI-compatible or
    /// Anthropic executor, your own).
    pub fn model(self, model: impl Executor) -> AgentBuilder<S, Arc<dyn Executor>> {
        self.map(|runner| runner.executor(model))
    }

    /// The storage adapter that keeps the conversation's records.
    pub fn storage(self, adapter: impl StorageAdapter) -> AgentBuilder<SharedStorage, X> {
        self.shared_storage(SharedStorage::new(adapter))
    }

    /// A storage adapter that is already shared (to keep a handle on it).
    pub fn shared_storage(self, storage: SharedStorage) -> AgentBuilder<SharedStorage, X> {
        self.map(|runner| runner.shared_storage(storage))
    }

    /// Loads the conversation's history into each turn: `loader` appended to `turn_input`.
    pub fn history(self, loader: LoadHistory) -> Self {
        self.turn_input(loader)
    }

    /// Adds a tool; see [`TurnRunnerBuilder::tool`].
    pub fn tool(self, tool: Tool) -> Self {
        self.map(|runner| runner.tool(tool))
    }

    /// Adds several tools; see [`TurnRunnerBuilder::tools`].
    pub fn tools(self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.map(|runner| runner.tools(tools))
    }

    /// Keeps session state between turns; see [`TurnRunnerBuilder::session_store`].
    pub fn session_store(self, store: impl SessionStore) -> Self {
        self.map(|runner| runner.session_store(store))
    }

    /// Appends middleware to `turn_input`; see [`TurnRunnerBuilder::turn_input`].
    pub fn turn_input(self, middleware: impl Middleware<TurnInput>) -> Self {
        self.map(|runner| runner.turn_input(middleware))
    }

    /// Appends middleware to `turn_output`; see [`TurnRunnerBuilder::turn_output`].
    pub fn turn_output(self, middleware: impl Middleware<TurnOutput>) -> Self {
        self.map(|runner| runner.turn_output(middleware))
    }

    /// Appends middleware to `dispatch_input`; see [`TurnRunnerBuilder::dispatch_input`].
    pub fn dispatch_input(self, middleware: impl Middleware<DispatchInput>) -> Self {
        self.map(|runner| runner.dispatch_input(middleware))
    }

    /// Appends middleware to `dispatch_output`; see [`TurnRunnerBuilder::dispatch_output`].
    pub fn dispatch_output(self, middleware: impl Middleware<DispatchOutput>) -> Self {
        self.map(|runner| runner.dispatch_output(middleware))
    }

    /// Listens to every event; see [`TurnRunnerBuilder::observe`].
    pub fn observe(self, listener: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.map(|runner| runner.observe(listener))
    }

    /// Bounds the dispatch loop; see [`TurnRunnerBuilder::max_iterations`].
    pub fn max_iterations(self, iterations: u32) -> Self {
        self.map(|runner| runner.max_iterations(iterations))
    }

    /// Saves each completed turn's reply under `key`; see [`TurnRunnerBuilder::output_key`].
    pub fn output_key(self, key: StateKey<String>) -> Self {
        self.map(|runner| runner.output_key(key))
    }

    /// Builds the agent. Compiles only once `.model(..)` and `.storage(..)` were called (a
    /// missing model is the error "the agent has no model", naming `.model(..)`).
    ///
    /// # Panics
    ///
    /// As [`TurnRunnerBuilder::build`]: in every build profile, when declared stash keys or
    /// middleware state keys disagree, and for an output key outside `temp:` or middleware
    /// known to write state only a store keeps without a session store;
    /// [`try_build`](Self::try_build) returns the error instead.
    pub fn build(self) -> Agent
    where
        S: HasStorage,
        X: HasModel,
    {
        match self.try_build() {
            Ok(agent) => agent,
            Err(error) => panic!("{error}"),
        }
    }

    /// Builds the agent once every key declared in the program agrees; see
    /// [`TurnRunnerBuilder::try_build`].
    ///
    /// # Errors
    ///
    /// [`BuildError`](crate::runner::BuildError): conflicts naming both declarations of every
    /// disagreement, or the state the agent keeps without a session store.
    pub fn try_build(self) -> Result<Agent, crate::runner::BuildError>
    where
        S: HasStorage,
        X: HasExecutor,
    {
        Ok(Agent {
            name: self.name,
            instructions: Arc::new(
                self.instructions
                    .unwrap_or_else(|| Tokenizable::from(DEFAULT_INSTRUCTIONS)),
            ),
            runner: self.runner.try_build()?,
        })
    }
}

/// The agent builder's model slot is filled: what [`AgentBuilder::build`] asks for, so that a
/// missing model is reported in the agent's words (`.model(..)`), not the runner's
/// (`.executor(..)`).
#[diagnostic::on_unimplemented(
    message = "the agent has no model",
    label = "`build()` needs a model first",
    note = "call `.model(executor)` before `.build()`: any `adk::dispatch::Executor`, such as `adk::dispatch::ScriptedModel` in tests"
)]
pub trait HasModel: HasExecutor {}

#[diagnostic::do_not_recommend]
impl HasModel for Arc<dyn Executor> {}

/// The system prompt of an agent given no instructions (a turn refuses an empty one).
const DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";

//! Shared helpers for adk's integration tests. The tests themselves live in `tests/tests/`,
//! one file per capability, each test named after the rule it checks.
//!
//! - [`EventRecorder`] keeps every event a runner emits and renders them as `(name, code)` pairs
//!   so a test can assert an exact sequence;
//! - [`Log`] is a shared, ordered list of markers, and [`Marker`] a middleware that fits every
//!   pipeline and writes `name-pre` / `name-post` into it;
//! - [`ScriptedExecutor`] plays one [`Step`] per dispatch iteration and acknowledges once its
//!   script runs out, so a dispatch always ends;
//! - [`RecordingStorage`] is a storage adapter that keeps messages and records every call;
//! - [`captured_log`] returns what a piece of work logged through `tracing`, as text;
//! - [`one_flush::answering`] is the executor both one-flush suites run.

pub mod litellm_proxy;
pub mod one_flush;
pub mod postgres_database;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use adk::bytes::{ConduitBytes, MediaReader, SpoolReader};
use adk::context::{Aborted, DispatchContext};
use adk::dispatch::Executor;
use adk::events::{Event, TurnError};
use adk::pipeline::{BoxError, BoxFuture, Downstream, Middleware, Next, Pipeline};
use adk::primitives::{Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall};
use adk::storage::{NoopStorage, Primitive, StorageAdapter, StorageContext, StorageError};

/// Locks a test mutex; a test that panicked while holding it has already failed, so its data is
/// still good enough to report from.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------

/// Collects every event a runner emits, in order.
///
/// ```
/// use adk_integration_tests::EventRecorder;
///
/// let recorder = EventRecorder::new();
/// // TurnRunner::builder().observe(recorder.listener())...
/// assert!(recorder.trace().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct EventRecorder {
    events: Arc<Mutex<Vec<Event>>>,
}

impl EventRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The listener to hand to `TurnRunnerBuilder::observe`.
    pub fn listener(&self) -> impl Fn(&Event) + Send + Sync + 'static {
        let events = Arc::clone(&self.events);
        move |event| lock(&events).push(event.clone())
    }

    /// Every event so far.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    /// The events as `(name, code)` pairs: the code is the error code (`E_*`) of an `error`
    /// event, the status (`ack`, `nack`, `aborted`) of a `dispatchEnd`, and empty otherwise.
    pub fn trace(&self) -> Vec<(&'static str, &'static str)> {
        lock(&self.events)
            .iter()
            .map(|event| {
                let code = match event {
                    Event::Error { error, .. } => error.code().as_str(),
                    Event::DispatchEnd { status, .. } => status.as_str(),
                    _ => "",
                };
                (event.name(), code)
            })
            .collect()
    }

    /// The event names only.
    pub fn names(&self) -> Vec<&'static str> {
        lock(&self.events).iter().map(Event::name).collect()
    }

    /// The errors carried by `error` events, in order.
    pub fn errors(&self) -> Vec<TurnError> {
        lock(&self.events)
            .iter()
            .filter_map(|event| match event {
                Event::Error { error, .. } => Some(error.clone()),
                _ => None,
            })
            .collect()
    }

    /// The error carried by the `dispatchEnd` event, if there was one and it carried an error.
    pub fn dispatch_end_error(&self) -> Option<TurnError> {
        lock(&self.events).iter().find_map(|event| match event {
            Event::DispatchEnd { error, .. } => error.clone(),
            _ => None,
        })
    }

    /// Forgets every event recorded so far.
    pub fn clear(&self) {
        lock(&self.events).clear();
    }
}

// ---------------------------------------------------------------------------------------------

/// A shared, ordered list of markers that middleware, executors and tests write to, plus what
/// each [`Marker`] saw come back from `next`.
///
/// ```
/// use adk_integration_tests::Log;
///
/// let log = Log::new();
/// log.push("a-pre");
/// assert_eq!(log.entries(), ["a-pre"]);
/// ```
#[derive(Clone, Default)]
pub struct Log {
    entries: Arc<Mutex<Vec<String>>>,
    outcomes: Arc<Mutex<Vec<(String, Downstream)>>>,
}

impl Log {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a marker.
    pub fn push(&self, entry: impl Into<String>) {
        lock(&self.entries).push(entry.into());
    }

    /// Every marker so far, in order.
    pub fn entries(&self) -> Vec<String> {
        lock(&self.entries).clone()
    }

    /// Every marker so far, joined by spaces: `"a-pre b-pre b-post a-post"`.
    pub fn joined(&self) -> String {
        lock(&self.entries).join(" ")
    }

    /// What the marker `name` saw `next.run` return, each time it ran.
    pub fn outcomes_seen_by(&self, name: &str) -> Vec<Downstream> {
        lock(&self.outcomes)
            .iter()
            .filter(|(seen_by, _)| seen_by == name)
            .map(|(_, outcome)| *outcome)
            .collect()
    }

    fn record_outcome(&self, name: &str, outcome: Downstream) {
        lock(&self.outcomes).push((name.to_owned(), outcome));
    }

    /// Forgets every marker and outcome.
    pub fn clear(&self) {
        lock(&self.entries).clear();
        lock(&self.outcomes).clear();
    }

    /// A [`Marker`] named `name` writing to this log.
    pub fn marker(&self, name: &'static str) -> Marker {
        Marker {
            name,
            log: self.clone(),
        }
    }
}

/// Middleware for any of the four pipelines: logs `name-pre`, runs the rest of the pipeline,
/// records what `next` returned, logs `name-post`.
#[derive(Clone)]
pub struct Marker {
    name: &'static str,
    log: Log,
}

impl<P: Pipeline> Middleware<P> for Marker {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.log.push(format!("{}-pre", self.name));
            let outcome = next.run(ctx).await;
            self.log.record_outcome(self.name, outcome);
            self.log.push(format!("{}-post", self.name));
            Ok(())
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// What a [`ScriptedExecutor`] does in one iteration.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// Returns without signalling: the loop goes on to the output pipeline and another iteration.
    Continue,
    /// Acknowledges the dispatch.
    Ack,
    /// Nacks the dispatch with this message.
    Nack(&'static str),
    /// Returns an error with this message.
    Fail(&'static str),
    /// Panics with this message.
    Panic(&'static str),
    /// Returns `adk::context::Aborted` with this reason, aborting the dispatch.
    Abort(&'static str),
}

/// An executor that plays `script[iteration]` and acknowledges once the script runs out, so a
/// dispatch always ends. It logs `executor` to its [`Log`] every time it runs and counts its
/// runs.
///
/// ```
/// use adk_integration_tests::{Log, ScriptedExecutor, Step};
///
/// let executor = ScriptedExecutor::new([Step::Continue, Step::Ack]).logging_to(Log::new());
/// assert_eq!(executor.runs(), 0);
/// ```
#[derive(Clone)]
pub struct ScriptedExecutor {
    script: Arc<[Step]>,
    runs: Arc<AtomicUsize>,
    log: Option<Log>,
}

impl ScriptedExecutor {
    /// An executor playing `script`, one step per iteration.
    pub fn new(script: impl IntoIterator<Item = Step>) -> Self {
        Self {
            script: script.into_iter().collect(),
            runs: Arc::default(),
            log: None,
        }
    }

    /// An executor that acknowledges in its first iteration.
    pub fn acking() -> Self {
        Self::new([Step::Ack])
    }

    /// Also logs `executor` to `log` every time it runs.
    pub fn logging_to(mut self, log: Log) -> Self {
        self.log = Some(log);
        self
    }

    /// How many times it ran, across every turn.
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// The error a scripted step fails with: its message is the script's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedFailure(pub &'static str);

impl std::fmt::Display for ScriptedFailure {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.0)
    }
}

impl std::error::Error for ScriptedFailure {}

impl Executor for ScriptedExecutor {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            if let Some(log) = &self.log {
                log.push("executor");
            }
            let step = usize::try_from(ctx.iteration())
                .ok()
                .and_then(|iteration| self.script.get(iteration))
                .copied()
                .unwrap_or(Step::Ack);
            match step {
                Step::Continue => Ok(()),
                Step::Ack => Ok(ctx.ack()?),
                Step::Nack(message) => Ok(ctx.nack(ScriptedFailure(message))?),
                Step::Fail(message) => Err(ScriptedFailure(message).into()),
                Step::Panic(message) => panic!("{message}"),
                Step::Abort(reason) => Err(Aborted::new(reason).into()),
            }
        })
    }
}

// ---------------------------------------------------------------------------------------------

/// A storage adapter that keeps messages (store appends, mutate replaces in place, delete
/// removes) and records every call it receives as `"method argument"`, e.g.
/// `"store_message m1"`. Every other primitive is accepted and dropped; bytes go to an
/// in-memory [`NoopStorage`].
///
/// Clones share their state, so a test keeps one clone and hands the other to the runner.
///
/// ```
/// use adk_integration_tests::RecordingStorage;
///
/// let storage = RecordingStorage::new();
/// assert!(storage.calls().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct RecordingStorage {
    messages: Arc<Mutex<Vec<Message>>>,
    calls: Arc<Mutex<Vec<String>>>,
    bytes: Arc<NoopStorage>,
}

impl RecordingStorage {
    /// Storage holding no message.
    pub fn new() -> Self {
        Self::default()
    }

    /// Storage already holding these messages, as if stored by earlier turns.
    pub fn with_messages(messages: impl IntoIterator<Item = Message>) -> Self {
        let storage = Self::default();
        lock(&storage.messages).extend(messages);
        storage
    }

    /// Every call received so far, in order.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }

    /// The ids of the stored messages, in fetch order.
    pub fn message_ids(&self) -> Vec<String> {
        lock(&self.messages)
            .iter()
            .map(|message| message.id().to_owned())
            .collect()
    }

    /// The stored messages, in fetch order.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.messages).clone()
    }

    fn record(&self, call: impl Into<String>) {
        lock(&self.calls).push(call.into());
    }
}

impl StorageAdapter for RecordingStorage {
    async fn fetch_memories(&self, _ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        self.record("fetch_memories");
        Ok(Vec::new())
    }
    async fn fetch_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        self.record("fetch_messages");
        Ok(self.messages())
    }
    async fn fetch_thoughts(&self, _ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        self.record("fetch_thoughts");
        Ok(Vec::new())
    }
    async fn fetch_tool_calls(&self, _ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        self.record("fetch_tool_calls");
        Ok(Vec::new())
    }
    async fn fetch_tools(&self, _ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        self.record("fetch_tools");
        Ok(Vec::new())
    }
    async fn fetch_retrievables(
        &self,
        _ctx: &StorageContext,
    ) -> Result<Vec<Retrievable>, StorageError> {
        self.record("fetch_retrievables");
        Ok(Vec::new())
    }
    async fn refresh_standing_instructions(
        &self,
        _ctx: &StorageContext,
    ) -> Result<Vec<StandingInstruction>, StorageError> {
        self.record("refresh_standing_instructions");
        Ok(Vec::new())
    }
    async fn store_memory(
        &self,
        _ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        self.record(format!("store_memory {}", memory.id()));
        Ok(())
    }
    async fn mutate_memory(
        &self,
        _ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        self.record(format!("mutate_memory {}", memory.id()));
        Ok(())
    }
    async fn delete_memory(&self, _ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.record(format!("delete_memory {id}"));
        Ok(())
    }
    async fn store_message(
        &self,
        _ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.record(format!("store_message {}", message.id()));
        lock(&self.messages).push(message);
        Ok(())
    }
    async fn mutate_message(
        &self,
        _ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.record(format!("mutate_message {}", message.id()));
        let mut messages = lock(&self.messages);
        match messages
            .iter_mut()
            .find(|stored| stored.id() == message.id())
        {
            Some(stored) => {
                *stored = message;
                Ok(())
            }
            None => Err(StorageError::NotFound {
                kind: Primitive::Messages,
                id: message.id().to_owned(),
            }),
        }
    }
    async fn delete_message(&self, _ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.record(format!("delete_message {id}"));
        lock(&self.messages).retain(|stored| stored.id() != id);
        Ok(())
    }
    async fn store_thought(
        &self,
        _ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.record(format!("store_thought {}", thought.id()));
        Ok(())
    }
    async fn mutate_thought(
        &self,
        _ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.record(format!("mutate_thought {}", thought.id()));
        Ok(())
    }
    async fn delete_thought(&self, _ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.record(format!("delete_thought {id}"));
        Ok(())
    }
    async fn store_tool_call(
        &self,
        _ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        self.record(format!("store_tool_call {}", tool_call.id()));
        Ok(())
    }
    async fn mutate_tool_call(
        &self,
        _ctx: &StorageContext,
        tool_call: ToolCall,
    ) -> Result<(), StorageError> {
        self.record(format!("mutate_tool_call {}", tool_call.id()));
        Ok(())
    }
    async fn delete_tool_call(
        &self,
        _ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        self.record(format!("delete_tool_call {id}"));
        Ok(())
    }
    async fn store_retrievable(
        &self,
        _ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.record(format!("store_retrievable {}", retrievable.id()));
        Ok(())
    }
    async fn mutate_retrievable(
        &self,
        _ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.record(format!("mutate_retrievable {}", retrievable.id()));
        Ok(())
    }
    async fn delete_retrievable(
        &self,
        _ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        self.record(format!("delete_retrievable {id}"));
        Ok(())
    }
    async fn store_standing_instruction(
        &self,
        _ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.record(format!(
            "store_standing_instruction {}",
            instruction.render()
        ));
        Ok(())
    }
    async fn mutate_standing_instruction(
        &self,
        _ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.record(format!(
            "mutate_standing_instruction {}",
            instruction.render()
        ));
        Ok(())
    }
    async fn delete_standing_instruction(
        &self,
        _ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.record(format!(
            "delete_standing_instruction {}",
            instruction.render()
        ));
        Ok(())
    }
    async fn store_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        self.record(format!("store_media_bytes {id}"));
        self.bytes.store_media_bytes(ctx, id, bytes).await
    }
    async fn store_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        self.record(format!("store_retrievable_bytes {id}"));
        self.bytes.store_retrievable_bytes(ctx, id, bytes).await
    }
    async fn read_media_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<MediaReader>, StorageError> {
        self.record(format!("read_media_bytes {id}"));
        self.bytes.read_media_bytes(ctx, id).await
    }
    async fn read_retrievable_bytes(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<Option<SpoolReader>, StorageError> {
        self.record(format!("read_retrievable_bytes {id}"));
        self.bytes.read_retrievable_bytes(ctx, id).await
    }
}

// ---------------------------------------------------------------------------------------------

/// A process-wide subscriber that records nothing but calls every callsite "sometimes"
/// interesting, so `tracing` asks the current thread's subscriber at each event.
///
/// Why: `tracing` caches each callsite's interest once for the whole process, combined over
/// every live subscriber. When a test thread without a capturing subscriber registers a callsite
/// while another thread is installing its own, the cache can end up `never` and the capturing
/// thread sees nothing (a flake CI hit). With this subscriber as the global default the combined
/// interest is never `never`, and the maximum level stays at `TRACE`.
struct EveryCallsiteSometimes;

impl tracing::Subscriber for EveryCallsiteSometimes {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Installs [`EveryCallsiteSometimes`] once per process (unless the process already has a global
/// subscriber) and recomputes the callsite cache, so a capture that starts now sees every event.
fn keep_every_callsite_interesting() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Another global subscriber already keeps its own interests; nothing to do then.
        let _ = tracing::subscriber::set_global_default(EveryCallsiteSometimes);
    });
    tracing::callsite::rebuild_interest_cache();
}

/// Every clone writes into one buffer, which [`captured_log`] reads back.
#[derive(Clone, Default)]
struct CapturedWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `work` with a plain-text (no colour) `tracing` subscriber as this thread's default,
/// filtered by `filter` (an `EnvFilter` directive such as `adk=debug`), and returns what was
/// logged with what `work` returned. Only this thread's logging is captured, so `work` should
/// drive its futures on a current-thread runtime it builds.
///
/// ```
/// // Nothing here logs, so the log is empty and the work's answer comes back.
/// let (log, answer) = adk_integration_tests::captured_log("adk=debug", || 6 * 7);
/// assert_eq!(answer, 42);
/// assert!(log.is_empty());
/// ```
pub fn captured_log<T>(filter: &str, work: impl FnOnce() -> T) -> (String, T) {
    keep_every_callsite_interesting();
    let captured = CapturedWriter::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .finish();
    let returned = {
        let _guard = tracing_subscriber::util::SubscriberInitExt::set_default(subscriber);
        work()
    };
    let bytes = lock(&captured.0).clone();
    (
        String::from_utf8(bytes).expect("tracing writes UTF-8"),
        returned,
    )
}

// ---------------------------------------------------------------------------------------------

/// A session store written against the trait's required methods only, as a store from before
/// events, lineage and `commit_state` would be: every optional method keeps the trait's default
/// (which answers `SessionStoreError::Unsupported`). It forwards to an in-memory store.
///
/// ```
/// use adk::state::{SessionKey, SessionStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = adk_integration_tests::StoreWithRequiredMethodsOnly::default();
/// store.create_session(&SessionKey::new("app", "ada", "s-1"), Default::default()).await?;
/// assert!(store.forks(&SessionKey::new("app", "ada", "s-1")).await.is_err());
/// # Ok::<(), adk::state::SessionStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Default)]
pub struct StoreWithRequiredMethodsOnly(pub adk::state::InMemorySessionStore);

impl adk::state::SessionStore for StoreWithRequiredMethodsOnly {
    async fn create_session(
        &self,
        key: &adk::state::SessionKey,
        state: serde_json::Map<String, serde_json::Value>,
    ) -> Result<adk::state::Session, adk::state::SessionStoreError> {
        self.0.create_session(key, state).await
    }
    async fn get_session(
        &self,
        key: &adk::state::SessionKey,
    ) -> Result<Option<adk::state::Session>, adk::state::SessionStoreError> {
        self.0.get_session(key).await
    }
    async fn list_sessions(
        &self,
        app: &adk::ids::AppName,
        user: Option<&adk::ids::UserId>,
    ) -> Result<Vec<adk::state::Session>, adk::state::SessionStoreError> {
        self.0.list_sessions(app, user).await
    }
    async fn delete_session(
        &self,
        key: &adk::state::SessionKey,
    ) -> Result<(), adk::state::SessionStoreError> {
        self.0.delete_session(key).await
    }
    async fn app_state(
        &self,
        app: &adk::ids::AppName,
    ) -> Result<serde_json::Map<String, serde_json::Value>, adk::state::SessionStoreError> {
        self.0.app_state(app).await
    }
    async fn user_state(
        &self,
        app: &adk::ids::AppName,
        user: &adk::ids::UserId,
    ) -> Result<serde_json::Map<String, serde_json::Value>, adk::state::SessionStoreError> {
        self.0.user_state(app, user).await
    }
    async fn load_turn(
        &self,
        key: &adk::state::SessionKey,
        thread: &adk::ids::ThreadId,
    ) -> Result<adk::state::LoadedTurn, adk::state::SessionStoreError> {
        self.0.load_turn(key, thread).await
    }
    async fn commit_turn(
        &self,
        key: &adk::state::SessionKey,
        commit: adk::state::TurnCommit,
    ) -> Result<(), adk::state::SessionStoreError> {
        self.0.commit_turn(key, commit).await
    }
    async fn copy_thread_records(
        &self,
        key: &adk::state::SessionKey,
        from: &adk::ids::ThreadId,
        to: &adk::ids::ThreadId,
    ) -> Result<(), adk::state::SessionStoreError> {
        self.0.copy_thread_records(key, from, to).await
    }
}

// ---------------------------------------------------------------------------------------------

/// Runs each named `async fn(SharedSessionStore)` as three tests, one per session store: the
/// in-memory store, SQLite (in memory) and PostgreSQL (a fresh schema named after `$label`,
/// when `ADK_TEST_POSTGRES_URL` names a database; otherwise the test says loudly that it did
/// not check PostgreSQL). Each scenario becomes a module with tests `in_memory`, `sqlite` and
/// `postgres`, on a two-worker runtime so concurrent scenarios really overlap.
///
/// ```
/// use adk::state::SharedSessionStore;
///
/// async fn a_new_store_lists_no_sessions(store: SharedSessionStore) {
///     # let _ = store;
/// }
/// adk_integration_tests::on_every_session_store!("doc": a_new_store_lists_no_sessions);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! on_every_session_store {
    ($label:literal: $($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn in_memory() {
                let store = ::adk::state::InMemorySessionStore::new();
                super::$name(::adk::state::SharedSessionStore::new(store)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let store = ::adk::sqlite::SqliteSessionStore::in_memory().await.expect("opens");
                super::$name(::adk::state::SharedSessionStore::new(store)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(options) = $crate::postgres_database::fresh_options($label) else {
                    eprintln!("NOT RUN on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
                    return;
                };
                let store = ::adk::postgres::PostgresSessionStore::connect_with(options)
                    .await
                    .expect("connects");
                super::$name(::adk::state::SharedSessionStore::new(store)).await;
            }
        }
    )*};
}

//! # adk — an agent development kit whose wiring mistakes are caught by `cargo check`
//!
//! A turn runs through four pipelines of middleware around an executor (the model call):
//! `turn_input` → dispatch loop (`dispatch_input` → executor → `dispatch_output`) → `turn_output`;
//! a fifth, `tool_execution`, runs around every tool call the executor makes.
//! The runner itself has no behaviour: middleware loads history, retrieves and enforces policy,
//! a [`StorageAdapter`](storage::StorageAdapter) persists six primitives, and middleware passes
//! state sideways through the [`stash`].
//!
//! Where the TypeScript original checks its wiring when the runner is built, adk checks it when
//! your crate compiles:
//! - [`stash_key!`] declares typed keys over the untyped stash and rejects malformed paths;
//! - [`storage_adapter!`] rejects a missing callback or a wrong signature;
//! - [`#[middleware]`](macro@middleware) makes middleware that only fits its own pipeline;
//! - [`#[derive(MiddlewareState)]`](middleware_state) declares a middleware's private typed
//!   state, transient or persistent per session or thread, and rejects every declaration that
//!   could not be stored or read back.
//!
//! The package is published as `checked-adk` (`cargo add checked-adk`); its library is named
//! `adk`, so code says `use adk::...` with no rename in your `Cargo.toml`. Start with
//! `use adk::prelude::*` and the [getting-started guide](guide::getting_started).

// No `unsafe` in this crate, and none can be allowed back in by an item-level attribute: what
// needs it (pinning, the futures runtime, the stores' drivers) is done by maintained
// dependencies that own it.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Every example in the docs, the guides and the README is a doc-test: a deprecated call in one
// fails the build, so the examples show the current names.
#![doc(test(attr(deny(deprecated))))]

// Lets the macros' `::adk::...` paths resolve inside this crate's own tests and doc-tests.
extern crate self as adk;

pub mod agent;
#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub mod anthropic;
pub mod approval;
pub mod budget;
pub mod bytes;
pub mod compaction;
pub mod context;
pub mod declarations;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod gate;
pub mod guide;
pub mod history;
pub mod ids;
mod lean;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod middleware_state;
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub mod openai;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
pub mod pipeline;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
pub mod prelude;
pub mod primitives;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod provider;
pub mod runner;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;
pub mod stash;
pub mod state;
pub mod storage;
pub mod tokens;
pub mod trace;
pub mod transcript;

// Support for macro expansions; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub mod middleware;
    pub mod middleware_state;
    pub mod stash;
    pub mod state_writes;
    pub use inventory;
}

pub use agent::Agent;
pub use context::{DispatchContext, RawTurnContext, ToolContext, TurnContext};
pub use runner::{TurnOutcome, TurnRunner};
pub use stash::{Registry, StashError, StashKey};

/// Declares a typed key over the stash, checked at compile time.
///
/// ```rust,standalone_crate
/// const COUNT: adk::StashKey<u32> = adk::stash_key!("my-org.count" => u32);
/// let mut stash = adk::Registry::new();
/// stash.set(COUNT, 5).unwrap();
/// assert_eq!(stash.get(COUNT).unwrap(), Some(5));
/// ```
pub use adk_macros::stash_key;

/// Declares a group of typed stash keys at once, rejecting duplicates and parent/child collisions.
///
/// ```rust,standalone_crate
/// adk::stash_keys! {
///     /// How many chunks retrieval produced.
///     pub CHUNKS: "my-org.retrieval.chunks" => u32,
///     pub POLICY: "my-org.policy" => String,
/// }
/// assert_eq!(CHUNKS.path(), "my-org.retrieval.chunks");
/// ```
pub use adk_macros::stash_keys;

/// Declares a typed session-state key, its scope checked at compile time.
///
/// The key's prefix picks its scope: none (this session), `app:` (every session of the app),
/// `user:` (every session of the user in this app) or `temp:` (this turn only, never stored); see
/// [`state`]. The type must be serde data. The result is a `const`-usable
/// [`StateKey<T>`](state::StateKey) for `ctx.state().get(KEY)` and `ctx.state_mut().set(KEY, v)`.
///
/// ```rust,standalone_crate
/// use adk::state::{Scope, State, StateKey};
///
/// const THEME: StateKey<String> = adk::state_key!("user:theme" => String);
/// const STEP: StateKey<u32> = adk::state_key!("step" => u32);
///
/// let mut state = State::new();
/// state.set(THEME, "dark".to_owned())?;
/// state.set(STEP, 2)?;
/// assert_eq!(state.get(THEME)?.as_deref(), Some("dark"));
/// assert_eq!(STEP.scope(), Scope::Session);
/// # Ok::<(), adk::state::StateError>(())
/// ```
///
/// Refused at compile time, each at your token with the fix: an unknown scope prefix
/// (`"usr:theme"`: did you mean `user:theme`?), an empty name (`"user:"`), a key that is not a
/// string literal, and a type that is not `Serialize + DeserializeOwned`.
///
/// ```compile_fail
/// const THEME: adk::state::StateKey<String> = adk::state_key!("usr:theme" => String);
/// ```
pub use adk_macros::state_key;

/// Declares a storage adapter: a struct, and the callbacks its
/// [`StorageAdapter`](storage::StorageAdapter) impl calls, checked when your crate compiles.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use adk::primitives::Message;
/// use adk::storage::{StorageAdapter, StorageContext, StorageError};
///
/// async fn log_store(_ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
///     println!("storing {}", message.id());
///     Ok(())
/// }
///
/// adk::storage_adapter! {
///     /// Docs and attributes carry over to the struct.
///     #[derive(Clone, Default)]
///     pub struct ChatStore {
///         messages: Arc<Mutex<Vec<Message>>>,
///     }
///
///     impl {
///         // A method of the struct, called with `&self` first.
///         fetch_messages: self.fetch_messages,
///         // A closure of the callback's arity; it may use `self`.
///         store_message: |_ctx, message| async move {
///             self.messages.lock().map_err(|_| StorageError::backend("lock poisoned"))?.push(message);
///             Ok(())
///         },
///         // A path to an `async fn`.
///         mutate_message: log_store,
///         // Every callback not named above: the no-op baseline, `NoopStorage`.
///         ..noop
///     }
/// }
///
/// impl ChatStore {
///     async fn fetch_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
///         Ok(self.messages.lock().map_err(|_| StorageError::backend("lock poisoned"))?.clone())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = ChatStore::default();
/// let ctx = StorageContext::new("conversation-1");
/// store.store_message(&ctx, Message::user("m1", "hello").unwrap()).await.unwrap();
/// assert_eq!(store.fetch_messages(&ctx).await.unwrap().len(), 1);
/// assert!(store.fetch_thoughts(&ctx).await.unwrap().is_empty()); // from `..noop`
/// # });
/// ```
///
/// # Callbacks
///
/// The list names callbacks by their `StorageAdapter` method names, each given one of three ways:
///
/// | form | called as | example |
/// |---|---|---|
/// | `self.method` | `Self::method(&self, ctx, ..)` | `fetch_messages: self.fetch_messages` |
/// | a path to an `async fn` | `callback(ctx, ..)` | `store_message: store_message_in_log` |
/// | a closure, plain or `async` | `callback(ctx, ..)` | `delete_message: \|_ctx, _id\| async { Ok(()) }` |
///
/// Fetches take `(ctx)`, store / mutate / delete take `(ctx, value_or_id)`, the two byte
/// conduits take `(ctx, id, bytes)` and their reads `(ctx, id)`; see [`StorageAdapter`](storage::StorageAdapter) for every
/// signature. Closures need no type annotations: the macro gives their parameters the callback's
/// types, and makes them `move` so their future may borrow `self` (the adapter). Every generated
/// future must be `Send`.
///
/// All 29 callbacks must be listed, or the list must end with `..noop`, which delegates every
/// callback not named to [`NoopStorage::shared()`](storage::NoopStorage::shared): no-ops are
/// explicit, as in the TypeScript original, but one token long.
///
/// # Errors
///
/// Each mistake is reported at the token that caused it, in one build:
/// - callbacks missing without `..noop`: one error at `impl` naming every missing callback;
/// - an unknown name (with a "did you mean" suggestion), a name listed twice, `..` followed by
///   anything but `noop`, a missing `impl { .. }` list, an item that is not a struct;
/// - a closure with the wrong number of parameters, at its parameter list;
/// - a function, method or closure whose parameter or return types do not match: "`..` is not a
///   valid `store_message` callback", labelled with the expected `async fn` signature;
/// - a future that is not `Send`, at the callback's name.
///
/// The struct is emitted whatever goes wrong, and rejected callbacks fall back to the no-op, so the
/// rest of your code does not fail with it.
///
/// ```compile_fail
/// adk::storage_adapter! {
///     pub struct Incomplete;
///     impl {
///         fetch_messages: |_ctx| async { Ok(Vec::new()) },
///     } // error: missing 28 storage callbacks: `fetch_memories`, ..; add them, or end the list with `..noop`
/// }
/// ```
///
/// Writing `impl StorageAdapter for MyStore` by hand works too; the macro is a shorthand for it.
pub use adk_macros::storage_adapter;

/// Turns an `async fn(ctx, next) -> Result<(), E>` into middleware for the pipelines it names.
///
/// The function stays a fn of the same name and visibility, and that fn is
/// [`Middleware`](pipeline::Middleware) for each listed pipeline, so it is registered by name
/// and only fits the pipelines it was written for. It takes its name the way a plain fn does:
/// a `let`, a closure parameter or a pattern of the same name elsewhere is a new binding, and a
/// type or a module of that name can sit next to it. The body runs unchanged: the pre-step, then
/// `next.run(ctx).await`, then the post-step. The error type `E` is any
/// `std::error::Error + Send + Sync + 'static` (or [`BoxError`](pipeline::BoxError)) and is
/// boxed for the pipeline, so `?` works on your own errors.
///
/// ```
/// use adk::pipeline::{BoxError, Next, Stack, TurnInput};
/// use adk::TurnContext;
///
/// /// Notes when the rest of the `turn_input` pipeline did not complete.
/// #[adk::middleware(pipeline = turn_input)]
/// async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
///     // pre-step: runs before the rest of the pipeline
///     let outcome = next.run(ctx).await;
///     // post-step: runs after it, on the failure path too
///     if !outcome.is_completed() {
///         tracing::debug!(?outcome, "history not committed");
///     }
///     Ok(())
/// }
///
/// let mut stack = Stack::<TurnInput>::new();
/// stack.push(load_history);
/// ```
///
/// # Arguments
///
/// `pipeline = turn_input` names one of `turn_input`, `turn_output` (context `&mut TurnContext`),
/// `dispatch_input`, `dispatch_output` (context `&mut DispatchContext`), `tool_execution`
/// (context `&mut ToolContext`, one tool call); `pipeline = [dispatch_input, dispatch_output]`
/// implements several pipelines of one scope.
///
/// # Compile errors
///
/// Each points at your token and says the fix: an unknown or missing pipeline, a function that
/// is not `async`, parameters other than `(ctx: &mut Context, next: Next<'_, Context>)` in that
/// order, a context of the other scope, a return type other than `Result<(), E>`, generic
/// parameters or `self`.
///
/// `next` is checked by what the body does with the parameter itself (a method named `next`,
/// or a `let next` that shadows it, is another value):
///
/// - every path that returns `Ok` runs the chain (`next.run(ctx).await`), hands `next` or its
///   future on (to a function, closure, async block or macro), or aborts with
///   `ctx.abort(reason)` (a `tool_execution` middleware: settles the call with
///   `ctx.refuse(reason)` or `ctx.respond(output)`), or, in `turn_input`, completes the turn
///   with its own reply (`ctx.complete_with(reply).await?`); otherwise the pipeline would short-circuit, reported at run time as
///   `E_PIPELINE_SHORT_CIRCUITED`. Paths that return an error (`return Err(..)`, `Err(..)?`,
///   a tail `Err(..)`, `bail!`, `panic!`) and branches taken only when `ctx.is_aborted()` need
///   nothing. A `while`/`for` loop may run zero times, so running `next` inside one does not
///   count for the code after it. The error points at the path that does not settle: the
///   `return`, the branch, or the `if` whose missing `else` falls through.
/// - every `next.run(..)` future is awaited, returned or handed on: `next.run(ctx);`,
///   `_ = next.run(ctx);`, `drop(next.run(ctx))` and a future stored and never awaited are
///   errors at the call.
/// - whatever takes `next` or its future (a closure, an async block, a call) is run in turn:
///   awaited (a closure called and its result awaited), returned or handed on. A closure never
///   called, `cond.then(|| next.run(ctx))`, an async block never awaited and
///   `helper(ctx, next);` without `.await` are errors where `next` is moved in.
///
/// The fn is still called like the fn it was written as: `load_history(ctx, next).await`
/// runs the body (the call returns a [`DirectCallFuture`](pipeline::DirectCallFuture), its
/// error boxed as [`BoxError`](pipeline::BoxError)), so one middleware can wrap another. To test a middleware alone, push it on a [`Stack`](pipeline::Stack) and run that
/// with a context from [`TurnContext::new`]. `#[middleware]` goes on a free fn: on an associated
/// fn inside an `impl` or `trait` block it reports an error saying to move the fn out.
///
/// A middleware that refuses on purpose calls `ctx.abort(reason)` and names its parameter
/// `_next`, which turns the path check off:
///
/// ```
/// use adk::pipeline::{BoxError, Next};
/// use adk::TurnContext;
///
/// #[adk::middleware(pipeline = turn_input)]
/// async fn read_only(ctx: &mut TurnContext, _next: Next<'_, TurnContext>) -> Result<(), BoxError> {
///     ctx.abort("this deployment is read-only");
///     Ok(())
/// }
/// # let _ = adk::pipeline::Stack::<adk::pipeline::TurnInput>::new().push(read_only);
/// ```
///
/// ```compile_fail
/// use adk::pipeline::{BoxError, Next};
/// use adk::TurnContext;
///
/// #[adk::middleware(pipeline = turn_input)]
/// async fn forgets_next(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
///     Ok(()) // error: `next` is never run, so this middleware short-circuits the pipeline
/// }
/// ```
pub use adk_macros::middleware;

//! # adk — an agent development kit whose wiring mistakes are caught by `cargo check`
//!
//! A turn runs through four pipelines of middleware around an executor (the model call):
//! `turn_input` → dispatch loop (`dispatch_input` → executor → `dispatch_output`) → `turn_output`.
//! The runner itself has no behaviour: middleware loads history, retrieves and enforces policy,
//! a [`StorageAdapter`](storage::StorageAdapter) persists six primitives, and middleware passes
//! state sideways through the [stash](stash).
//!
//! Where the TypeScript original checks its wiring when the runner is built, adk checks it when
//! your crate compiles:
//! - [`stash_key!`] declares typed keys over the untyped stash and rejects malformed paths;
//! - `storage_adapter!` rejects a missing callback or a wrong signature;
//! - `#[middleware]` makes middleware that only fits its own pipeline.

// Lets the macros' `::adk::...` paths resolve inside this crate's own tests and doc-tests.
extern crate self as adk;

pub mod bytes;
pub mod context;
pub mod dispatch;
pub mod events;
pub mod pipeline;
pub mod primitives;
pub mod runner;
pub mod stash;
pub mod storage;

// Support for macro expansions; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub mod middleware;
}

pub use context::{DispatchContext, RawTurnContext, TurnContext};
pub use runner::{TurnOutcome, TurnRunner};
pub use stash::{Registry, StashError, StashKey};

/// Declares a typed key over the stash, checked at compile time.
///
/// ```
/// const COUNT: adk::StashKey<u32> = adk::stash_key!("my-org.count" => u32);
/// let mut stash = adk::Registry::new();
/// stash.set(COUNT, 5).unwrap();
/// assert_eq!(stash.get(COUNT).unwrap(), Some(5));
/// ```
pub use adk_macros::stash_key;

/// Declares a group of typed stash keys at once, rejecting duplicates and parent/child collisions.
///
/// ```
/// adk::stash_keys! {
///     /// How many chunks retrieval produced.
///     pub CHUNKS: "my-org.retrieval.chunks" => u32,
///     pub POLICY: "my-org.policy" => String,
/// }
/// assert_eq!(CHUNKS.path(), "my-org.retrieval.chunks");
/// ```
pub use adk_macros::stash_keys;

/// Turns an `async fn(ctx, next) -> Result<(), E>` into middleware for the pipelines it names.
///
/// The function becomes a unit struct of the same name and visibility that implements
/// [`Middleware`](pipeline::Middleware) for each listed pipeline, so it is registered by name
/// and only fits the pipelines it was written for. The body runs unchanged: the pre-step, then
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
/// `dispatch_input`, `dispatch_output` (context `&mut DispatchContext`);
/// `pipeline = [dispatch_input, dispatch_output]` implements several pipelines of one scope.
///
/// # Compile errors
///
/// Each points at your token and says the fix: an unknown or missing pipeline, a function that
/// is not `async`, parameters other than `(ctx: &mut Context, next: Next<'_, Context>)` in that
/// order, a context of the other scope, a return type other than `Result<(), E>`, generic
/// parameters or `self`, a `next` that is never used (the pipeline would short-circuit, reported
/// at run time as `E_PIPELINE_SHORT_CIRCUITED`) and a `next.run(..)` that is not awaited.
/// A middleware that refuses on purpose calls `ctx.abort(reason)` and names its parameter
/// `_next`, which turns the unused-`next` check off:
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
/// # let _ = read_only;
/// ```
///
/// ```compile_fail
/// use adk::pipeline::{BoxError, Next};
/// use adk::TurnContext;
///
/// #[adk::middleware(pipeline = turn_input)]
/// async fn forgets_next(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
///     Ok(()) // error: `next` is never used, so this middleware short-circuits the pipeline
/// }
/// ```
pub use adk_macros::middleware;

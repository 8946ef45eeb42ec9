//! Pipelines and middleware: the onion every turn is made of.
//!
//! A turn walks four pipelines, and every tool call a fifth. Each is a list of middleware run in registration order; a
//! middleware does its pre-step, hands the context on with [`Next::run`], and does its post-step
//! when the rest of the chain has finished. Not calling `next` short-circuits the pipeline.
//!
//! | pipeline | marker | context | runs |
//! |---|---|---|---|
//! | `turn_input` | [`TurnInput`] | `TurnContext` | once, before the dispatch |
//! | `dispatch_input` | [`DispatchInput`] | `DispatchContext` | every iteration, before the executor |
//! | `dispatch_output` | [`DispatchOutput`] | `DispatchContext` | every iteration, after the executor |
//! | `turn_output` | [`TurnOutput`] | `TurnContext` | once, after an acknowledged dispatch |
//! | `tool_execution` | [`ToolExecution`] | `ToolContext` | around every tool call a dispatch executes |
//!
//! The pipeline is part of a middleware's type: `Middleware<TurnInput>` cannot be registered on
//! `dispatch_input`, so a middleware written for one pipeline never runs in another.
//!
//! Errors and panics are caught at the level of the middleware that raised them, reported
//! through [`PipelineContext::report_failure`], and the upstream post-steps still run;
//! [`Next::run`] returns a [`Downstream`] so a post-step can tell the commit path from the
//! failure path.
//!
#![doc = include_str!("../../docs/pipelines.md")]

mod chain;
mod from_fn;
mod state_writes;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

pub(crate) use chain::StepOutput;
pub(crate) use chain::panic_message;
pub use chain::{Next, PipelineRun, Stack, run_pipeline};

pub use from_fn::{FromFn, from_fn};
pub use state_writes::{StateWrite, StateWrites};

pub use crate::error::BoxError;

/// A boxed, `Send` future borrowing for `'a`: what [`Middleware::handle`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What calling a `#[middleware]` fn directly returns: its outcome, with the error boxed.
///
/// `#[middleware]` keeps the fn a fn of the same name, so it is still called like the fn it was
/// written as: one middleware can run another, and a test can run one on its own. `M` is the
/// hidden type that carries the fn's body, `C` the context it was called with (the context of
/// the first pipeline the fn lists; another one is reported where the call is awaited). The body
/// starts on the first poll.
///
/// ```
/// use adk::TurnContext;
/// use adk::pipeline::{BoxError, Next};
///
/// #[adk::middleware(pipeline = turn_input)]
/// async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
///     let _ = next.run(ctx).await;
///     Ok(())
/// }
///
/// #[adk::middleware(pipeline = turn_input)]
/// async fn load_history_unless_aborted(
///     ctx: &mut TurnContext,
///     next: Next<'_, TurnContext>,
/// ) -> Result<(), BoxError> {
///     if ctx.is_aborted() {
///         return Ok(());
///     }
///     load_history(ctx, next).await
/// }
/// ```
#[must_use = "a middleware does nothing until its future is awaited"]
pub struct DirectCallFuture<'a, M, C> {
    /// The arguments, until the first poll starts the body.
    arguments: Option<(&'a mut C, Next<'a, C>)>,
    running: Option<BoxFuture<'a, Result<(), BoxError>>>,
    body: std::marker::PhantomData<fn() -> M>,
}

impl<'a, M, C> DirectCallFuture<'a, M, C> {
    /// The call of `M`'s fn with `ctx` and `next`. Not a public API: `#[middleware]` writes it.
    #[doc(hidden)]
    pub fn new(ctx: &'a mut C, next: Next<'a, C>) -> Self {
        Self {
            arguments: Some((ctx, next)),
            running: None,
            body: std::marker::PhantomData,
        }
    }
}

impl<'a, M, C> Future for DirectCallFuture<'a, M, C>
where
    M: CalledWith<C>,
{
    type Output = Result<(), BoxError>;

    fn poll(
        mut self: Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = &mut *self;
        if let Some((ctx, next)) = this.arguments.take() {
            this.running = Some(M::call(ctx, next));
        }
        match this.running.as_mut() {
            Some(running) => running.as_mut().poll(context),
            // Unreachable: `arguments` is set until `running` is.
            None => std::task::Poll::Pending,
        }
    }
}

impl<M, C> fmt::Debug for DirectCallFuture<'_, M, C> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("DirectCallFuture")
            .field("started", &self.running.is_some())
            .finish_non_exhaustive()
    }
}

/// Runs a `#[middleware]` fn called directly (`load_history(ctx, next)`) with the context `C`:
/// implemented for the fn's hidden type, for the context of the first pipeline it lists.
#[diagnostic::on_unimplemented(
    message = "this middleware cannot be called with `&mut {C}`",
    label = "called with the wrong context",
    note = "a `#[middleware]` fn is called with the context its first pipeline hands it: `&mut TurnContext` for `turn_input` and `turn_output`, `&mut DispatchContext` for `dispatch_input` and `dispatch_output`, `&mut ToolContext` for `tool_execution`; to share code between middleware of two contexts, move it into a plain fn that both call"
)]
#[doc(hidden)]
pub trait CalledWith<C> {
    /// The body for that context, boxed.
    fn call<'a>(ctx: &'a mut C, next: Next<'a, C>) -> BoxFuture<'a, Result<(), BoxError>>;
}

mod sealed {
    pub trait Sealed {}
}

/// One of the five pipelines. Implemented only by the markers in this module (their impls,
/// which name the context each walks, are with the contexts).
pub trait Pipeline: sealed::Sealed + Send + Sync + 'static {
    /// The context its middleware receive.
    type Context: PipelineContext;
    /// The pipeline's name as users write it in `#[middleware(pipeline = ...)]`.
    const NAME: &'static str;
    /// Whether the pipeline is turn-scoped or dispatch-scoped.
    const SCOPE: Scope;
}

/// Which context a pipeline's middleware see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Turn-scoped pipelines see the `TurnContext`.
    Turn,
    /// Dispatch-scoped pipelines see the `DispatchContext`.
    Dispatch,
    /// The tool pipeline sees one tool call's `ToolContext`.
    Tool,
}

/// What a pipeline needs from the context it walks.
pub trait PipelineContext: Send + 'static {
    /// Whether the turn (or, for a dispatch context, the dispatch) was aborted. Once true, the
    /// bodies of the remaining middleware are skipped without an error.
    fn is_aborted(&self) -> bool;

    /// Records a middleware that returned an error or panicked. Called at the level where the
    /// failure was caught, before the upstream post-steps resume.
    fn report_failure(&mut self, failure: MiddlewareFailure);

    /// Called with every error a middleware returns, before it is treated as a failure. When the
    /// error is the abort error (`adk::Aborted`), the context aborts itself and returns `Ok`:
    /// returning the abort error is one of the ways to abort, and it emits no error event.
    /// Otherwise the error is handed back unchanged.
    fn absorb_abort(&mut self, error: BoxError) -> Result<(), BoxError>;
}

/// A middleware that returned an error or panicked.
#[derive(Debug)]
pub struct MiddlewareFailure {
    /// The pipeline it ran in.
    pub pipeline: &'static str,
    /// Its position in the pipeline, counted from zero in registration order. Messages count
    /// from one, as users do: position 0 is "middleware #1".
    pub position: usize,
    /// Its name: the fn name for `#[middleware]`, see [`Middleware::name`].
    pub name: &'static str,
    /// What went wrong.
    pub cause: FailureCause,
}

/// Why a middleware failed.
#[derive(Debug)]
pub enum FailureCause {
    /// It returned `Err`.
    Error(BoxError),
    /// It panicked; the panic message when it was a string.
    Panic(String),
}

impl MiddlewareFailure {
    /// The failure as the error the runner reports, under `code`.
    pub fn into_turn_error(self, code: crate::error::ErrorCode) -> crate::error::TurnError {
        let message = format!(
            "middleware #{} `{}` of the `{}` pipeline failed",
            self.position + 1,
            self.name,
            self.pipeline,
        );
        let error = crate::error::TurnError::new(code, message);
        match self.cause {
            FailureCause::Error(source) => error.with_source(source),
            FailureCause::Panic(panic) => error.with_source(Panicked { message: panic }),
        }
    }
}

/// The source of an error reported for a panic: the panic message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("panicked: {message}")]
pub struct Panicked {
    /// The panic message, when the payload was a string.
    pub message: String,
}

impl fmt::Display for FailureCause {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Error(error) => write!(formatter, "{error}"),
            Self::Panic(message) => write!(formatter, "middleware panicked: {message}"),
        }
    }
}

/// How the rest of the chain ended, as seen by the middleware that called [`Next::run`].
#[must_use = "a post-step that ignores `Downstream` cannot tell success from failure"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
// The discriminants are the codes a walk records outcomes with (see `chain::tag`), so recording
// one and reading it back need no translation.
#[repr(u8)]
pub enum Downstream {
    /// Every downstream middleware called `next` and the end of the pipeline was reached.
    Completed = 1,
    /// A downstream middleware returned without calling `next`.
    ShortCircuited = 2,
    /// A downstream middleware returned an error or panicked (already reported).
    Failed = 3,
    /// The turn or dispatch was aborted; the remaining middleware bodies were skipped.
    Aborted = 4,
}

impl Downstream {
    /// True when the end of the pipeline was reached: the commit path.
    pub fn is_completed(self) -> bool {
        self == Self::Completed
    }
}

/// Middleware for the pipeline `P`.
///
/// Write middleware as an `async fn` with `#[middleware(pipeline = ...)]`, as a closure with
/// [`from_fn()`], or implement this trait by hand:
///
/// ```
/// use adk::pipeline::{BoxError, BoxFuture, Middleware, Next, PipelineContext, TurnInput};
/// use adk::TurnContext;
///
/// struct Tracing;
///
/// impl Middleware<TurnInput> for Tracing {
///     fn handle<'a>(
///         &'a self,
///         ctx: &'a mut TurnContext,
///         next: Next<'a, TurnContext>,
///     ) -> BoxFuture<'a, Result<(), BoxError>> {
///         Box::pin(async move {
///             let outcome = next.run(ctx).await;
///             tracing::debug!(?outcome, "turn input finished");
///             Ok(())
///         })
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not middleware for the `{P}` pipeline",
    label = "this middleware cannot be registered here",
    note = "an `async fn` becomes middleware with `#[adk::middleware(pipeline = ...)]` written above it",
    note = "a closure becomes middleware through `adk::pipeline::from_fn(|ctx, next| async move {{ .. }})`"
)]
pub trait Middleware<P: Pipeline>: Send + Sync + 'static {
    /// Runs this middleware: the pre-step, then `next.run(ctx).await`, then the post-step.
    fn handle<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> BoxFuture<'a, Result<(), BoxError>>;

    /// Runs this middleware with its future unboxed: a pipeline walk boxes it once, together
    /// with its own bookkeeping for the middleware, and boxes the error of its result itself.
    /// Making the future must not panic: the walk catches panics in each poll of it, not
    /// around this call. Not a public API: `#[middleware]` overrides it with the fn's own
    /// future (an `async fn`'s, which only stores its arguments), so its futures are boxed
    /// once per walk step rather than twice, and not wrapped in a conversion; the default
    /// calls [`handle`](Middleware::handle), which may panic, on the first poll.
    #[doc(hidden)]
    fn handle_unboxed<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> impl Future<Output: StepOutput> + Send + 'a
    where
        Self: Sized,
    {
        async move { self.handle(ctx, next).await }
    }

    /// The name run-time errors use for this middleware (`E_PIPELINE_SHORT_CIRCUITED`, a
    /// failure). The default is the type's name without its module path; for a `#[middleware]`
    /// fn it is the fn's name.
    fn name(&self) -> &'static str {
        short_type_name(std::any::type_name::<Self>())
    }

    /// Records the session-state writes this middleware is known to make, so a runner without
    /// a session store refuses it when built rather than on its first turn. Not a public API:
    /// `#[middleware]` overrides it with what it found in the fn's body; the default records
    /// nothing (such writes are refused by the turn that makes them).
    #[doc(hidden)]
    fn state_writes(&self, _writes: &mut StateWrites) {}
}

/// `my_crate::auth::Guard<u32>` as `Guard<u32>`: the last path segment before any generics.
pub(crate) fn short_type_name(full: &'static str) -> &'static str {
    let generics = full.find('<').unwrap_or(full.len());
    let start = full[..generics].rfind("::").map_or(0, |cut| cut + 2);
    &full[start..]
}

/// Where a pipeline short-circuited: the middleware that returned without running `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortCircuit {
    /// Its position, counted from zero in registration order (messages count from one).
    pub position: usize,
    /// Its name, see [`Middleware::name`].
    pub name: &'static str,
}

impl fmt::Display for ShortCircuit {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "middleware #{} `{}`",
            self.position + 1,
            self.name
        )
    }
}

// Each marker's `Pipeline` impl (its context, name and scope) is in `context::pipelines`: the
// chain knows no context type, the contexts name the pipelines that walk them.
macro_rules! pipeline_marker {
    ($(#[$doc:meta])* $marker:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $marker;

        impl sealed::Sealed for $marker {}

        impl fmt::Display for $marker {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(<Self as Pipeline>::NAME)
            }
        }
    };
}

pipeline_marker!(
    /// The pipeline run once before the dispatch: load history, retrieve, enforce input policy.
    TurnInput
);
pipeline_marker!(
    /// The pipeline run once after an acknowledged dispatch: filter output, write memories.
    TurnOutput
);
pipeline_marker!(
    /// The pipeline run every iteration before the executor: pack the prompt, apply budgets.
    DispatchInput
);
pipeline_marker!(
    /// The pipeline run every iteration after the executor: inspect what the model produced.
    DispatchOutput
);
pipeline_marker!(
    /// The pipeline run around every tool call a dispatch executes: look at the call, refuse it,
    /// rewrite its arguments, answer in its place, ask for approval, observe the result.
    ToolExecution
);

//! Running a pipeline: the erased middleware stack, `Next`, and failure capture.

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use futures_util::FutureExt;

use super::{
    BoxError, BoxFuture, Downstream, FailureCause, Middleware, MiddlewareFailure, Pipeline,
    PipelineContext,
};

/// A middleware with its pipeline erased: stacks are stored per context type so `Next` does not
/// carry the pipeline in its type, and one `async fn` can serve two pipelines of one scope.
trait Layer<C>: Send + Sync {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut C,
        next: Next<'a, C>,
    ) -> BoxFuture<'a, Result<(), BoxError>>;
}

struct Registered<P, M> {
    middleware: M,
    pipeline: PhantomData<fn() -> P>,
}

impl<P: Pipeline, M: Middleware<P>> Layer<P::Context> for Registered<P, M> {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        self.middleware.handle(ctx, next)
    }
}

/// The middleware registered on one pipeline, in registration order.
///
/// Cloning is cheap: the middleware are shared. Every run starts from the first middleware with
/// fresh bookkeeping, so nothing leaks from one run into the next.
pub struct Stack<P: Pipeline> {
    layers: Vec<Arc<dyn Layer<P::Context>>>,
}

impl<P: Pipeline> Clone for Stack<P> {
    fn clone(&self) -> Self {
        Self {
            layers: self.layers.clone(),
        }
    }
}

impl<P: Pipeline> Default for Stack<P> {
    fn default() -> Self {
        Self { layers: Vec::new() }
    }
}

impl<P: Pipeline> std::fmt::Debug for Stack<P> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Stack")
            .field("pipeline", &P::NAME)
            .field("middleware", &self.layers.len())
            .finish()
    }
}

impl<P: Pipeline> Stack<P> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a middleware; it runs after every middleware pushed before it.
    pub fn push<M: Middleware<P>>(&mut self, middleware: M) {
        self.layers.push(Arc::new(Registered {
            middleware,
            pipeline: PhantomData,
        }));
    }

    /// How many middleware are registered.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// True when no middleware is registered.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Walks the pipeline once over `ctx`.
    pub async fn run(&self, ctx: &mut P::Context) -> PipelineRun {
        let bookkeeping = Bookkeeping {
            pipeline: P::NAME,
            failed: AtomicBool::new(false),
        };
        let first_layer_saw = run_layer(&bookkeeping, &self.layers, 0, ctx).await;
        // A failure anywhere fails the run, even when an upstream middleware swallowed it; an
        // abort explains a short-circuit, so it is not reported as one.
        let outcome = if bookkeeping.failed.load(Ordering::Relaxed) {
            Downstream::Failed
        } else if first_layer_saw == Downstream::ShortCircuited && ctx.is_aborted() {
            Downstream::Aborted
        } else {
            first_layer_saw
        };
        PipelineRun { outcome }
    }
}

/// How one walk of a pipeline ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineRun {
    /// `Failed` when any middleware failed (each failure was reported as it was caught);
    /// `ShortCircuited` when the end was not reached without an abort: the runner reports
    /// that as `E_PIPELINE_SHORT_CIRCUITED`.
    pub outcome: Downstream,
}

struct Bookkeeping {
    pipeline: &'static str,
    failed: AtomicBool,
}

// Downstream encoded for the slot a `Next` writes its result into; 0 means `next` was never run.
const NOT_RUN: u8 = 0;

fn encode(outcome: Downstream) -> u8 {
    match outcome {
        Downstream::Completed => 1,
        Downstream::ShortCircuited => 2,
        Downstream::Failed => 3,
        Downstream::Aborted => 4,
    }
}

fn decode(value: u8) -> Option<Downstream> {
    match value {
        1 => Some(Downstream::Completed),
        2 => Some(Downstream::ShortCircuited),
        3 => Some(Downstream::Failed),
        4 => Some(Downstream::Aborted),
        _ => None,
    }
}

/// The rest of the pipeline, handed to each middleware.
///
/// `run` takes `self`, so the rest of the chain runs at most once: a second call does not
/// compile. Dropping `next` without running it short-circuits the pipeline; the runner reports
/// that as `E_PIPELINE_SHORT_CIRCUITED` unless the turn was aborted, so use `ctx.abort(reason)`
/// for an intentional refusal.
#[must_use = "middleware that never runs `next` short-circuits the pipeline; call `next.run(ctx).await` or abort with `ctx.abort(reason)`"]
pub struct Next<'a, C> {
    bookkeeping: &'a Bookkeeping,
    rest: &'a [Arc<dyn Layer<C>>],
    position: usize,
    slot: &'a AtomicU8,
}

impl<C> std::fmt::Debug for Next<'_, C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Next")
            .field("pipeline", &self.bookkeeping.pipeline)
            .field("position", &self.position)
            .field("remaining", &self.rest.len())
            .finish()
    }
}

impl<C: PipelineContext> Next<'_, C> {
    /// Runs the rest of the pipeline and reports how it ended.
    ///
    /// Errors and panics downstream were already caught and reported; this returns
    /// [`Downstream::Failed`] for them, so the post-step after it always runs.
    pub async fn run(self, ctx: &mut C) -> Downstream {
        let outcome = run_layer(self.bookkeeping, self.rest, self.position, ctx).await;
        self.slot.store(encode(outcome), Ordering::Relaxed);
        outcome
    }

    /// The pipeline this `next` belongs to, e.g. `"turn_input"`.
    pub fn pipeline(&self) -> &'static str {
        self.bookkeeping.pipeline
    }
}

async fn run_layer<C: PipelineContext>(
    bookkeeping: &Bookkeeping,
    layers: &[Arc<dyn Layer<C>>],
    position: usize,
    ctx: &mut C,
) -> Downstream {
    if ctx.is_aborted() {
        return Downstream::Aborted;
    }
    let Some((layer, rest)) = layers.split_first() else {
        return Downstream::Completed;
    };
    let slot = AtomicU8::new(NOT_RUN);
    let next = Next {
        bookkeeping,
        rest,
        position: position + 1,
        slot: &slot,
    };
    // A panicking middleware must not take the runner down: catch it here, at its own level,
    // so upstream post-steps still run. The context may be half-updated; that is reported.
    let result = AssertUnwindSafe(layer.handle(ctx, next))
        .catch_unwind()
        .await;
    let cause = match result {
        Ok(Ok(())) => {
            return match decode(slot.load(Ordering::Relaxed)) {
                Some(outcome) => outcome,
                // Not running `next` after an abort is how an abort stops the chain, not a
                // short-circuit: every upstream post-step sees what the runner reports.
                None if ctx.is_aborted() => Downstream::Aborted,
                None => Downstream::ShortCircuited,
            };
        }
        // Returning the abort error is an abort, not a failure: no error is reported.
        Ok(Err(error)) => match ctx.absorb_abort(error) {
            Ok(()) => return Downstream::Aborted,
            Err(error) => FailureCause::Error(error),
        },
        Err(panic) => FailureCause::Panic(panic_message(panic.as_ref())),
    };
    bookkeeping.failed.store(true, Ordering::Relaxed);
    ctx.report_failure(MiddlewareFailure {
        pipeline: bookkeeping.pipeline,
        position,
        cause,
    });
    Downstream::Failed
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

/// Walks `stack` over `ctx` once; the free-function form of [`Stack::run`].
pub async fn run_pipeline<P: Pipeline>(stack: &Stack<P>, ctx: &mut P::Context) -> PipelineRun {
    stack.run(ctx).await
}

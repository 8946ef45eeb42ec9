//! Running a pipeline: the erased middleware stack, `Next`, and failure capture.

use std::future::Future;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use futures_util::FutureExt;

use super::slot::{InSlot, Slot, SlotMemory, Slots};
use super::{
    Downstream, FailureCause, Middleware, MiddlewareFailure, Pipeline, PipelineContext,
    ShortCircuit,
};

/// A middleware with its pipeline erased: stacks are stored per context type so `Next` does not
/// carry the pipeline in its type, and one `async fn` can serve two pipelines of one scope.
trait Layer<C>: Send + Sync {
    fn handle<'a>(&'a self, ctx: &'a mut C, next: Next<'a, C>, slot: Slot<'a>) -> InSlot<'a>;

    fn name(&self) -> &'static str;
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
        slot: Slot<'a>,
    ) -> InSlot<'a> {
        self.middleware.handle_in_slot(ctx, next, slot)
    }

    fn name(&self) -> &'static str {
        self.middleware.name()
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
        // A slot per middleware for its future, reused from the last walk on this thread.
        let mut slots = Slots::new(self.layers.len());
        let (slots, live) = slots.split();
        let bookkeeping = Bookkeeping {
            pipeline: P::NAME,
            layers: &self.layers,
            live,
            failed: AtomicBool::new(false),
            last_completed: AtomicU64::new(NOT_RUN),
            short_circuited_at: AtomicUsize::new(NONE),
        };
        let first_layer_saw = run_layer(&bookkeeping, slots, ctx).await;
        // A failure anywhere fails the run, even when an upstream middleware swallowed it; an
        // abort explains a short-circuit, so it is not reported as one.
        let outcome = if bookkeeping.failed.load(Ordering::Relaxed) {
            Downstream::Failed
        } else if first_layer_saw == Downstream::ShortCircuited && ctx.is_aborted() {
            Downstream::Aborted
        } else {
            first_layer_saw
        };
        let short_circuited_by = match (
            outcome,
            bookkeeping.short_circuited_at.load(Ordering::Relaxed),
        ) {
            (Downstream::ShortCircuited, position) if position != NONE => {
                self.layers.get(position).map(|layer| ShortCircuit {
                    position,
                    name: layer.name(),
                })
            }
            _ => None,
        };
        PipelineRun {
            outcome,
            short_circuited_by,
        }
    }
}

/// How one walk of a pipeline ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineRun {
    /// `Failed` when any middleware failed (each failure was reported as it was caught);
    /// `ShortCircuited` when the end was not reached without an abort: the runner reports
    /// that as `E_PIPELINE_SHORT_CIRCUITED`.
    pub outcome: Downstream,
    /// With `ShortCircuited`, the middleware that returned without running `next`.
    pub short_circuited_by: Option<ShortCircuit>,
}

/// The state of one walk, shared by every `Next` of it.
struct Bookkeeping<'walk, C> {
    pipeline: &'static str,
    layers: &'walk [Arc<dyn Layer<C>>],
    /// How many middleware futures live in the walk's slots.
    live: &'walk AtomicUsize,
    failed: AtomicBool,
    /// The last `Next::run` to complete, as `position << 8 | outcome`. Runs are strictly nested
    /// (a middleware's `next` completes before that middleware returns, and only one `next` of
    /// a walk is alive at a time), so after middleware `k` returns, this holds `k + 1`'s tag
    /// exactly when `k` ran its `next` to completion. One slot for the whole walk keeps `Next`
    /// small, and so every middleware's future.
    last_completed: AtomicU64,
    /// The first (innermost) middleware that returned without running `next`, or `NONE`.
    short_circuited_at: AtomicUsize,
}

const NONE: usize = usize::MAX;

const NOT_RUN: u64 = 0;

fn tag(position: usize, outcome: Downstream) -> u64 {
    let code = match outcome {
        Downstream::Completed => 1,
        Downstream::ShortCircuited => 2,
        Downstream::Failed => 3,
        Downstream::Aborted => 4,
    };
    ((position as u64) << 8) | code
}

fn untag(value: u64, position: usize) -> Option<Downstream> {
    if value >> 8 != position as u64 {
        return None;
    }
    match value & 0xff {
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
    bookkeeping: &'a Bookkeeping<'a, C>,
    /// The slots of the middleware `run` starts with and of those after it; how many are left
    /// gives that middleware's position.
    rest: &'a mut [MaybeUninit<SlotMemory>],
}

impl<C> std::fmt::Debug for Next<'_, C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Next")
            .field("pipeline", &self.bookkeeping.pipeline)
            .field(
                "position",
                &(self.bookkeeping.layers.len() - self.rest.len()),
            )
            .field("remaining", &self.rest.len())
            .finish()
    }
}

impl<'a, C: PipelineContext> Next<'a, C> {
    /// Runs the rest of the pipeline and reports how it ended.
    ///
    /// Errors and panics downstream were already caught and reported; this returns
    /// [`Downstream::Failed`] for them, so the post-step after it always runs.
    pub fn run<'c>(
        self,
        ctx: &'c mut C,
    ) -> impl Future<Output = Downstream> + Send + use<'a, 'c, C> {
        // The rest of the walk itself, not a future around it: every middleware's boxed future
        // holds this one, so each layer of wrapping would make every box bigger.
        run_layer(self.bookkeeping, self.rest, ctx)
    }

    /// The pipeline this `next` belongs to, e.g. `"turn_input"`.
    pub fn pipeline(&self) -> &'static str {
        self.bookkeeping.pipeline
    }
}

async fn run_layer<C: PipelineContext>(
    bookkeeping: &Bookkeeping<'_, C>,
    slots: &mut [MaybeUninit<SlotMemory>],
    ctx: &mut C,
) -> Downstream {
    let position = bookkeeping.layers.len() - slots.len();
    let outcome = 'walk: {
        if ctx.is_aborted() {
            break 'walk Downstream::Aborted;
        }
        let (Some(layer), Some((slot, rest))) =
            (bookkeeping.layers.get(position), slots.split_first_mut())
        else {
            break 'walk Downstream::Completed;
        };
        let next = Next { bookkeeping, rest };
        let future = layer.handle(ctx, next, Slot::new(slot, bookkeeping.live));
        // A panicking middleware must not take the runner down: catch it here, at its own
        // level, so upstream post-steps still run. The context may be half-updated.
        let result = AssertUnwindSafe(future).catch_unwind().await;
        let cause = match result {
            Ok(Ok(())) => {
                let completed = bookkeeping.last_completed.load(Ordering::Relaxed);
                break 'walk match untag(completed, position + 1) {
                    Some(outcome) => outcome,
                    // The middleware did not run `next`: an abort explains that, nothing else.
                    None if ctx.is_aborted() => Downstream::Aborted,
                    None => {
                        // The innermost short-circuit is the one to name: upstream middleware
                        // only pass its outcome on.
                        let _ = bookkeeping.short_circuited_at.compare_exchange(
                            NONE,
                            position,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        );
                        Downstream::ShortCircuited
                    }
                };
            }
            // Returning the abort error is an abort, not a failure: no error is reported.
            Ok(Err(error)) => match ctx.absorb_abort(error) {
                Ok(()) => break 'walk Downstream::Aborted,
                Err(error) => FailureCause::Error(error),
            },
            Err(panic) => FailureCause::Panic(panic_message(panic.as_ref())),
        };
        bookkeeping.failed.store(true, Ordering::Relaxed);
        ctx.report_failure(MiddlewareFailure {
            pipeline: bookkeeping.pipeline,
            position,
            name: layer.name(),
            cause,
        });
        Downstream::Failed
    };
    // Tells the middleware before this one (whose `next` this walk is) how its `next` ended.
    bookkeeping
        .last_completed
        .store(tag(position, outcome), Ordering::Relaxed);
    outcome
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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test fails loudly on a broken set-up")]
mod tests {
    use super::*;
    use crate::context::{RawTurnContext, TurnContext};
    use crate::pipeline::{BoxError, TurnInput};

    #[crate::middleware(pipeline = turn_input)]
    async fn pass(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
        let _ = next.run(ctx).await;
        Ok(())
    }

    /// A pass-through `#[middleware]` future is written into its slot, not boxed: a walk
    /// allocates once, whatever the number of middleware. Larger futures still work (boxed).
    #[test]
    fn a_pass_through_middleware_future_fits_its_slot() {
        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(pass);
        let mut ctx = TurnContext::new(
            RawTurnContext::new("c", "p"),
            crate::storage::SharedStorage::new(crate::storage::NoopStorage::new()),
            crate::primitives::ToolRegistry::new(),
        )
        .unwrap();
        let mut slots = Slots::new(1);
        let (slots, live) = slots.split();
        let bookkeeping = Bookkeeping {
            pipeline: "turn_input",
            layers: &stack.layers,
            live,
            failed: AtomicBool::new(false),
            last_completed: AtomicU64::new(NOT_RUN),
            short_circuited_at: AtomicUsize::new(NONE),
        };
        let next = Next {
            bookkeeping: &bookkeeping,
            rest: &mut [],
        };
        let future = pass::pass(&mut ctx, next);
        let size = std::mem::size_of_val(&future);
        assert!(
            size + std::mem::size_of::<usize>() <= super::super::slot::SLOT_BYTES,
            "a pass-through middleware future takes {size} bytes"
        );
        drop(future);
        assert_eq!(slots.len(), 1);
        assert_eq!(std::mem::size_of::<Next<'_, TurnContext>>(), 24);
    }

    #[crate::middleware(pipeline = turn_input)]
    async fn waits_forever(
        ctx: &mut TurnContext,
        next: Next<'_, TurnContext>,
    ) -> Result<(), BoxError> {
        std::future::pending::<()>().await;
        let _ = next.run(ctx).await;
        Ok(())
    }

    fn bare_turn() -> TurnContext {
        TurnContext::new(
            RawTurnContext::new("c", "p"),
            crate::storage::SharedStorage::new(crate::storage::NoopStorage::new()),
            crate::primitives::ToolRegistry::new(),
        )
        .unwrap()
    }

    /// A middleware that polls `next.run(ctx)` and then forgets it leaves a pinned future in
    /// the next middleware's slot: the walk must not free or reuse that memory. It leaks those
    /// slots, reports the short-circuit, and later walks run as usual.
    #[test]
    fn a_forgotten_next_future_leaks_its_slots_and_later_walks_still_run() {
        use std::future::Future;

        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(crate::pipeline::from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let mut rest = Box::pin(next.run(ctx));
                let mut context = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(rest.as_mut().poll(&mut context).is_pending());
                std::mem::forget(rest);
                Ok::<(), BoxError>(())
            })
        }));
        stack.push(waits_forever);
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::ShortCircuited);
        assert_eq!(run.short_circuited_by.map(|by| by.position), Some(0));

        let mut passing: Stack<TurnInput> = Stack::new();
        for _ in 0..3 {
            passing.push(pass);
        }
        let mut ctx = bare_turn();
        let run = passing.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::Completed);
    }
}

//! Running a pipeline: the erased middleware stack, `Next`, and failure capture.

use std::future::Future;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::Poll;

use super::slot::{InSlot, Progress, Slot, SlotMemory, Slots, Started};
use super::{
    Downstream, FailureCause, Middleware, MiddlewareFailure, Pipeline, PipelineContext,
    ShortCircuit,
};

/// A middleware with its pipeline erased: stacks are stored per context type so `Next` does not
/// carry the pipeline in its type, and one `async fn` can serve two pipelines of one scope.
trait Layer<C>: Send + Sync {
    fn handle<'a>(&'a self, ctx: &'a mut C, next: Next<'a, C>, slot: Slot<'a, '_>) -> Started<'a>;

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
        slot: Slot<'a, '_>,
    ) -> Started<'a> {
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
        let first_layer_saw = RunLayer::new(&bookkeeping, slots, &mut *ctx).await;
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
    ((position as u64) << 8) | outcome as u64
}

fn untag(value: u64, position: usize) -> Option<Downstream> {
    if value >> 8 != position as u64 {
        return None;
    }
    // The codes are `Downstream`'s discriminants, so this compiles to a range check.
    match value as u8 {
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
        RunLayer::new(self.bookkeeping, self.rest, ctx)
    }

    /// The pipeline this `next` belongs to, e.g. `"turn_input"`.
    pub fn pipeline(&self) -> &'static str {
        self.bookkeeping.pipeline
    }
}

/// The rest of a walk from one middleware on: what `next.run(ctx)` returns.
///
/// Written by hand rather than as an `async fn`: it runs once per middleware per walk, and an
/// `async fn` moved its arguments and locals through its own state on every call (about half of
/// a middleware's cost). On its first poll it checks for an abort, starts the middleware (which
/// writes its future into its slot and polls it once there), and, when that finished, settles
/// the outcome at once; a middleware that waits is polled through its slot.
///
/// A panicking middleware must not take the runner down: each poll of a middleware is a panic
/// boundary at its own level, so upstream post-steps still run. The context may be
/// half-updated.
struct RunLayer<'a, 'c, C> {
    bookkeeping: &'a Bookkeeping<'a, C>,
    /// The slots of this middleware and those after it; taken by the first poll.
    slots: Option<&'a mut [MaybeUninit<SlotMemory>]>,
    /// The context, held as a pointer because it is lent twice: to the middleware for as long as
    /// its future lives, then back to this walk to settle the outcome. `PhantomData` keeps the
    /// caller's `&'c mut C` borrowed for as long as this future lives.
    ctx: NonNull<C>,
    borrowed: PhantomData<&'c mut C>,
    /// The middleware's future while it waits, with its position.
    waiting: Option<(InSlot<'a>, usize)>,
}

// SAFETY: `RunLayer` stands for a `&'a mut C` (sent only when `C: Send`) and shared references
// to the walk's bookkeeping, whose fields are atomics and `Send + Sync` layers; its `InSlot` is
// `Send`.
#[allow(unsafe_code)]
unsafe impl<C: Send> Send for RunLayer<'_, '_, C> {}

impl<'a, 'c, C: PipelineContext> RunLayer<'a, 'c, C> {
    fn new(
        bookkeeping: &'a Bookkeeping<'a, C>,
        slots: &'a mut [MaybeUninit<SlotMemory>],
        ctx: &'c mut C,
    ) -> Self {
        Self {
            bookkeeping,
            slots: Some(slots),
            ctx: NonNull::from(ctx),
            borrowed: PhantomData,
            waiting: None,
        }
    }

    /// The context, while no middleware future holds it.
    #[allow(unsafe_code)]
    fn context(&mut self) -> &mut C {
        // SAFETY: `ctx` came from a `&'a mut C` that `borrowed` keeps borrowed, and it is lent to
        // a middleware only in `start`, for the life of that middleware's future: once `start`
        // returned `Finished`, or the `InSlot` in `waiting` was dropped, nothing else uses it.
        unsafe { self.ctx.as_mut() }
    }

    /// The first poll: abort check, then the middleware at this position, polled once.
    #[allow(unsafe_code)]
    fn start(
        &mut self,
        slots: &'a mut [MaybeUninit<SlotMemory>],
        waker: &std::task::Waker,
    ) -> Poll<Downstream> {
        let bookkeeping = self.bookkeeping;
        let position = bookkeeping.layers.len() - slots.len();
        if self.context().is_aborted() {
            return Poll::Ready(self.settle(position, Downstream::Aborted));
        }
        let (Some(layer), Some((slot, rest))) =
            (bookkeeping.layers.get(position), slots.split_first_mut())
        else {
            return Poll::Ready(self.settle(position, Downstream::Completed));
        };
        // SAFETY: lent to the middleware's future, which is either dropped before `handle`
        // returns (`Finished`, or a panic) or kept in `waiting` and dropped before the context is
        // used again (see `context`), and at the latest when this `RunLayer` is, within `'c`.
        // (Its type says `'a`, the walk's lifetime its slot and `next` are borrowed for; the
        // future never outlives this `RunLayer`, so the shorter `'c` is what it really gets.)
        let ctx: &'a mut C = unsafe { &mut *self.ctx.as_ptr() };
        let next = Next { bookkeeping, rest };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            layer.handle(ctx, next, Slot::new(slot, bookkeeping.live, waker))
        }));
        let result = match started {
            Ok(Started(Progress::Finished(output))) => Ok(output),
            Ok(Started(Progress::Waiting(waiting))) => {
                self.waiting = Some((waiting, position));
                return Poll::Pending;
            }
            Err(panic) => Err(panic),
        };
        let outcome = self.finished(position, result);
        Poll::Ready(self.settle(position, outcome))
    }

    /// How the walk from this middleware on ended, once the middleware returned or panicked.
    #[inline(always)]
    fn finished(
        &mut self,
        position: usize,
        result: std::thread::Result<Result<(), super::BoxError>>,
    ) -> Downstream {
        // The common case inline: the middleware returned `Ok` after running its `next`.
        if let Ok(Ok(())) = &result {
            let completed = self.bookkeeping.last_completed.load(Ordering::Relaxed);
            if let Some(outcome) = untag(completed, position + 1) {
                // `Ok(Ok(()))` owns nothing: forgetting it spares a call of its drop glue.
                std::mem::forget(result);
                return outcome;
            }
        }
        self.finished_otherwise(position, result)
    }

    /// [`finished`](Self::finished) for a middleware that did not run its `next`, failed,
    /// aborted or panicked.
    #[inline(never)]
    fn finished_otherwise(
        &mut self,
        position: usize,
        result: std::thread::Result<Result<(), super::BoxError>>,
    ) -> Downstream {
        let bookkeeping = self.bookkeeping;
        let ctx = self.context();
        let cause = match result {
            Ok(Ok(())) => {
                return match ctx.is_aborted() {
                    // The middleware did not run `next`: an abort explains that, nothing else.
                    true => Downstream::Aborted,
                    false => {
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
                Ok(()) => return Downstream::Aborted,
                Err(error) => FailureCause::Error(error),
            },
            Err(panic) => FailureCause::Panic(panic_message(panic.as_ref())),
        };
        bookkeeping.failed.store(true, Ordering::Relaxed);
        ctx.report_failure(MiddlewareFailure {
            pipeline: bookkeeping.pipeline,
            position,
            // Always there: `position` is the middleware that just ran.
            name: bookkeeping
                .layers
                .get(position)
                .map_or("middleware", |layer| layer.name()),
            cause,
        });
        Downstream::Failed
    }

    /// Tells the middleware before this one (whose `next` this is) how its `next` ended.
    fn settle(&self, position: usize, outcome: Downstream) -> Downstream {
        self.bookkeeping
            .last_completed
            .store(tag(position, outcome), Ordering::Relaxed);
        outcome
    }
}

// Not for what it does (the fields drop themselves) but for what it says to the borrow checker:
// with a `Drop` impl, dropping a `RunLayer` counts as a use of `'c`, so the caller's context
// borrow must still be live when the middleware future in `waiting` is dropped (its destructor
// may touch the context). Without it that would rest on `Next::run` returning an opaque type,
// which happens to be treated the same way.
impl<C> Drop for RunLayer<'_, '_, C> {
    fn drop(&mut self) {}
}

impl<C: PipelineContext> Future for RunLayer<'_, '_, C> {
    type Output = Downstream;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Downstream> {
        // Nothing in `RunLayer` is pinned: the middleware's future lives in its slot.
        let this = self.get_mut();
        if let Some((waiting, position)) = &mut this.waiting {
            let position = *position;
            let polled = std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(waiting).poll(cx)));
            let result = match polled {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(output)) => Ok(output),
                Err(panic) => Err(panic),
            };
            // The middleware's future is dropped here, which gives the context back.
            this.waiting = None;
            let outcome = this.finished(position, result);
            return Poll::Ready(this.settle(position, outcome));
        }
        match this.slots.take() {
            Some(slots) => this.start(slots, cx.waker()),
            // Polled again after it finished: nothing is left to run.
            None => Poll::Pending,
        }
    }
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
    use futures_util::FutureExt;

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

    #[crate::middleware(pipeline = turn_input)]
    async fn waits_around_next(
        ctx: &mut TurnContext,
        next: Next<'_, TurnContext>,
    ) -> Result<(), BoxError> {
        tokio::task::yield_now().await;
        let _ = next.run(ctx).await;
        tokio::task::yield_now().await;
        Ok(())
    }

    #[crate::middleware(pipeline = turn_input)]
    async fn waits_then_panics(
        ctx: &mut TurnContext,
        next: Next<'_, TurnContext>,
    ) -> Result<(), BoxError> {
        tokio::task::yield_now().await;
        if !ctx.is_aborted() {
            panic!("after waiting");
        }
        let _ = next.run(ctx).await;
        Ok(())
    }

    /// A middleware that records what its `next` reported, for the tests below.
    fn recorder(
        seen: Arc<std::sync::Mutex<Vec<Downstream>>>,
    ) -> impl crate::pipeline::Middleware<TurnInput> {
        crate::pipeline::from_fn(move |ctx: &mut TurnContext, next| {
            let seen = Arc::clone(&seen);
            Box::pin(async move {
                let downstream = next.run(ctx).await;
                seen.lock().unwrap().push(downstream);
                Ok::<(), BoxError>(())
            })
        })
    }

    /// A middleware whose first poll is pending is kept in its slot and polled there until it
    /// finishes: the walk completes, and the middleware before it sees `Completed`.
    #[tokio::test]
    async fn a_middleware_that_waits_is_polled_in_its_slot_until_it_finishes() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(recorder(Arc::clone(&seen)));
        stack.push(waits_around_next);
        stack.push(waits_around_next);
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).await;
        assert_eq!(run.outcome, Downstream::Completed);
        assert_eq!(*seen.lock().unwrap(), [Downstream::Completed]);
    }

    /// A boxed (`from_fn`) middleware that waits is held in its slot as a box and finishes too.
    #[tokio::test]
    async fn a_boxed_middleware_that_waits_finishes_the_walk() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(recorder(Arc::clone(&seen)));
        stack.push(crate::pipeline::from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                tokio::task::yield_now().await;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }));
        stack.push(pass);
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).await;
        assert_eq!(run.outcome, Downstream::Completed);
        assert_eq!(*seen.lock().unwrap(), [Downstream::Completed]);
    }

    /// A panic on a later poll (after the middleware waited) is caught at that middleware's
    /// level like one on its first poll: the walk fails, and the post-step before it still runs.
    #[tokio::test]
    async fn a_panic_after_waiting_fails_the_walk_and_upstream_post_steps_still_run() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(recorder(Arc::clone(&seen)));
        stack.push(waits_then_panics);
        stack.push(pass);
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).await;
        assert_eq!(run.outcome, Downstream::Failed);
        assert_eq!(*seen.lock().unwrap(), [Downstream::Failed]);

        // The walk's slots were given back: the next walk on this thread runs as usual.
        let mut passing: Stack<TurnInput> = Stack::new();
        passing.push(waits_around_next);
        passing.push(pass);
        let mut ctx = bare_turn();
        assert_eq!(passing.run(&mut ctx).await.outcome, Downstream::Completed);
    }

    /// A middleware that polls `next.run(ctx)` while the rest waits, then drops it: the waiting
    /// middleware's future is dropped in its slot (not leaked), the walk reports the
    /// short-circuit, and the slots serve the next walk.
    #[test]
    fn a_next_future_dropped_while_the_rest_waits_is_a_short_circuit_and_frees_its_slots() {
        use std::future::Future;

        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(crate::pipeline::from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let mut rest = Box::pin(next.run(ctx));
                let mut context = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(rest.as_mut().poll(&mut context).is_pending());
                drop(rest);
                Ok::<(), BoxError>(())
            })
        }));
        stack.push(waits_forever);
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::ShortCircuited);
        assert_eq!(run.short_circuited_by.map(|by| by.position), Some(0));

        let mut passing: Stack<TurnInput> = Stack::new();
        passing.push(pass);
        passing.push(pass);
        let mut ctx = bare_turn();
        let run = passing.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::Completed);
    }
}

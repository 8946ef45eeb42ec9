//! Running a pipeline: the erased middleware stack, `Next`, and failure capture.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::Poll;

use super::{
    BoxError, BoxFuture, Downstream, FailureCause, Middleware, MiddlewareFailure, Pipeline,
    PipelineContext, ShortCircuit,
};
use crate::__private::middleware::MiddlewareResult;

/// A middleware with its pipeline erased: stacks are stored per context type so `Next` does not
/// carry the pipeline in its type, and one `async fn` can serve two pipelines of one scope.
trait Layer<C>: Send + Sync {
    /// Starts the walk from this middleware on (it is at `position`): boxes the middleware's
    /// step (its future and what settles its outcome) and polls it once, in one `dyn` call.
    /// A step that finished on that poll is freed at once and its outcome returned; one that
    /// waits is left in `waiting` (a finished `RunNext`) to be polled again. The outcome comes
    /// back as one byte, in a register.
    fn start<'a>(
        &'a self,
        bookkeeping: &'a Bookkeeping<'a, C>,
        position: usize,
        ctx: &'a mut C,
        cx: &mut std::task::Context<'_>,
        waiting: &mut RunNext<'a, C>,
    ) -> Poll<Downstream>;

    fn name(&self) -> &'static str;

    fn state_writes(&self, writes: &mut super::StateWrites);

    /// Another handle on this middleware, for a cloned stack.
    fn clone_layer(&self) -> Box<dyn Layer<C>>;
}

/// A middleware on its pipeline. The middleware is shared (cloning a stack clones the handle);
/// the stack holds each layer in a `Box`, whose pointer is the layer's own address, where an
/// `Arc<dyn Layer>` would have the walk work out the offset of its value from the vtable on
/// every call.
struct Registered<P, M> {
    middleware: Arc<M>,
    pipeline: PhantomData<fn() -> P>,
}

impl<P: Pipeline, M: Middleware<P>> Layer<P::Context> for Registered<P, M> {
    fn start<'a>(
        &'a self,
        bookkeeping: &'a Bookkeeping<'a, P::Context>,
        position: usize,
        ctx: &'a mut P::Context,
        cx: &mut std::task::Context<'_>,
        waiting: &mut RunNext<'a, P::Context>,
    ) -> Poll<Downstream> {
        // The context is lent to the middleware by a reborrow that ends when its future is
        // dropped, and used again afterwards to settle the outcome: the borrow checker sees
        // both, no pointer is kept. Each poll of the middleware's future is a panic boundary
        // at its own level ([`Caught`]), so upstream post-steps still run (the context may be
        // half-updated). Making the future does not panic (see `handle_unboxed`): a
        // hand-written `handle`, which may, is called on the future's first poll.
        let mut step = Box::pin(async move {
            let next = Next {
                bookkeeping,
                position: position + 1,
            };
            let caught = Caught {
                future: self.middleware.handle_unboxed(&mut *ctx, next),
            }
            .await;
            match caught {
                Ok(()) => finished(bookkeeping, ctx, position),
                Err(failure) => failed(bookkeeping, ctx, position, failure),
            }
        });
        // Polled with its type known: most middleware finish on their first poll, and then
        // the step is never called through a `dyn` pointer.
        let poll = step.as_mut().poll(cx);
        if poll.is_pending() {
            // `waiting` is a finished `Start`, which owns nothing: nothing to drop.
            std::mem::forget(std::mem::replace(waiting, RunNext::Step(Some(step))));
        }
        poll
    }

    fn name(&self) -> &'static str {
        self.middleware.name()
    }

    fn state_writes(&self, writes: &mut super::StateWrites) {
        self.middleware.state_writes(writes);
    }

    fn clone_layer(&self) -> Box<dyn Layer<P::Context>> {
        Box::new(Registered::<P, M> {
            middleware: Arc::clone(&self.middleware),
            pipeline: PhantomData,
        })
    }
}

/// What a middleware's unboxed future returns (see `Middleware::handle_unboxed`): a
/// `#[middleware]` fn's own result, whose error the walk boxes. Not a public API.
pub trait StepOutput {
    /// The result with its error boxed.
    fn into_output(self) -> Output;
}

impl<R: MiddlewareResult> StepOutput for R {
    #[inline]
    fn into_output(self) -> Output {
        self.into_result()
    }
}

pin_project_lite::pin_project! {
    /// A middleware's future with every poll inside a panic boundary, which reports a panic
    /// as a [`Failure`] with its payload, and an error the middleware returned as one too.
    struct Caught<F> {
        #[pin]
        future: F,
    }
}

/// Why a middleware did not return `Ok`: its error, or the payload of its panic.
enum Failure {
    Error(BoxError),
    Panic(Box<dyn std::any::Any + Send>),
}

impl<F> Future for Caught<F>
where
    F: Future<Output: StepOutput>,
{
    /// `Ok` is a null pointer, so the common outcome comes back in a register; a failure,
    /// rare, is boxed.
    type Output = Result<(), Box<Failure>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(result)) => Poll::Ready(match result.into_output() {
                Ok(()) => Ok(()),
                Err(error) => Err(Box::new(Failure::Error(error))),
            }),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(Box::new(Failure::Panic(panic)))),
        }
    }
}

/// The middleware registered on one pipeline, in registration order.
///
/// Cloning shares the middleware (one small box a layer for the handle). Every run starts from
/// the first middleware with fresh bookkeeping, so nothing leaks from one run into the next.
pub struct Stack<P: Pipeline> {
    layers: Vec<Box<dyn Layer<P::Context>>>,
}

impl<P: Pipeline> Clone for Stack<P> {
    fn clone(&self) -> Self {
        Self {
            layers: self
                .layers
                .iter()
                .map(|layer| layer.clone_layer())
                .collect(),
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
        self.layers.push(Box::new(Registered {
            middleware: Arc::new(middleware),
            pipeline: PhantomData,
        }));
    }

    /// The session-state writes each middleware records (see [`Middleware::state_writes`]), as
    /// `(position, name, write)` in registration order.
    pub(crate) fn state_writes(&self) -> Vec<(usize, &'static str, super::StateWrite)> {
        let mut found = Vec::new();
        for (position, layer) in self.layers.iter().enumerate() {
            let mut writes = super::StateWrites::default();
            layer.state_writes(&mut writes);
            found.extend(
                writes
                    .into_vec()
                    .into_iter()
                    .map(|write| (position, layer.name(), write)),
            );
        }
        found
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
            layers: &self.layers,
            failed: AtomicBool::new(false),
            last_completed: AtomicU64::new(NOT_RUN),
            short_circuited_at: AtomicUsize::new(NONE),
        };
        let first_layer_saw = Next {
            bookkeeping: &bookkeeping,
            position: 0,
        }
        .run(&mut *ctx)
        .await;
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

/// What every middleware's future returns.
type Output = Result<(), BoxError>;

/// The state of one walk, shared by every `Next` of it.
struct Bookkeeping<'walk, C> {
    pipeline: &'static str,
    layers: &'walk [Box<dyn Layer<C>>],
    failed: AtomicBool,
    /// The last `Next::run` to complete, as `position << 3 | outcome` ([`tag`]). Runs are
    /// strictly nested (a middleware's `next` completes before that middleware returns, and only
    /// one `next` of a walk is alive at a time), so after middleware `k` returns, this holds
    /// `k + 1`'s tag exactly when `k` ran its `next` to completion. One word for the whole walk
    /// keeps `Next` small, and so every middleware's future.
    last_completed: AtomicU64,
    /// The first (innermost) middleware that returned without running `next`, or `NONE`.
    short_circuited_at: AtomicUsize,
}

const NONE: usize = usize::MAX;

const NOT_RUN: u64 = 0;

/// `position * 8 + outcome`: the outcome codes (1 to 4) fit in three bits, and a tag of a known
/// outcome is then one `lea`.
fn tag(position: usize, outcome: Downstream) -> u64 {
    ((position as u64) << 3) | outcome as u64
}

fn untag(value: u64, position: usize) -> Option<Downstream> {
    if value >> 3 != position as u64 {
        return None;
    }
    // The codes are `Downstream`'s discriminants, so this compiles to a range check.
    match value & 7 {
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
    /// The middleware `run` starts with.
    position: usize,
}

impl<C> std::fmt::Debug for Next<'_, C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Next")
            .field("pipeline", &self.bookkeeping.pipeline)
            .field("position", &self.position)
            .field(
                "remaining",
                &self.bookkeeping.layers.len().saturating_sub(self.position),
            )
            .finish()
    }
}

impl<'a, C: PipelineContext> Next<'a, C> {
    /// Runs the rest of the pipeline and reports how it ended.
    ///
    /// Errors and panics downstream were already caught and reported; this returns
    /// [`Downstream::Failed`] for them, so the post-step after it always runs.
    ///
    /// `ctx` is borrowed for as long as `next`: a `Next<'a, C>` becomes a `Next` of any shorter
    /// lifetime, so `next.run(ctx)` takes a reborrow of the middleware's context as it is.
    pub fn run(self, ctx: &'a mut C) -> impl Future<Output = Downstream> + Send + use<'a, C> {
        RunNext::Start {
            next: self,
            ctx: Some(ctx),
        }
    }

    /// The pipeline this `next` belongs to, e.g. `"turn_input"`.
    pub fn pipeline(&self) -> &'static str {
        self.bookkeeping.pipeline
    }
}

/// The rest of a walk from one middleware on: what `next.run(ctx)` returns.
///
/// On its first poll it checks for an abort and for the end of the pipeline, which settle at
/// once, with nothing allocated; otherwise it starts the middleware's step (one box, see
/// [`Layer::start`]) and polls it until it finishes. The box is `Unpin`, so this is polled
/// without pin projection.
enum RunNext<'a, C> {
    /// Not polled yet while `ctx` is there; finished on its first poll once it was taken.
    Start {
        next: Next<'a, C>,
        ctx: Option<&'a mut C>,
    },
    /// A step that waited; `None` once it finished.
    Step(Option<BoxFuture<'a, Downstream>>),
}

// Two variants whose "finished" is an empty `Option` keep `RunNext` three words (the step's box
// fits beside the bookkeeping pointer, whose niche tells the variants apart), and with it the
// future of every middleware that awaits `next.run(ctx)`, and every step's box.
const _: () = assert!(std::mem::size_of::<RunNext<'static, ()>>() == 24);

impl<C: PipelineContext> Future for RunNext<'_, C> {
    type Output = Downstream;

    /// Inlined into the middleware's future that awaits it: the first poll (most are the only
    /// one) is a check and one `dyn` call; later polls are out of line.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Downstream> {
        let this = self.get_mut();
        let Self::Start { next, ctx } = this else {
            return this.poll_started(cx);
        };
        let Some(ctx) = ctx.take() else {
            // Polled again after it finished: nothing is left to run.
            return Poll::Pending;
        };
        let (bookkeeping, position) = (next.bookkeeping, next.position);
        if ctx.is_aborted() {
            return Poll::Ready(settle(bookkeeping, position, Downstream::Aborted));
        }
        let Some(layer) = bookkeeping.layers.get(position) else {
            return Poll::Ready(settle(bookkeeping, position, Downstream::Completed));
        };
        layer.start(bookkeeping, position, ctx, cx, this)
    }
}

impl<C> RunNext<'_, C> {
    /// A poll after the first: of a step that waited, or after the end.
    #[inline(never)]
    fn poll_started(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Downstream> {
        let Self::Step(Some(step)) = self else {
            // Polled again after it finished: nothing is left to run.
            return Poll::Pending;
        };
        let poll = step.as_mut().poll(cx);
        if poll.is_ready() {
            *self = Self::Step(None);
        }
        poll
    }
}

/// How the walk from the middleware at `position` on ended, once the middleware returned `Ok`;
/// recorded for the middleware before it.
#[inline(always)]
fn finished<C: PipelineContext>(
    bookkeeping: &Bookkeeping<'_, C>,
    ctx: &mut C,
    position: usize,
) -> Downstream {
    // The common case inline, one compare: the middleware ran its `next`, and the walk after
    // it completed.
    if bookkeeping.last_completed.load(Ordering::Relaxed)
        == tag(position + 1, Downstream::Completed)
    {
        return settle(bookkeeping, position, Downstream::Completed);
    }
    finished_otherwise(bookkeeping, ctx, position)
}

/// [`finished`] when the walk after the middleware did not complete, or the middleware returned
/// without running its `next` to the end.
#[cold]
#[inline(never)]
fn finished_otherwise<C: PipelineContext>(
    bookkeeping: &Bookkeeping<'_, C>,
    ctx: &mut C,
    position: usize,
) -> Downstream {
    let completed = bookkeeping.last_completed.load(Ordering::Relaxed);
    let outcome = match untag(completed, position + 1) {
        Some(outcome) => outcome,
        // The middleware did not run `next`: an abort explains that, nothing else.
        None if ctx.is_aborted() => Downstream::Aborted,
        None => {
            // The innermost short-circuit is the one to name: upstream middleware only pass
            // its outcome on.
            let _ = bookkeeping.short_circuited_at.compare_exchange(
                NONE,
                position,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            Downstream::ShortCircuited
        }
    };
    settle(bookkeeping, position, outcome)
}

/// How the walk from the middleware at `position` on ended, once the middleware returned an
/// error or panicked: reported here, at its own level, before the post-steps upstream resume.
#[cold]
#[inline(never)]
#[allow(
    clippy::boxed_local,
    reason = "the step hands the box on as it came: unboxing there cost its hot path registers"
)]
fn failed<C: PipelineContext>(
    bookkeeping: &Bookkeeping<'_, C>,
    ctx: &mut C,
    position: usize,
    failure: Box<Failure>,
) -> Downstream {
    let cause = match *failure {
        // Returning the abort error is an abort, not a failure: no error is reported.
        Failure::Error(error) => match ctx.absorb_abort(error) {
            Ok(()) => return settle(bookkeeping, position, Downstream::Aborted),
            Err(error) => FailureCause::Error(error),
        },
        Failure::Panic(panic) => FailureCause::Panic(panic_message(panic.as_ref())),
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
    settle(bookkeeping, position, Downstream::Failed)
}

/// Tells the middleware before this one (whose `next` this is) how its `next` ended.
fn settle<C>(bookkeeping: &Bookkeeping<'_, C>, position: usize, outcome: Downstream) -> Downstream {
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
    use futures_util::FutureExt;

    #[crate::middleware(pipeline = turn_input)]
    async fn pass(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
        let _ = next.run(ctx).await;
        Ok(())
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

    /// A middleware that polls `next.run(ctx)` and then forgets it (the rest of the walk still
    /// waiting in it) short-circuits its walk, which reports it; later walks run as usual.
    #[test]
    fn a_forgotten_next_future_is_a_short_circuit_and_later_walks_still_run() {
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

    /// A cloned stack runs the same middleware, in the same order and under the same names, as
    /// the stack it was cloned from: the clone shares each middleware (a closure's captures are
    /// not copied), and either can run after the other is dropped.
    #[test]
    fn a_cloned_stack_shares_its_middleware_with_the_original() {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut stack: Stack<TurnInput> = Stack::new();
        let counted = Arc::clone(&calls);
        stack.push(crate::pipeline::from_fn(
            move |ctx: &mut TurnContext, next| {
                counted.fetch_add(1, Ordering::SeqCst);
                Box::pin(async move {
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ));
        stack.push(pass);
        let clone = stack.clone();
        assert_eq!(clone.len(), 2);
        drop(stack);
        let mut ctx = bare_turn();
        let run = clone.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::Completed);
        let again = clone.clone();
        drop(clone);
        let mut ctx = bare_turn();
        assert_eq!(
            again.run(&mut ctx).now_or_never().unwrap().outcome,
            Downstream::Completed
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // The closure's captures live as long as any clone: one in `again`, one here.
        assert_eq!(Arc::strong_count(&calls), 2);
        assert_eq!(
            again
                .layers
                .iter()
                .map(|layer| layer.name())
                .collect::<Vec<_>>(),
            ["from_fn closure", "pass"]
        );
    }

    /// A middleware whose first poll is pending is kept and polled again until it finishes:
    /// the walk completes, and the middleware before it sees `Completed`.
    #[tokio::test]
    async fn a_middleware_that_waits_is_polled_until_it_finishes() {
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

    /// A `from_fn` middleware that waits finishes the walk too.
    #[tokio::test]
    async fn a_from_fn_middleware_that_waits_finishes_the_walk() {
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

        // The next walk on this thread runs as usual.
        let mut passing: Stack<TurnInput> = Stack::new();
        passing.push(waits_around_next);
        passing.push(pass);
        let mut ctx = bare_turn();
        assert_eq!(passing.run(&mut ctx).await.outcome, Downstream::Completed);
    }

    /// Raises its flag when dropped: shows that a middleware's future was dropped, not leaked.
    struct DropFlag(Arc<AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A middleware that polls `next.run(ctx)` while the rest waits, then drops it: the waiting
    /// middleware's future is dropped with it, the walk reports the short-circuit, and the next
    /// walk runs as usual.
    #[test]
    fn a_next_future_dropped_while_the_rest_waits_is_a_short_circuit_and_later_walks_still_run() {
        use std::future::Future;

        let dropped = Arc::new(AtomicBool::new(false));
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
        let flag = Arc::clone(&dropped);
        stack.push(crate::pipeline::from_fn(
            move |ctx: &mut TurnContext, next| {
                let guard = DropFlag(Arc::clone(&flag));
                Box::pin(async move {
                    std::future::pending::<()>().await;
                    drop(guard);
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ));
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::ShortCircuited);
        assert_eq!(run.short_circuited_by.map(|by| by.position), Some(0));
        assert!(
            dropped.load(Ordering::SeqCst),
            "the waiting middleware's future was leaked"
        );

        let mut passing: Stack<TurnInput> = Stack::new();
        passing.push(pass);
        passing.push(pass);
        let mut ctx = bare_turn();
        let run = passing.run(&mut ctx).now_or_never().unwrap();
        assert_eq!(run.outcome, Downstream::Completed);
    }

    /// A hand-written middleware whose `handle` panics before it returns a future: the panic is
    /// caught at its level like one in its future, the walk fails, and the middleware before it
    /// sees `Failed` and still runs its post-step.
    #[tokio::test]
    async fn a_panic_while_starting_a_middleware_fails_the_walk_and_upstream_post_steps_still_run()
    {
        struct PanicsWhenCalled;

        impl Middleware<TurnInput> for PanicsWhenCalled {
            fn handle<'a>(
                &'a self,
                _: &'a mut TurnContext,
                _: Next<'a, TurnContext>,
            ) -> BoxFuture<'a, Result<(), BoxError>> {
                panic!("before any future");
            }
        }

        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut stack: Stack<TurnInput> = Stack::new();
        stack.push(recorder(Arc::clone(&seen)));
        stack.push(PanicsWhenCalled);
        let mut ctx = bare_turn();
        let run = stack.run(&mut ctx).await;
        assert_eq!(run.outcome, Downstream::Failed);
        assert_eq!(*seen.lock().unwrap(), [Downstream::Failed]);
    }
}

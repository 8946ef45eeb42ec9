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
    /// waits is returned to be polled again.
    fn start<'a>(
        &'a self,
        bookkeeping: &'a Bookkeeping<'a, C>,
        position: usize,
        ctx: &'a mut C,
        cx: &mut std::task::Context<'_>,
    ) -> Result<Downstream, BoxFuture<'a, Downstream>>;

    fn name(&self) -> &'static str;

    fn state_writes(&self, writes: &mut super::StateWrites);
}

struct Registered<P, M> {
    middleware: M,
    pipeline: PhantomData<fn() -> P>,
}

impl<P: Pipeline, M: Middleware<P>> Layer<P::Context> for Registered<P, M> {
    fn start<'a>(
        &'a self,
        bookkeeping: &'a Bookkeeping<'a, P::Context>,
        position: usize,
        ctx: &'a mut P::Context,
        cx: &mut std::task::Context<'_>,
    ) -> Result<Downstream, BoxFuture<'a, Downstream>> {
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
            let result = Caught {
                future: self.middleware.handle_unboxed(&mut *ctx, next),
            }
            .await;
            let outcome = finished(bookkeeping, ctx, position, result);
            settle(bookkeeping, position, outcome)
        });
        // Polled with its type known: most middleware finish on their first poll, and then
        // the step is never called through a `dyn` pointer.
        match step.as_mut().poll(cx) {
            Poll::Ready(outcome) => Ok(outcome),
            Poll::Pending => Err(step),
        }
    }

    fn name(&self) -> &'static str {
        self.middleware.name()
    }

    fn state_writes(&self, writes: &mut super::StateWrites) {
        self.middleware.state_writes(writes);
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
    /// as `Err` with its payload, and the error of its result boxed.
    struct Caught<F> {
        #[pin]
        future: F,
    }
}

impl<F> Future for Caught<F>
where
    F: Future<Output: StepOutput>,
{
    type Output = std::thread::Result<Output>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let future = self.project().future;
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result.into_output())),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
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
    layers: &'walk [Arc<dyn Layer<C>>],
    failed: AtomicBool,
    /// The last `Next::run` to complete, as `position << 8 | outcome`. Runs are strictly nested
    /// (a middleware's `next` completes before that middleware returns, and only one `next` of
    /// a walk is alive at a time), so after middleware `k` returns, this holds `k + 1`'s tag
    /// exactly when `k` ran its `next` to completion. One word for the whole walk keeps `Next`
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
        RunNext::Start { next: self, ctx }
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
    Start { next: Next<'a, C>, ctx: &'a mut C },
    Step(BoxFuture<'a, Downstream>),
    Finished,
}

impl<C: PipelineContext> Future for RunNext<'_, C> {
    type Output = Downstream;

    /// Inlined into the middleware's future that awaits it: the first poll (most are the only
    /// one) is a check and one `dyn` call; later polls are out of line.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Downstream> {
        let this = self.get_mut();
        if !matches!(this, Self::Start { .. }) {
            return this.poll_started(cx);
        }
        let Self::Start { next, ctx } = std::mem::replace(this, Self::Finished) else {
            // Unreachable: checked above.
            return Poll::Pending;
        };
        let Next {
            bookkeeping,
            position,
        } = next;
        if ctx.is_aborted() {
            return Poll::Ready(settle(bookkeeping, position, Downstream::Aborted));
        }
        let Some(layer) = bookkeeping.layers.get(position) else {
            return Poll::Ready(settle(bookkeeping, position, Downstream::Completed));
        };
        match layer.start(bookkeeping, position, ctx, cx) {
            Ok(outcome) => Poll::Ready(outcome),
            Err(step) => {
                *this = Self::Step(step);
                Poll::Pending
            }
        }
    }
}

impl<C> RunNext<'_, C> {
    /// A poll after the first: of a step that waited, or after the end.
    #[inline(never)]
    fn poll_started(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Downstream> {
        let Self::Step(step) = self else {
            // Polled again after it finished: nothing is left to run.
            return Poll::Pending;
        };
        let poll = step.as_mut().poll(cx);
        if poll.is_ready() {
            *self = Self::Finished;
        }
        poll
    }
}

/// How the walk from the middleware at `position` on ended, once the middleware returned or
/// panicked.
#[inline(always)]
fn finished<C: PipelineContext>(
    bookkeeping: &Bookkeeping<'_, C>,
    ctx: &mut C,
    position: usize,
    result: std::thread::Result<Output>,
) -> Downstream {
    // The common case inline: the middleware returned `Ok` after running its `next`.
    if let Ok(Ok(())) = &result {
        let completed = bookkeeping.last_completed.load(Ordering::Relaxed);
        // The walk after it completed: one compare.
        if completed == tag(position + 1, Downstream::Completed) {
            std::mem::forget(result);
            return Downstream::Completed;
        }
        if let Some(outcome) = untag(completed, position + 1) {
            // `Ok(Ok(()))` owns nothing: forgetting it spares a call of its drop glue.
            std::mem::forget(result);
            return outcome;
        }
    }
    finished_otherwise(bookkeeping, ctx, position, result)
}

/// [`finished`] for a middleware that did not run its `next`, failed, aborted or panicked.
#[inline(never)]
fn finished_otherwise<C: PipelineContext>(
    bookkeeping: &Bookkeeping<'_, C>,
    ctx: &mut C,
    position: usize,
    result: std::thread::Result<Output>,
) -> Downstream {
    let cause = match result {
        Ok(Ok(())) => {
            return match ctx.is_aborted() {
                // The middleware did not run `next`: an abort explains that, nothing else.
                true => Downstream::Aborted,
                false => {
                    // The innermost short-circuit is the one to name: upstream middleware only
                    // pass its outcome on.
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

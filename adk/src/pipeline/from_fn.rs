//! Closures as middleware.

use std::marker::PhantomData;

use super::{BoxError, BoxFuture, Middleware, Next, Pipeline};

/// Turns a closure into middleware for any pipeline whose context it takes.
///
/// The closure returns a boxed future, the shape Rust needs for a future that borrows the
/// context; annotate the context parameter so the pipeline scope is known.
///
/// ```
/// use adk::pipeline::{BoxError, from_fn};
/// use adk::TurnContext;
///
/// let count_turns = from_fn(|ctx: &mut TurnContext, next| {
///     Box::pin(async move {
///         ctx.stash.set("my-org.seen", true)?;
///         next.run(ctx).await;
///         Ok::<(), BoxError>(())
///     })
/// });
/// # let _ = count_turns;
/// ```
pub fn from_fn<C, F>(function: F) -> FromFn<F, C>
where
    F: for<'a> Fn(&'a mut C, Next<'a, C>) -> BoxFuture<'a, Result<(), BoxError>>,
{
    FromFn {
        function,
        context: PhantomData,
    }
}

/// Middleware made from a closure by [`from_fn`]; `C` is the context it takes, which decides
/// the pipelines it fits.
pub struct FromFn<F, C> {
    function: F,
    context: PhantomData<fn(&mut C)>,
}

impl<F: Clone, C> Clone for FromFn<F, C> {
    fn clone(&self) -> Self {
        Self {
            function: self.function.clone(),
            context: PhantomData,
        }
    }
}

impl<F, C> std::fmt::Debug for FromFn<F, C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FromFn")
            .field("context", &std::any::type_name::<C>())
            .finish_non_exhaustive()
    }
}

impl<P, F> Middleware<P> for FromFn<F, P::Context>
where
    P: Pipeline,
    F: for<'a> Fn(&'a mut P::Context, Next<'a, P::Context>) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    fn handle<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        (self.function)(ctx, next)
    }

    fn name(&self) -> &'static str {
        "from_fn closure"
    }
}

//! Closures as middleware.

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
pub fn from_fn<F>(function: F) -> FromFn<F> {
    FromFn { function }
}

/// Middleware made from a closure by [`from_fn`].
#[derive(Clone, Copy, Debug)]
pub struct FromFn<F> {
    function: F,
}

impl<P, F> Middleware<P> for FromFn<F>
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
}

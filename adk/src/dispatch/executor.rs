//! The executor: the model call at the heart of each dispatch iteration.

use crate::context::DispatchContext;
use crate::pipeline::{BoxError, BoxFuture};

/// The model call. It reads the dispatch context (prompt, messages, tools), calls the model,
/// stores what came back through the context, and calls `ctx.ack()` when the model is done.
///
/// A returned error (or a panic) ends the dispatch as nack with
/// `E_LLM_EXECUTION_EXECUTOR_ERROR`, whose message includes the cause's; returning
/// `adk::context::Aborted` aborts the dispatch instead.
///
/// ```
/// use adk::context::DispatchContext;
/// use adk::dispatch::Executor;
/// use adk::pipeline::{BoxError, BoxFuture};
/// use adk::primitives::Message;
///
/// struct Echo;
///
/// impl Executor for Echo {
///     fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
///         Box::pin(async move {
///             let reply = format!("you said {} things", ctx.messages.len());
///             ctx.store_message(Message::assistant("reply-1", reply)?).await?;
///             ctx.ack()?;
///             Ok(())
///         })
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an executor",
    label = "expected an `adk::dispatch::Executor`",
    note = "wrap a closure with `adk::dispatch::executor_fn(|ctx: &mut DispatchContext| Box::pin(async move {{ ... }}))`"
)]
pub trait Executor: Send + Sync + 'static {
    /// Runs one iteration's model call.
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>>;
}

/// Turns a closure into an [`Executor`].
///
/// ```
/// use adk::context::DispatchContext;
/// use adk::dispatch::executor_fn;
/// use adk::pipeline::BoxError;
///
/// let always_done = executor_fn(|ctx: &mut DispatchContext| {
///     Box::pin(async move {
///         ctx.ack()?;
///         Ok::<(), BoxError>(())
///     })
/// });
/// # let _ = always_done;
/// ```
pub fn executor_fn<F>(function: F) -> ExecutorFn<F>
where
    F: for<'a> Fn(&'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    ExecutorFn { function }
}

/// An executor made from a closure by [`executor_fn`].
#[derive(Clone, Copy, Debug)]
pub struct ExecutorFn<F> {
    function: F,
}

impl<F> Executor for ExecutorFn<F>
where
    F: for<'a> Fn(&'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        (self.function)(ctx)
    }
}

impl<E: Executor + ?Sized> Executor for std::sync::Arc<E> {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        (**self).execute(ctx)
    }
}

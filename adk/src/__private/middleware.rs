//! Support for the code `#[middleware]` generates. Not a public API: it may change in any release.
//!
//! Each trait here turns a type mismatch in generated code into an error in the user's words,
//! spanned at the user's own tokens by the macro.

use crate::pipeline::{BoxError, Next};

/// Implemented only for a type and itself; `Pipeline` is carried for the message. The generated `handle` passes the pipeline's context
/// through it, spanned at the context type the user wrote, so a type alias of the other scope's
/// context is reported there in these words.
#[diagnostic::on_unimplemented(
    message = "this middleware takes `{Self}`, but the `{Pipeline}` pipeline hands its middleware `{Context}`",
    label = "expected `{Context}` here",
    note = "`turn_input` and `turn_output` middleware take `ctx: &mut TurnContext`; `dispatch_input` and `dispatch_output` middleware take `ctx: &mut DispatchContext`"
)]
pub trait SameContext<Context, Pipeline> {
    /// The pipeline's context, as the type the middleware names.
    fn cast(ctx: &mut Context) -> &mut Self;

    /// The pipeline's `next`, as the type the middleware names.
    fn cast_next(next: Next<'_, Context>) -> Next<'_, Self>
    where
        Self: Sized;
}

#[diagnostic::do_not_recommend]
impl<Context, Pipeline> SameContext<Context, Pipeline> for Context {
    fn cast(ctx: &mut Context) -> &mut Context {
        ctx
    }

    fn cast_next(next: Next<'_, Context>) -> Next<'_, Context> {
        next
    }
}

/// What a middleware fn may return: `Result<(), E>` where `E` converts into [`BoxError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from middleware",
    label = "middleware return `Result<(), E>` where `E` converts into `adk::pipeline::BoxError`",
    note = "any `E: std::error::Error + Send + Sync + 'static` works, and so does `adk::pipeline::BoxError` itself"
)]
pub trait MiddlewareResult {
    /// The result with its error boxed.
    fn into_result(self) -> Result<(), BoxError>;
}

#[diagnostic::do_not_recommend]
impl<E: Into<BoxError>> MiddlewareResult for Result<(), E> {
    fn into_result(self) -> Result<(), BoxError> {
        self.map_err(Into::into)
    }
}

/// Boxes a middleware fn's future, converting its error, without wrapping it in another
/// `async` block (each wrapper would add its captures to every middleware's allocation).
/// The conversion is passed in (as `MiddlewareResult::into_result`, spanned at the user's return
/// type) so a return type that is not a middleware result is reported there, once.
pub fn boxed<'a, F>(
    future: F,
    into_result: fn(F::Output) -> Result<(), BoxError>,
) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>>
where
    F: std::future::Future + Send + 'a,
{
    use futures_util::FutureExt;
    Box::pin(future.map(into_result))
}

/// What a `#[middleware]` unit struct derefs to, so that `load_history(ctx, next)` calls it.
pub type DirectCall<C> =
    for<'a> fn(&'a mut C, Next<'a, C>) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>>;

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

/// Writes a middleware fn's future into its slot, converting its output, without wrapping it in
/// another `async` block (each wrapper would add its captures to every middleware's future).
/// The conversion is passed in (as `MiddlewareResult::into_result`, spanned at the user's return
/// type) so a return type that is not a middleware result is reported there, once.
///
/// The future is made by `make` inside the slot, so it is not built elsewhere and copied in.
pub fn place<'a, F>(
    slot: Slot<'a, '_>,
    make: impl FnOnce() -> F,
    into_result: fn(F::Output) -> Result<(), BoxError>,
) -> Started<'a>
where
    F: std::future::Future + Send + 'a,
{
    slot.place(make, into_result)
}

pub use crate::pipeline::{InSlot, Slot, Started, own_slot};

/// `Middleware::handle` for a middleware that fills slots: its future in a slot of its own, for
/// callers outside a pipeline walk. Generic, so the user's types are checked once, in the
/// generated `handle_in_slot`.
pub fn handle_via_slot<'a, P, M>(
    middleware: &'a M,
    ctx: &'a mut P::Context,
    next: Next<'a, P::Context>,
) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>>
where
    P: crate::pipeline::Pipeline,
    M: crate::pipeline::Middleware<P>,
{
    own_slot(|slot| middleware.handle_in_slot(ctx, next, slot))
}

/// What a `#[middleware]` unit struct derefs to, so that `load_history(ctx, next)` calls it.
pub type DirectCall<C> =
    for<'a> fn(&'a mut C, Next<'a, C>) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>>;

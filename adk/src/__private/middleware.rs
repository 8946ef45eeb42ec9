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

/// A middleware fn's future with its output converted, without wrapping it in an `async` block
/// (which would keep `ctx` and `next` beside the body's own future). The conversion is passed in
/// (as `MiddlewareResult::into_result`, spanned at the user's return type) so a return type that
/// is not a middleware result is reported there, once.
///
/// No `Send` bound here: the future is `Send` exactly when the body's is, and the one place that
/// requires it is `handle_unboxed`'s return type, which the proc macro spans at the user's fn
/// name. A bound here as well would report the same future a second time.
///
/// Generic, and written here once: a closure or an `async` block in the code generated for each
/// middleware would cost the user's `cargo check` more than this call.
pub fn place<'a, Body, Ctx, NextArg, F>(
    body: Body,
    ctx: Ctx,
    next: NextArg,
    into_result: fn(F::Output) -> Result<(), BoxError>,
) -> impl std::future::Future<Output = Result<(), BoxError>> + 'a
where
    Body: FnOnce(Ctx, NextArg) -> F,
    F: std::future::Future + 'a,
{
    futures_util::FutureExt::map(body(ctx, next), into_result)
}

/// `Middleware::handle` for a `#[middleware]` fn: its unboxed future, boxed. Generic, so it is
/// checked once here rather than in every user's crate.
pub fn boxed<'a, M, P>(
    middleware: &'a M,
    ctx: &'a mut P::Context,
    next: Next<'a, P::Context>,
) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>>
where
    M: crate::pipeline::Middleware<P>,
    P: crate::pipeline::Pipeline,
{
    Box::pin(middleware.handle_unboxed(ctx, next))
}

/// The methods of a `#[middleware]` fn's `Middleware` impl for one pipeline. Not a public API.
///
/// `handle_unboxed` runs `$place`, which the proc macro built and spanned at the user's tokens,
/// and returns `$future`, the future's type (`impl Future<..> + Send + 'a`), which the proc
/// macro spans at the user's fn name: a body whose future is not `Send` is reported there, once;
/// `handle` boxes it. The impl's header is written by the proc macro, so a middleware registered
/// on the wrong pipeline is reported at the user's attribute with no mention of a macro of ours.
/// The methods are written here rather than by the proc macro because rustc expands a
/// `macro_rules!` far faster than an unoptimised proc macro builds the same tokens, on every
/// `cargo check` of the user's crate.
#[doc(hidden)]
#[macro_export]
macro_rules! __middleware_methods {
    ($pipeline:ident, $context:ident, $future:ty, |$ctx:ident, $next:ident| $place:expr) => {
        fn handle<'a>(
            &'a self,
            ctx: &'a mut $crate::$context,
            next: $crate::pipeline::Next<'a, $crate::$context>,
        ) -> $crate::pipeline::BoxFuture<'a, ::core::result::Result<(), $crate::pipeline::BoxError>>
        {
            $crate::__private::middleware::boxed::<Self, $crate::pipeline::$pipeline>(
                self, ctx, next,
            )
        }

        #[inline]
        fn handle_unboxed<'a>(
            &'a self,
            $ctx: &'a mut $crate::$context,
            $next: $crate::pipeline::Next<'a, $crate::$context>,
        ) -> $future
        where
            Self: ::core::marker::Sized,
        {
            $place
        }
    };
}

/// The unit struct a `#[middleware]` fn becomes, with the fn's doc comments and `#[cfg]`s, and
/// the `Deref` that makes it callable (`load_history(ctx, next)`): to [`call_directly`] for the
/// first pipeline it is declared for. Written here rather than by the proc macro for the reason
/// given at [`__middleware_methods!`]. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __middleware_struct {
    ([$($docs:tt)*] [$(#[$cfg:meta])*] $visibility:vis $name:ident, $pipeline:ident, $context:ident) => {
        $($docs)*
        $(#[$cfg])*
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        $visibility struct $name;

        $(#[$cfg])*
        impl ::core::ops::Deref for $name {
            type Target = $crate::__private::middleware::DirectCall<$crate::$context>;

            fn deref(&self) -> &Self::Target {
                $crate::__private::middleware::direct_call::<$name, $crate::pipeline::$pipeline>()
            }
        }
    };
}

/// Holds `call_directly::<M, P>` as a constant, so a reference to it is `'static`.
struct DirectCallOf<M, P>(std::marker::PhantomData<(M, P)>);

impl<M, P> DirectCallOf<M, P>
where
    M: crate::pipeline::Middleware<P> + Default,
    P: crate::pipeline::Pipeline,
{
    const CALL: DirectCall<P::Context> = call_directly::<M, P>;
}

/// `call_directly::<M, P>` as a `'static` fn pointer: what each `Deref` returns. The cast and
/// the `'static` borrow are made here, once, rather than checked in every middleware's `deref`.
pub fn direct_call<M, P>() -> &'static DirectCall<P::Context>
where
    M: crate::pipeline::Middleware<P> + Default,
    P: crate::pipeline::Pipeline,
{
    &DirectCallOf::<M, P>::CALL
}

/// Runs the middleware `M` on `ctx` and `next` outside a pipeline walk: what a `#[middleware]`
/// unit struct derefs to, so a test can call it as the fn it was written as. Generic, so it is
/// checked once here rather than for every middleware in the user's crate.
pub fn call_directly<'a, M, P>(
    ctx: &'a mut P::Context,
    next: Next<'a, P::Context>,
) -> crate::pipeline::DirectCallFuture<'a>
where
    M: crate::pipeline::Middleware<P> + Default,
    P: crate::pipeline::Pipeline,
{
    const {
        assert!(
            std::mem::size_of::<M>() == 0,
            "call_directly is for the unit structs `#[middleware]` makes"
        )
    };
    // A unit struct: boxing and leaking it allocates nothing, and gives the `'static` borrow
    // `handle` needs for a future that may outlive this call.
    let middleware: &'static M = Box::leak(Box::new(M::default()));
    crate::pipeline::DirectCallFuture::new(middleware.handle(ctx, next))
}

/// What a `#[middleware]` unit struct derefs to, so that `load_history(ctx, next)` calls it.
/// (It returns a named future rather than a `BoxFuture`: a `dyn Future` in this type costs
/// `cargo check` a well-formedness proof per middleware.)
pub type DirectCall<C> =
    for<'a> fn(&'a mut C, Next<'a, C>) -> crate::pipeline::DirectCallFuture<'a>;

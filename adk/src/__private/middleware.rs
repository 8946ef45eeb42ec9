//! Support for the code `#[middleware]` generates. Not a public API: it may change in any release.
//!
//! Each trait here turns a type mismatch in generated code into an error in the user's words,
//! spanned at the user's own tokens by the macro.

use std::future::Future;

use crate::pipeline::{BoxError, BoxFuture, Middleware, Next, Pipeline};

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

/// A middleware fn's future, returned as it is: the generated `Fits::run` returns it, and its
/// output (the fn's own `Result<(), E>`) is boxed by the walk, in code written here once
/// (see [`Fits::run`]), so each middleware has one future for `cargo check` to prove things of.
///
/// The body's future must be `Send` ([`SendBody`]): the call is spanned at the user's fn name, so
/// a body that holds a value that is not `Send` across an `.await` is reported there first, with
/// the fix. rustc then reports the same future at `run`'s `+ Send` return type (spanned at the
/// user's return type), with the value and the `.await` it is held across, which our message
/// cannot name.
///
/// Generic, and written here once: a closure or an `async` block in the code generated for each
/// middleware would cost the user's `cargo check` more than this call.
pub fn place<Body, Ctx, NextArg, F, Marker>(body: Body, ctx: Ctx, next: NextArg) -> F
where
    Body: FnOnce(Ctx, NextArg) -> F,
    F: SendBody<Marker>,
{
    body(ctx, next)
}

/// A middleware body's future, which the runner may move to another thread at any `.await`, so
/// `Send`. Two impls (the second for types implementing a trait no type implements), so rustc
/// reports a future that is not `Send` in these words instead of explaining the first impl.
#[diagnostic::on_unimplemented(
    message = "this middleware's future is not `Send`: the runner may resume a turn on another thread after any `.await`",
    label = "the body holds a value that is not `Send` across an `.await` (the next error shows which)",
    note = "end the value's scope (or `drop` it) before the `.await`, or use a `Send` type: `Arc` instead of `Rc`, `tokio::sync::Mutex` instead of holding a `std::sync::MutexGuard` across `.await`"
)]
pub trait SendBody<Marker> {}

/// The markers of [`SendBody`]'s two impls.
pub mod send_marker {
    /// The impl for every `Send` future.
    pub enum Send {}

    /// The impl no type meets.
    pub enum Unreachable {}

    /// Implemented by no type.
    pub trait Never {}
}

#[diagnostic::do_not_recommend]
impl<F: Future + Send> SendBody<send_marker::Send> for F {}

#[diagnostic::do_not_recommend]
impl<F: send_marker::Never> SendBody<send_marker::Unreachable> for F {}

/// The pipelines a `#[middleware]` fn fits: implemented by the macro, once per listed pipeline,
/// for the hidden type that carries the fn (`run` is the fn's body). The fn item itself is the
/// middleware (see the blanket `Middleware` impl below), so a wrong pipeline is reported here,
/// under the fn's name.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not middleware for the `{P}` pipeline",
    label = "this middleware cannot be registered here",
    note = "a `#[middleware(pipeline = ...)]` fn fits only the pipelines it lists: register it on one of them, or add this pipeline to its list"
)]
pub trait Fits<P: Pipeline>: 'static {
    /// The fn's body, its future as the fn returns it: its output is the fn's own
    /// `Result<(), E>`, which the walk boxes ([`MiddlewareResult::into_result`]) in code generic
    /// over the middleware, and so checked once, not once per middleware.
    fn run<'a>(
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> impl Future<Output: MiddlewareResult> + Send + 'a;

    /// The session-state writes found in the fn's body (see
    /// [`Middleware::state_writes`]); the macro overrides it only for a body that has some.
    fn state_writes(_writes: &mut crate::pipeline::StateWrites) {}
}

/// What a value must be to be registered as middleware when it is not a middleware type: a
/// `#[middleware]` fn. A plain `async fn` or a closure fails here; the error is reported as
/// `Middleware`'s (this impl is `do_not_recommend`), whose notes name `#[adk::middleware]`.
pub trait MiddlewareFn<P: Pipeline> {
    /// The hidden type whose `Fits` impls say which pipelines the fn fits.
    type Body;
}

// The fn a `#[middleware]` fn becomes is generic over the context (`fn name<'a, C>(ctx: &'a mut
// C, next: Next<'a, C>) -> DirectCallFuture<'a, Body, C>`), so it accepts any pipeline's context
// here, and the pipeline is checked on `Body` alone: a middleware registered on the wrong
// pipeline, even of the other scope, is reported as `Body: Fits<P>`, under the fn's name.
#[diagnostic::do_not_recommend]
impl<P, F, R> MiddlewareFn<P> for F
where
    P: Pipeline,
    F: Fn(&'static mut P::Context, Next<'static, P::Context>) -> R,
    R: NamedCall,
{
    type Body = R::Body;
}

/// The future a direct call of a `#[middleware]` fn returns, which names the fn's hidden type.
pub trait NamedCall {
    /// The fn's hidden type.
    type Body;
}

impl<M, C> NamedCall for crate::pipeline::DirectCallFuture<'_, M, C> {
    type Body = M;
}

/// A `#[middleware]` fn is middleware for every pipeline its attribute lists. Implemented for
/// the fn item (the value the user registers by name), not for a type of the same name: a type
/// or a unit struct would occupy a name a local binding or pattern could then no longer take.
///
/// The `Fn` bound is also `MiddlewareFn`'s; written here too, it lets coherence see that no
/// middleware type (which is not callable) is covered by this impl.
impl<P, F, R> Middleware<P> for F
where
    P: Pipeline,
    F: Fn(&'static mut P::Context, Next<'static, P::Context>) -> R,
    F: MiddlewareFn<P> + Send + Sync + 'static,
    <F as MiddlewareFn<P>>::Body: Fits<P>,
{
    fn handle<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(boxed_error::<<F as MiddlewareFn<P>>::Body, P>(ctx, next))
    }

    /// The fn's own future: the walk boxes its error (the step awaits it directly, with no
    /// conversion wrapped around it).
    #[inline]
    fn handle_unboxed<'a>(
        &'a self,
        ctx: &'a mut P::Context,
        next: Next<'a, P::Context>,
    ) -> impl Future<Output: crate::pipeline::StepOutput> + Send + 'a
    where
        Self: Sized,
    {
        <<F as MiddlewareFn<P>>::Body as Fits<P>>::run(ctx, next)
    }

    /// The fn's name: the hidden type carries it.
    fn name(&self) -> &'static str {
        crate::pipeline::short_type_name(std::any::type_name::<<F as MiddlewareFn<P>>::Body>())
    }

    fn state_writes(&self, writes: &mut crate::pipeline::StateWrites) {
        <<F as MiddlewareFn<P>>::Body as Fits<P>>::state_writes(writes);
    }
}

pub use crate::pipeline::CalledWith;

/// `CalledWith::call` for the first pipeline `P` a `#[middleware]` fn lists. Generic, so it is
/// checked once here rather than for every middleware in the user's crate.
pub fn call_first<'a, M, P>(
    ctx: &'a mut P::Context,
    next: Next<'a, P::Context>,
) -> BoxFuture<'a, Result<(), BoxError>>
where
    M: Fits<P>,
    P: Pipeline,
{
    Box::pin(boxed_error::<M, P>(ctx, next))
}

/// `M`'s future with its error boxed: the one conversion of every `#[middleware]` fn's result,
/// generic, so `cargo check` checks it here once rather than in the code of each middleware.
#[inline]
fn boxed_error<'a, M, P>(
    ctx: &'a mut P::Context,
    next: Next<'a, P::Context>,
) -> impl Future<Output = Result<(), BoxError>> + Send + 'a
where
    M: Fits<P>,
    P: Pipeline,
{
    futures_util::FutureExt::map(M::run(ctx, next), MiddlewareResult::into_result)
}

/// The methods of a `#[middleware]` fn's `Fits` impl for one pipeline. Not a public API.
///
/// `run` runs `$place`, which the proc macro built and spanned at the user's tokens, and returns
/// `$future`, the future's type (`impl Future<Output = the fn's result> + Send + 'a`), which the
/// proc macro spans at the user's return type: a result that is not a middleware result is
/// reported there, and rustc explains there a body whose future is not `Send`. The impl's
/// header is written by the proc macro. The method is written here rather than by the proc
/// macro because rustc expands a `macro_rules!` far faster than an unoptimised proc macro builds
/// the same tokens, on every `cargo check` of the user's crate.
#[doc(hidden)]
#[macro_export]
macro_rules! __middleware_methods {
    ($context:ident, $future:ty, |$ctx:ident, $next:ident| $place:expr) => {
        // The future's output is the fn's own result, where the trait says only that it is one.
        #[allow(refining_impl_trait)]
        #[inline]
        fn run<'a>(
            $ctx: &'a mut $crate::$context,
            $next: $crate::pipeline::Next<'a, $crate::$context>,
        ) -> $future {
            $place
        }
    };
}

/// What a `#[middleware]` fn becomes: a fn of the same name and visibility, with the fn's doc
/// comments and `#[cfg]`s, that a builder takes as middleware and a caller calls like the fn it
/// was written as (`load_history(ctx, next).await`); and, in a hidden module, the type that
/// carries the body, with its direct call for the first pipeline's context. Only the fn takes
/// the user's name, in the value namespace, like a plain fn: a `let`, a parameter or a pattern
/// of that name elsewhere keeps its meaning. Written here rather than by the proc macro for the
/// reason given at [`__middleware_methods!`]. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __middleware_struct {
    ([$($docs:tt)*] [$(#[$cfg:meta])*] $visibility:vis $name:ident, $module:ident, $pipeline:ident, $context:ident) => {
        $(#[$cfg])*
        #[doc(hidden)]
        #[allow(non_snake_case)]
        $visibility mod $module {
            #[allow(non_camel_case_types, dead_code)]
            pub struct $name {}
        }

        $($docs)*
        $(#[$cfg])*
        $visibility fn $name<'a, C>(
            ctx: &'a mut C,
            next: $crate::pipeline::Next<'a, C>,
        ) -> $crate::pipeline::DirectCallFuture<'a, $module::$name, C> {
            $crate::pipeline::DirectCallFuture::new(ctx, next)
        }

        $(#[$cfg])*
        impl $crate::__private::middleware::CalledWith<$crate::$context> for $module::$name {
            fn call<'a>(
                ctx: &'a mut $crate::$context,
                next: $crate::pipeline::Next<'a, $crate::$context>,
            ) -> $crate::pipeline::BoxFuture<'a, ::core::result::Result<(), $crate::pipeline::BoxError>> {
                $crate::__private::middleware::call_first::<Self, $crate::pipeline::$pipeline>(ctx, next)
            }
        }
    };
}

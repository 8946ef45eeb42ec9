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

/// A `#[middleware]` fn, as its unit struct: the context it takes, its name, and how it starts
/// in a slot. Generated once per fn (by [`__middleware!`](crate::__middleware)). Its `Middleware`
/// impl for each pipeline it is declared for is three one-line methods delegating here
/// ([`__middleware_methods!`](crate::__middleware_methods)),
/// so the generated code stays small and the code every middleware shares is written (and
/// checked) once, in adk. (A blanket impl would be smaller still, but a middleware registered on
/// the wrong pipeline would then be reported against the blanket impl's bounds instead of with
/// "`Middleware<TurnInput>` is implemented for it".)
pub trait MiddlewareFn: Send + Sync + 'static {
    /// The context of the pipelines it is declared for (all of one scope).
    type Context: crate::pipeline::PipelineContext;
    /// The fn's name, for run-time errors.
    const NAME: &'static str;

    /// Writes the fn's future into `slot` and polls it once.
    fn place<'a>(
        ctx: &'a mut Self::Context,
        next: Next<'a, Self::Context>,
        slot: Slot<'a, '_>,
    ) -> Started<'a>;
}

/// The impls of a `#[middleware]` fn, written here rather than by the proc macro: rustc expands
/// a `macro_rules!` far faster than an unoptimised proc macro builds the same tokens, and the
/// proc macro is re-run on every `cargo check` of the user's crate. Not a public API.
///
/// It writes the [`MiddlewareFn`] impl (`place` runs `$place`, which the proc macro spanned at
/// the user's tokens) and the `Deref` that makes the unit struct callable.
#[doc(hidden)]
#[macro_export]
macro_rules! __middleware {
    (
        $(#[$cfg:meta])*
        fn $name:ident = $name_text:literal in $context:ident
        |$ctx:ident, $next:ident, $slot:ident| $place:expr
    ) => {
        $(#[$cfg])*
        #[automatically_derived]
        impl $crate::__private::middleware::MiddlewareFn for $name {
            type Context = $crate::$context;
            const NAME: &'static str = $name_text;

            #[inline]
            fn place<'a>(
                $ctx: &'a mut $crate::$context,
                $next: $crate::pipeline::Next<'a, $crate::$context>,
                $slot: $crate::__private::middleware::Slot<'a, '_>,
            ) -> $crate::__private::middleware::Started<'a> {
                $place
            }
        }

        $(#[$cfg])*
        impl ::core::ops::Deref for $name {
            type Target = $crate::__private::middleware::DirectCall<$crate::$context>;

            fn deref(&self) -> &$crate::__private::middleware::DirectCall<$crate::$context> {
                &($crate::__private::middleware::call_directly::<$name>
                    as $crate::__private::middleware::DirectCall<$crate::$context>)
            }
        }
    };
}

/// The methods of a `#[middleware]` fn's `Middleware` impl, delegating to its [`MiddlewareFn`]
/// impl. Not a public API. (The impl's header is written by the proc macro, so a middleware
/// registered on the wrong pipeline is reported at the user's attribute with no mention of a
/// macro of ours.)
#[doc(hidden)]
#[macro_export]
macro_rules! __middleware_methods {
    () => {
        fn handle<'a>(
            &'a self,
            ctx: &'a mut <Self as $crate::__private::middleware::MiddlewareFn>::Context,
            next: $crate::pipeline::Next<
                'a,
                <Self as $crate::__private::middleware::MiddlewareFn>::Context,
            >,
        ) -> $crate::pipeline::BoxFuture<'a, ::core::result::Result<(), $crate::pipeline::BoxError>>
        {
            $crate::__private::middleware::call_directly::<Self>(ctx, next)
        }

        #[inline]
        fn handle_in_slot<'a>(
            &'a self,
            ctx: &'a mut <Self as $crate::__private::middleware::MiddlewareFn>::Context,
            next: $crate::pipeline::Next<
                'a,
                <Self as $crate::__private::middleware::MiddlewareFn>::Context,
            >,
            slot: $crate::__private::middleware::Slot<'a, '_>,
        ) -> $crate::__private::middleware::Started<'a> {
            <Self as $crate::__private::middleware::MiddlewareFn>::place(ctx, next, slot)
        }

        fn name(&self) -> &'static str {
            <Self as $crate::__private::middleware::MiddlewareFn>::NAME
        }
    };
}

/// Runs a `#[middleware]` fn outside a pipeline walk, its future in a slot of its own: what its
/// unit struct derefs to (so `load_history(ctx, next)` calls it) and its `Middleware::handle`.
pub fn call_directly<'a, M: MiddlewareFn>(
    ctx: &'a mut M::Context,
    next: Next<'a, M::Context>,
) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>> {
    own_slot(move |slot| M::place(ctx, next, slot))
}

/// What a `#[middleware]` unit struct derefs to, so that `load_history(ctx, next)` calls it.
pub type DirectCall<C> =
    for<'a> fn(&'a mut C, Next<'a, C>) -> crate::pipeline::BoxFuture<'a, Result<(), BoxError>>;

//! The checker traits behind `storage_adapter!`. Not part of the public API: generated code calls
//! them, and users read their names only in error messages.
//!
//! For each of the 29 callbacks there are two traits, `<Name>Callback` (a function or closure,
//! called `callback(ctx, ..)`) and `<Name>Method` (a method of the adapter, called
//! `Self::method(self, ctx, ..)`). Each has two impls: the real one, bounded by `AsyncFnOnce` with
//! the callback's signature, and a decoy for types implementing a sealed trait nothing implements.
//! With two candidate impls rustc cannot commit to one and explain its where-clauses, so a wrong
//! callback (wrong arity, wrong parameter or return type) is reported with the trait's
//! `on_unimplemented` text, at the user's callback, instead of E0593 or E0271 deep in generated
//! code. `do_not_recommend` keeps rustc from suggesting either impl.
//!
//! Closures go through `<Name>Callback` (its `AsyncFnOnce` bound also gives a closure's `Ok(..)`
//! its error type). A path to a fn is checked in three steps, each with its own message at the
//! user's path, so the message names the part that is wrong even where rustc shortens the fn's
//! type: `<Name>Parameters` (what it takes), [`CallbackFuture`] (that it returns a future) and
//! `<Name>Output` (what the future resolves to), joined by `<Name>Future`.
//!
//! `self.<name>` is guarded by a trait `storage_adapter!` declares where the name is resolved
//! (`ChatStore_has_no_method_<name>`), whose placeholder constant [`NoSuchMethod`] the name
//! resolves to when the adapter has no inherent `<name>`; `<Name>Exists` then reports
//! "`ChatStore` has no method `<name>`".
//!
//! `call` consumes the callback and returns its future unchanged, so the future's own `Send`-ness
//! shows through to the `+ Send` bound of the generated `StorageAdapter` method.

use std::future::Future;

pub use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
pub use crate::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
};
pub use crate::storage::{NoopStorage, StorageContext, StorageError};

/// Marks the impl of a checker trait that really calls the callback.
#[derive(Debug)]
pub enum Valid {}

/// Marks the decoy impl of a checker trait, which no type can use.
#[derive(Debug)]
pub enum Decoy {}

/// Marks the impl of a `<Name>Method` checker for the [`NoSuchMethod`] placeholder.
#[derive(Debug)]
pub enum Missing {}

/// What `self.<name>` resolves to when the adapter `State` has no method `<name>` and `<name>` is
/// a callback's name: reported by the `<Name>Exists` check as "`State` has no method `<name>`".
/// Deliberately neither `Copy` nor `Send` nor `Sync` (so a reference to it is not `Send`
/// either): that is how the check tells it from a method, whose fn item is all three.
pub struct NoSuchMethod<State: ?Sized>(std::marker::PhantomData<NotSendNotSync<State>>);

/// `*const ()` takes away `Send` and `Sync`; `fn(&State)` names the adapter without owning one.
type NotSendNotSync<State> = (*const (), fn(&State));

impl<State: ?Sized> NoSuchMethod<State> {
    /// The placeholder `self.<name>` resolves to through the guard `storage_adapter!` declares.
    pub const PLACEHOLDER: Self = Self(std::marker::PhantomData);
}

impl<State: ?Sized> std::fmt::Debug for NoSuchMethod<State> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("NoSuchMethod")
    }
}

mod sealed {
    /// Implemented by no type: the bound of the checker traits' decoy impls.
    pub trait Never {
        /// Never called: no value of an implementing type exists.
        fn absurd<T>(&self) -> T;
    }
}

/// A callback's future, which the runner may move to another thread at any `.await`, so `Send`.
/// Two impls (the second for `sealed::Never` types), so rustc reports a future that is not
/// `Send` in these words, at the entry's name, before its own error at the method's `+ Send`
/// return type, which names the value held across the `.await`.
#[diagnostic::on_unimplemented(
    message = "the future of this `storage_adapter!` callback is not `Send`: adk may resume it on another thread after any `.await`",
    label = "the callback holds a value that is not `Send` across an `.await` (the next error shows which)",
    note = "end the value's scope (or `drop` it) before the `.await`, or use a `Send` type: `Arc` instead of `Rc`, `tokio::sync::Mutex` instead of holding a `std::sync::MutexGuard` across `.await`"
)]
pub trait SendCallbackFuture<Marker> {}

#[diagnostic::do_not_recommend]
impl<F: Future + Send> SendCallbackFuture<Valid> for F {}

#[diagnostic::do_not_recommend]
impl<F: sealed::Never> SendCallbackFuture<Decoy> for F {}

/// `future`, once [`SendCallbackFuture`] has checked it is `Send`.
pub fn send<F: SendCallbackFuture<Marker>, Marker>(future: F) -> F {
    future
}

/// The process-wide no-op adapter that `..noop` delegates to.
pub fn noop() -> &'static NoopStorage {
    NoopStorage::shared()
}

/// What a callback given as a path to a fn returns: a future, whose output its callback's
/// `<Name>Output` trait checks.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a future, but storage callbacks are `async fn`s",
    label = "this fn returns `{Self}`; declare it `async fn`",
    note = "a storage callback returns `Result<_, StorageError>` from an `async fn`, or from a closure `|ctx, ..| async move {{ .. }}`"
)]
pub trait CallbackFuture<Marker> {
    /// The future itself.
    type Future: Future;

    /// Returns the future unchanged.
    fn into_callback_future(self) -> Self::Future;
}

#[diagnostic::do_not_recommend]
impl<F: Future> CallbackFuture<Valid> for F {
    type Future = F;

    fn into_callback_future(self) -> F {
        self
    }
}

#[diagnostic::do_not_recommend]
impl<F: sealed::Never> CallbackFuture<Decoy> for F {
    type Future = std::future::Pending<()>;

    fn into_callback_future(self) -> Self::Future {
        self.absurd()
    }
}

macro_rules! checkers {
    ($(
        $name:ident {
            callback: $Callback:ident,
            method: $Method:ident,
            future: $Future:ident,
            parameters: ($($argument:ident: $Argument:ty),*),
            output: $Output:ty,
            callback_message: $callback_message:literal,
            callback_label: $callback_label:literal,
            callback_note: $callback_note:literal,
            parameters_check: $Parameters:ident,
            output_check: $OutputCheck:ident,
            parameters_message: $parameters_message:literal,
            parameters_label: $parameters_label:literal,
            parameters_note: $parameters_note:literal,
            output_message: $output_message:literal,
            output_label: $output_label:literal,
            exists: $Exists:ident,
            exists_message: $exists_message:literal,
            exists_label: $exists_label:literal,
            exists_note: $exists_note:literal,
            method_message: $method_message:literal,
            method_label: $method_label:literal,
            method_note: $method_note:literal,
        }
    ),* $(,)?) => {$(

        pin_project_lite::pin_project! {
            #[doc = concat!(
                "A `", stringify!($name), "` callback's future, its output converted by a `",
                stringify!($OutputCheck), "` method named at the user's callback (so a wrong output is ",
                "reported there, once). No allocation: the future is only wrapped, and its name is what ",
                "an error about it (a future that is not `Send`) shows."
            )]
            pub struct $Future<F: Future> {
                #[pin]
                future: F,
                into_output: fn(F::Output) -> Result<$Output, StorageError>,
            }
        }

        impl<F: Future> $Future<F> {
            /// Wraps `future`; its output goes through `into_output`.
            pub fn new(future: F, into_output: fn(F::Output) -> Result<$Output, StorageError>) -> Self {
                Self { future, into_output }
            }
        }

        impl<F: Future> Future for $Future<F> {
            type Output = Result<$Output, StorageError>;

            fn poll(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Self::Output> {
                let this = self.project();
                this.future.poll(cx).map(*this.into_output)
            }
        }
        #[doc = concat!("Checks and calls a `", stringify!($name), "` callback given as a function or a closure.")]
        #[diagnostic::on_unimplemented(
            message = $callback_message,
            label = $callback_label,
            note = $callback_note
        )]
        pub trait $Callback<'c, Marker> {
            /// Calls the callback and returns its future.
            fn call(
                self,
                ctx: &'c StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>>;
        }

        #[diagnostic::do_not_recommend]
        impl<'c, F> $Callback<'c, Valid> for F
        where
            F: AsyncFnOnce(&'c StorageContext, $($Argument),*) -> Result<$Output, StorageError>,
        {
            fn call(
                self,
                ctx: &'c StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>> {
                self(ctx, $($argument),*)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<'c, F: sealed::Never> $Callback<'c, Decoy> for F {
            #[allow(unused_variables)]
            fn call(
                self,
                ctx: &'c StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>> {
                self.absurd::<std::future::Ready<Result<$Output, StorageError>>>()
            }
        }

        #[doc = concat!(
            "Checks the parameters of a `", stringify!($name), "` callback given as a path to a fn, ",
            "and calls it. Its output is checked by `CallbackFuture` and `", stringify!($OutputCheck), "`, ",
            "so each mistake is reported on its own."
        )]
        #[diagnostic::on_unimplemented(
            message = $parameters_message,
            label = $parameters_label,
            note = $parameters_note
        )]
        pub trait $Parameters<'c, Marker> {
            /// What the fn returns: a future, when it is an `async fn`.
            type Returned;

            /// Calls the fn.
            fn call(self, ctx: &'c StorageContext, $($argument: $Argument,)*) -> Self::Returned;
        }

        #[diagnostic::do_not_recommend]
        impl<'c, F, R> $Parameters<'c, Valid> for F
        where
            F: FnOnce(&'c StorageContext, $($Argument),*) -> R,
        {
            type Returned = R;

            fn call(self, ctx: &'c StorageContext, $($argument: $Argument,)*) -> R {
                self(ctx, $($argument),*)
            }
        }

        #[diagnostic::do_not_recommend]
        impl<'c, F: sealed::Never> $Parameters<'c, Decoy> for F {
            type Returned = ();

            #[allow(unused_variables)]
            fn call(self, ctx: &'c StorageContext, $($argument: $Argument,)*) {
                self.absurd::<()>()
            }
        }

        #[doc = concat!("What a `", stringify!($name), "` callback's future must resolve to.")]
        #[diagnostic::on_unimplemented(message = $output_message, label = $output_label)]
        pub trait $OutputCheck {
            /// The output as the `StorageAdapter` method returns it.
            fn into_output(self) -> Result<$Output, StorageError>;
        }

        #[diagnostic::do_not_recommend]
        impl $OutputCheck for Result<$Output, StorageError> {
            fn into_output(self) -> Result<$Output, StorageError> {
                self
            }
        }

        #[doc = concat!("Checks and calls a `", stringify!($name), "` callback given as `self.method`.")]
        #[diagnostic::on_unimplemented(
            message = $method_message,
            label = $method_label,
            note = $method_note
        )]
        pub trait $Method<State, Marker> {
            /// Calls the method on `state` and returns its future.
            fn call(
                self,
                state: &State,
                ctx: &StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>>;
        }

        #[diagnostic::do_not_recommend]
        impl<State, F> $Method<State, Valid> for F
        where
            F: AsyncFnOnce(&State, &StorageContext, $($Argument),*) -> Result<$Output, StorageError>,
        {
            fn call(
                self,
                state: &State,
                ctx: &StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>> {
                self(state, ctx, $($argument),*)
            }
        }

        // The placeholder passes this check so that only `Exists` reports it.
        impl<State> $Method<State, Missing> for NoSuchMethod<State> {
            #[allow(unused_variables)]
            fn call(
                self,
                state: &State,
                ctx: &StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>> {
                std::future::pending()
            }
        }

        #[diagnostic::do_not_recommend]
        impl<State, F: sealed::Never> $Method<State, Decoy> for F {
            #[allow(unused_variables)]
            fn call(
                self,
                state: &State,
                ctx: &StorageContext,
                $($argument: $Argument,)*
            ) -> impl Future<Output = Result<$Output, StorageError>> {
                self.absurd::<std::future::Ready<Result<$Output, StorageError>>>()
            }
        }

        #[doc = concat!(
            "Checks that `self.", stringify!($name), "` named a method of the adapter: any method is a ",
            "fn item, which is `Copy + Send`; the [`NoSuchMethod`] placeholder, and a reference to it, are not."
        )]
        #[diagnostic::on_unimplemented(
            message = $exists_message,
            label = $exists_label,
            note = $exists_note
        )]
        pub trait $Exists<State: ?Sized> {
            /// Nothing to do: the check is the trait bound.
            fn exists(self)
            where
                Self: Sized,
            {
            }
        }

        #[diagnostic::do_not_recommend]
        impl<State: ?Sized, F: Copy + Send> $Exists<State> for F {}

    )*};
}

// The checker traits, by kind of callback. The macro above is in scope in each (declared
// after it), and their items are this module's, where generated code names them.
mod conduits;
mod fetch;
mod noop;
mod write;

pub use conduits::*;
pub use fetch::*;
pub use write::*;

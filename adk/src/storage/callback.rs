//! The checker traits behind `storage_adapter!`. Not part of the public API: generated code calls
//! them, and users read their names only in error messages.
//!
//! For each of the 27 callbacks there are two traits, `<Name>Callback` (a function or closure,
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

/// The process-wide no-op adapter that `..noop` delegates to.
pub fn noop() -> &'static NoopStorage {
    NoopStorage::shared()
}

/// The `StorageAdapter` methods `..noop` fills in, by callback name: each hands its arguments to
/// [`noop()`]. `storage_adapter!` names the callbacks and this writes the methods, because rustc
/// expands a `macro_rules!` far faster than the proc macro, built unoptimised as cargo builds proc
/// macros, builds their tokens, and it runs on every `cargo check` of the user's crate. A method
/// here that drifted from the trait fails to compile wherever `..noop` is used. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __storage_noop {
    ($($name:ident)*) => {
        $($crate::__storage_noop!(@method $name);)*
    };
    // Each arm writes its method whole: a further `macro_rules!` hop per method would be one
    // more invocation for rustc to resolve and expand on every `cargo check`.
    (@method fetch_memories) => {
        fn fetch_memories(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::Memory>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::fetch_memories($crate::storage::callback::noop(), ctx)
        }
    };
    (@method fetch_messages) => {
        fn fetch_messages(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::Message>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::fetch_messages($crate::storage::callback::noop(), ctx)
        }
    };
    (@method fetch_thoughts) => {
        fn fetch_thoughts(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::Thought>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::fetch_thoughts($crate::storage::callback::noop(), ctx)
        }
    };
    (@method fetch_tool_calls) => {
        fn fetch_tool_calls(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::ToolCall>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::fetch_tool_calls($crate::storage::callback::noop(), ctx)
        }
    };
    (@method fetch_tools) => {
        fn fetch_tools(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::Tool>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::fetch_tools($crate::storage::callback::noop(), ctx)
        }
    };
    (@method fetch_retrievables) => {
        fn fetch_retrievables(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::Retrievable>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::fetch_retrievables($crate::storage::callback::noop(), ctx)
        }
    };
    (@method refresh_standing_instructions) => {
        fn refresh_standing_instructions(&self, ctx: &$crate::storage::StorageContext) -> impl ::core::future::Future<
            Output = ::core::result::Result<::std::vec::Vec<$crate::storage::callback::StandingInstruction>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::refresh_standing_instructions($crate::storage::callback::noop(), ctx)
        }
    };
    (@method store_memory) => {
        fn store_memory(&self, ctx: &$crate::storage::StorageContext, memory: $crate::storage::callback::Memory) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_memory($crate::storage::callback::noop(), ctx, memory)
        }
    };
    (@method mutate_memory) => {
        fn mutate_memory(&self, ctx: &$crate::storage::StorageContext, memory: $crate::storage::callback::Memory) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::mutate_memory($crate::storage::callback::noop(), ctx, memory)
        }
    };
    (@method delete_memory) => {
        fn delete_memory(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::delete_memory($crate::storage::callback::noop(), ctx, id)
        }
    };
    (@method store_message) => {
        fn store_message(&self, ctx: &$crate::storage::StorageContext, message: $crate::storage::callback::Message) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_message($crate::storage::callback::noop(), ctx, message)
        }
    };
    (@method mutate_message) => {
        fn mutate_message(&self, ctx: &$crate::storage::StorageContext, message: $crate::storage::callback::Message) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::mutate_message($crate::storage::callback::noop(), ctx, message)
        }
    };
    (@method delete_message) => {
        fn delete_message(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::delete_message($crate::storage::callback::noop(), ctx, id)
        }
    };
    (@method store_thought) => {
        fn store_thought(&self, ctx: &$crate::storage::StorageContext, thought: $crate::storage::callback::Thought) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_thought($crate::storage::callback::noop(), ctx, thought)
        }
    };
    (@method mutate_thought) => {
        fn mutate_thought(&self, ctx: &$crate::storage::StorageContext, thought: $crate::storage::callback::Thought) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::mutate_thought($crate::storage::callback::noop(), ctx, thought)
        }
    };
    (@method delete_thought) => {
        fn delete_thought(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::delete_thought($crate::storage::callback::noop(), ctx, id)
        }
    };
    (@method store_tool_call) => {
        fn store_tool_call(&self, ctx: &$crate::storage::StorageContext, tool_call: $crate::storage::callback::ToolCall) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_tool_call($crate::storage::callback::noop(), ctx, tool_call)
        }
    };
    (@method mutate_tool_call) => {
        fn mutate_tool_call(&self, ctx: &$crate::storage::StorageContext, tool_call: $crate::storage::callback::ToolCall) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::mutate_tool_call($crate::storage::callback::noop(), ctx, tool_call)
        }
    };
    (@method delete_tool_call) => {
        fn delete_tool_call(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::delete_tool_call($crate::storage::callback::noop(), ctx, id)
        }
    };
    (@method store_retrievable) => {
        fn store_retrievable(&self, ctx: &$crate::storage::StorageContext, retrievable: $crate::storage::callback::Retrievable) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_retrievable($crate::storage::callback::noop(), ctx, retrievable)
        }
    };
    (@method mutate_retrievable) => {
        fn mutate_retrievable(&self, ctx: &$crate::storage::StorageContext, retrievable: $crate::storage::callback::Retrievable) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::mutate_retrievable($crate::storage::callback::noop(), ctx, retrievable)
        }
    };
    (@method delete_retrievable) => {
        fn delete_retrievable(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::delete_retrievable($crate::storage::callback::noop(), ctx, id)
        }
    };
    (@method store_standing_instruction) => {
        fn store_standing_instruction(&self, ctx: &$crate::storage::StorageContext, instruction: $crate::storage::callback::StandingInstruction) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_standing_instruction($crate::storage::callback::noop(), ctx, instruction)
        }
    };
    (@method mutate_standing_instruction) => {
        fn mutate_standing_instruction(&self, ctx: &$crate::storage::StorageContext, instruction: $crate::storage::callback::StandingInstruction) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::mutate_standing_instruction($crate::storage::callback::noop(), ctx, instruction)
        }
    };
    (@method delete_standing_instruction) => {
        fn delete_standing_instruction(&self, ctx: &$crate::storage::StorageContext, instruction: $crate::storage::callback::StandingInstruction) -> impl ::core::future::Future<
            Output = ::core::result::Result<(), $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::delete_standing_instruction($crate::storage::callback::noop(), ctx, instruction)
        }
    };
    (@method store_media_bytes) => {
        fn store_media_bytes(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String, bytes: $crate::storage::callback::ConduitBytes) -> impl ::core::future::Future<
            Output = ::core::result::Result<$crate::storage::callback::MediaReader, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_media_bytes($crate::storage::callback::noop(), ctx, id, bytes)
        }
    };
    (@method store_retrievable_bytes) => {
        fn store_retrievable_bytes(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String, bytes: $crate::storage::callback::ConduitBytes) -> impl ::core::future::Future<
            Output = ::core::result::Result<$crate::storage::callback::SpoolReader, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::store_retrievable_bytes($crate::storage::callback::noop(), ctx, id, bytes)
        }
    };
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

// The messages are spelt out because diagnostic attributes take only literals. A unit test in
// adk-macros checks every label against the signature table the macro uses.
checkers! {
    fetch_memories {
        callback: FetchMemoriesCallback,
        method: FetchMemoriesMethod,
        future: FetchMemoriesFuture,
        parameters: (),
        output: Vec<Memory>,
        callback_message: "`{Self}` is not a valid `fetch_memories` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Memory>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: FetchMemoriesParameters,
        output_check: FetchMemoriesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `fetch_memories` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `fetch_memories` callback is `async fn(ctx: &StorageContext) -> Result<Vec<Memory>, StorageError>`",
        output_message: "this `fetch_memories` callback resolves to `{Self}`, expected `Result<Vec<Memory>, StorageError>`",
        output_label: "expected `Result<Vec<Memory>, StorageError>`",
        exists: FetchMemoriesExists,
        exists_message: "`{State}` has no method `fetch_memories`",
        exists_label: "`self.fetch_memories` names a method of `{State}`, and there is none",
        exists_note: "add `async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `fetch_memories` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Memory>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError>`",
    },
    fetch_messages {
        callback: FetchMessagesCallback,
        method: FetchMessagesMethod,
        future: FetchMessagesFuture,
        parameters: (),
        output: Vec<Message>,
        callback_message: "`{Self}` is not a valid `fetch_messages` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Message>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: FetchMessagesParameters,
        output_check: FetchMessagesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `fetch_messages` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `fetch_messages` callback is `async fn(ctx: &StorageContext) -> Result<Vec<Message>, StorageError>`",
        output_message: "this `fetch_messages` callback resolves to `{Self}`, expected `Result<Vec<Message>, StorageError>`",
        output_label: "expected `Result<Vec<Message>, StorageError>`",
        exists: FetchMessagesExists,
        exists_message: "`{State}` has no method `fetch_messages`",
        exists_label: "`self.fetch_messages` names a method of `{State}`, and there is none",
        exists_note: "add `async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `fetch_messages` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Message>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError>`",
    },
    fetch_thoughts {
        callback: FetchThoughtsCallback,
        method: FetchThoughtsMethod,
        future: FetchThoughtsFuture,
        parameters: (),
        output: Vec<Thought>,
        callback_message: "`{Self}` is not a valid `fetch_thoughts` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Thought>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: FetchThoughtsParameters,
        output_check: FetchThoughtsOutput,
        parameters_message: "`{Self}` does not take the parameters of a `fetch_thoughts` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `fetch_thoughts` callback is `async fn(ctx: &StorageContext) -> Result<Vec<Thought>, StorageError>`",
        output_message: "this `fetch_thoughts` callback resolves to `{Self}`, expected `Result<Vec<Thought>, StorageError>`",
        output_label: "expected `Result<Vec<Thought>, StorageError>`",
        exists: FetchThoughtsExists,
        exists_message: "`{State}` has no method `fetch_thoughts`",
        exists_label: "`self.fetch_thoughts` names a method of `{State}`, and there is none",
        exists_note: "add `async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `fetch_thoughts` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Thought>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError>`",
    },
    fetch_tool_calls {
        callback: FetchToolCallsCallback,
        method: FetchToolCallsMethod,
        future: FetchToolCallsFuture,
        parameters: (),
        output: Vec<ToolCall>,
        callback_message: "`{Self}` is not a valid `fetch_tool_calls` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: FetchToolCallsParameters,
        output_check: FetchToolCallsOutput,
        parameters_message: "`{Self}` does not take the parameters of a `fetch_tool_calls` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `fetch_tool_calls` callback is `async fn(ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
        output_message: "this `fetch_tool_calls` callback resolves to `{Self}`, expected `Result<Vec<ToolCall>, StorageError>`",
        output_label: "expected `Result<Vec<ToolCall>, StorageError>`",
        exists: FetchToolCallsExists,
        exists_message: "`{State}` has no method `fetch_tool_calls`",
        exists_label: "`self.fetch_tool_calls` names a method of `{State}`, and there is none",
        exists_note: "add `async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `fetch_tool_calls` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
    },
    fetch_tools {
        callback: FetchToolsCallback,
        method: FetchToolsMethod,
        future: FetchToolsFuture,
        parameters: (),
        output: Vec<Tool>,
        callback_message: "`{Self}` is not a valid `fetch_tools` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Tool>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: FetchToolsParameters,
        output_check: FetchToolsOutput,
        parameters_message: "`{Self}` does not take the parameters of a `fetch_tools` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `fetch_tools` callback is `async fn(ctx: &StorageContext) -> Result<Vec<Tool>, StorageError>`",
        output_message: "this `fetch_tools` callback resolves to `{Self}`, expected `Result<Vec<Tool>, StorageError>`",
        output_label: "expected `Result<Vec<Tool>, StorageError>`",
        exists: FetchToolsExists,
        exists_message: "`{State}` has no method `fetch_tools`",
        exists_label: "`self.fetch_tools` names a method of `{State}`, and there is none",
        exists_note: "add `async fn fetch_tools(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `fetch_tools` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Tool>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError>`",
    },
    fetch_retrievables {
        callback: FetchRetrievablesCallback,
        method: FetchRetrievablesMethod,
        future: FetchRetrievablesFuture,
        parameters: (),
        output: Vec<Retrievable>,
        callback_message: "`{Self}` is not a valid `fetch_retrievables` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: FetchRetrievablesParameters,
        output_check: FetchRetrievablesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `fetch_retrievables` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `fetch_retrievables` callback is `async fn(ctx: &StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
        output_message: "this `fetch_retrievables` callback resolves to `{Self}`, expected `Result<Vec<Retrievable>, StorageError>`",
        output_label: "expected `Result<Vec<Retrievable>, StorageError>`",
        exists: FetchRetrievablesExists,
        exists_message: "`{State}` has no method `fetch_retrievables`",
        exists_label: "`self.fetch_retrievables` names a method of `{State}`, and there is none",
        exists_note: "add `async fn fetch_retrievables(&self, ctx: &StorageContext) -> Result<Vec<Retrievable>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `fetch_retrievables` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
    },
    refresh_standing_instructions {
        callback: RefreshStandingInstructionsCallback,
        method: RefreshStandingInstructionsMethod,
        future: RefreshStandingInstructionsFuture,
        parameters: (),
        output: Vec<StandingInstruction>,
        callback_message: "`{Self}` is not a valid `refresh_standing_instructions` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: RefreshStandingInstructionsParameters,
        output_check: RefreshStandingInstructionsOutput,
        parameters_message: "`{Self}` does not take the parameters of a `refresh_standing_instructions` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext)`",
        parameters_note: "a `refresh_standing_instructions` callback is `async fn(ctx: &StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
        output_message: "this `refresh_standing_instructions` callback resolves to `{Self}`, expected `Result<Vec<StandingInstruction>, StorageError>`",
        output_label: "expected `Result<Vec<StandingInstruction>, StorageError>`",
        exists: RefreshStandingInstructionsExists,
        exists_message: "`{State}` has no method `refresh_standing_instructions`",
        exists_label: "`self.refresh_standing_instructions` names a method of `{State}`, and there is none",
        exists_note: "add `async fn refresh_standing_instructions(&self, ctx: &StorageContext) -> Result<Vec<StandingInstruction>, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `refresh_standing_instructions` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
    },
    store_memory {
        callback: StoreMemoryCallback,
        method: StoreMemoryMethod,
        future: StoreMemoryFuture,
        parameters: (memory: Memory),
        output: (),
        callback_message: "`{Self}` is not a valid `store_memory` callback",
        callback_label: "expected `async fn(&StorageContext, Memory) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, memory| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreMemoryParameters,
        output_check: StoreMemoryOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_memory` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, memory: Memory)`",
        parameters_note: "a `store_memory` callback is `async fn(ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>`",
        output_message: "this `store_memory` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: StoreMemoryExists,
        exists_message: "`{State}` has no method `store_memory`",
        exists_label: "`self.store_memory` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_memory` method",
        method_label: "expected `async fn(&self, &StorageContext, Memory) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>`",
    },
    mutate_memory {
        callback: MutateMemoryCallback,
        method: MutateMemoryMethod,
        future: MutateMemoryFuture,
        parameters: (memory: Memory),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_memory` callback",
        callback_label: "expected `async fn(&StorageContext, Memory) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, memory| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: MutateMemoryParameters,
        output_check: MutateMemoryOutput,
        parameters_message: "`{Self}` does not take the parameters of a `mutate_memory` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, memory: Memory)`",
        parameters_note: "a `mutate_memory` callback is `async fn(ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>`",
        output_message: "this `mutate_memory` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: MutateMemoryExists,
        exists_message: "`{State}` has no method `mutate_memory`",
        exists_label: "`self.mutate_memory` names a method of `{State}`, and there is none",
        exists_note: "add `async fn mutate_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `mutate_memory` method",
        method_label: "expected `async fn(&self, &StorageContext, Memory) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>`",
    },
    delete_memory {
        callback: DeleteMemoryCallback,
        method: DeleteMemoryMethod,
        future: DeleteMemoryFuture,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_memory` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: DeleteMemoryParameters,
        output_check: DeleteMemoryOutput,
        parameters_message: "`{Self}` does not take the parameters of a `delete_memory` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String)`",
        parameters_note: "a `delete_memory` callback is `async fn(ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
        output_message: "this `delete_memory` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: DeleteMemoryExists,
        exists_message: "`{State}` has no method `delete_memory`",
        exists_label: "`self.delete_memory` names a method of `{State}`, and there is none",
        exists_note: "add `async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `delete_memory` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_message {
        callback: StoreMessageCallback,
        method: StoreMessageMethod,
        future: StoreMessageFuture,
        parameters: (message: Message),
        output: (),
        callback_message: "`{Self}` is not a valid `store_message` callback",
        callback_label: "expected `async fn(&StorageContext, Message) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, message| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreMessageParameters,
        output_check: StoreMessageOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_message` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, message: Message)`",
        parameters_note: "a `store_message` callback is `async fn(ctx: &StorageContext, message: Message) -> Result<(), StorageError>`",
        output_message: "this `store_message` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: StoreMessageExists,
        exists_message: "`{State}` has no method `store_message`",
        exists_label: "`self.store_message` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_message(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_message` method",
        method_label: "expected `async fn(&self, &StorageContext, Message) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError>`",
    },
    mutate_message {
        callback: MutateMessageCallback,
        method: MutateMessageMethod,
        future: MutateMessageFuture,
        parameters: (message: Message),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_message` callback",
        callback_label: "expected `async fn(&StorageContext, Message) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, message| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: MutateMessageParameters,
        output_check: MutateMessageOutput,
        parameters_message: "`{Self}` does not take the parameters of a `mutate_message` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, message: Message)`",
        parameters_note: "a `mutate_message` callback is `async fn(ctx: &StorageContext, message: Message) -> Result<(), StorageError>`",
        output_message: "this `mutate_message` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: MutateMessageExists,
        exists_message: "`{State}` has no method `mutate_message`",
        exists_label: "`self.mutate_message` names a method of `{State}`, and there is none",
        exists_note: "add `async fn mutate_message(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `mutate_message` method",
        method_label: "expected `async fn(&self, &StorageContext, Message) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError>`",
    },
    delete_message {
        callback: DeleteMessageCallback,
        method: DeleteMessageMethod,
        future: DeleteMessageFuture,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_message` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: DeleteMessageParameters,
        output_check: DeleteMessageOutput,
        parameters_message: "`{Self}` does not take the parameters of a `delete_message` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String)`",
        parameters_note: "a `delete_message` callback is `async fn(ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
        output_message: "this `delete_message` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: DeleteMessageExists,
        exists_message: "`{State}` has no method `delete_message`",
        exists_label: "`self.delete_message` names a method of `{State}`, and there is none",
        exists_note: "add `async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `delete_message` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_thought {
        callback: StoreThoughtCallback,
        method: StoreThoughtMethod,
        future: StoreThoughtFuture,
        parameters: (thought: Thought),
        output: (),
        callback_message: "`{Self}` is not a valid `store_thought` callback",
        callback_label: "expected `async fn(&StorageContext, Thought) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, thought| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreThoughtParameters,
        output_check: StoreThoughtOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_thought` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, thought: Thought)`",
        parameters_note: "a `store_thought` callback is `async fn(ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>`",
        output_message: "this `store_thought` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: StoreThoughtExists,
        exists_message: "`{State}` has no method `store_thought`",
        exists_label: "`self.store_thought` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_thought(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_thought` method",
        method_label: "expected `async fn(&self, &StorageContext, Thought) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>`",
    },
    mutate_thought {
        callback: MutateThoughtCallback,
        method: MutateThoughtMethod,
        future: MutateThoughtFuture,
        parameters: (thought: Thought),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_thought` callback",
        callback_label: "expected `async fn(&StorageContext, Thought) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, thought| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: MutateThoughtParameters,
        output_check: MutateThoughtOutput,
        parameters_message: "`{Self}` does not take the parameters of a `mutate_thought` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, thought: Thought)`",
        parameters_note: "a `mutate_thought` callback is `async fn(ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>`",
        output_message: "this `mutate_thought` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: MutateThoughtExists,
        exists_message: "`{State}` has no method `mutate_thought`",
        exists_label: "`self.mutate_thought` names a method of `{State}`, and there is none",
        exists_note: "add `async fn mutate_thought(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `mutate_thought` method",
        method_label: "expected `async fn(&self, &StorageContext, Thought) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>`",
    },
    delete_thought {
        callback: DeleteThoughtCallback,
        method: DeleteThoughtMethod,
        future: DeleteThoughtFuture,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_thought` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: DeleteThoughtParameters,
        output_check: DeleteThoughtOutput,
        parameters_message: "`{Self}` does not take the parameters of a `delete_thought` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String)`",
        parameters_note: "a `delete_thought` callback is `async fn(ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
        output_message: "this `delete_thought` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: DeleteThoughtExists,
        exists_message: "`{State}` has no method `delete_thought`",
        exists_label: "`self.delete_thought` names a method of `{State}`, and there is none",
        exists_note: "add `async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `delete_thought` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_tool_call {
        callback: StoreToolCallCallback,
        method: StoreToolCallMethod,
        future: StoreToolCallFuture,
        parameters: (tool_call: ToolCall),
        output: (),
        callback_message: "`{Self}` is not a valid `store_tool_call` callback",
        callback_label: "expected `async fn(&StorageContext, ToolCall) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, tool_call| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreToolCallParameters,
        output_check: StoreToolCallOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_tool_call` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, tool_call: ToolCall)`",
        parameters_note: "a `store_tool_call` callback is `async fn(ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>`",
        output_message: "this `store_tool_call` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: StoreToolCallExists,
        exists_message: "`{State}` has no method `store_tool_call`",
        exists_label: "`self.store_tool_call` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_tool_call(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_tool_call` method",
        method_label: "expected `async fn(&self, &StorageContext, ToolCall) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>`",
    },
    mutate_tool_call {
        callback: MutateToolCallCallback,
        method: MutateToolCallMethod,
        future: MutateToolCallFuture,
        parameters: (tool_call: ToolCall),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_tool_call` callback",
        callback_label: "expected `async fn(&StorageContext, ToolCall) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, tool_call| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: MutateToolCallParameters,
        output_check: MutateToolCallOutput,
        parameters_message: "`{Self}` does not take the parameters of a `mutate_tool_call` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, tool_call: ToolCall)`",
        parameters_note: "a `mutate_tool_call` callback is `async fn(ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>`",
        output_message: "this `mutate_tool_call` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: MutateToolCallExists,
        exists_message: "`{State}` has no method `mutate_tool_call`",
        exists_label: "`self.mutate_tool_call` names a method of `{State}`, and there is none",
        exists_note: "add `async fn mutate_tool_call(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `mutate_tool_call` method",
        method_label: "expected `async fn(&self, &StorageContext, ToolCall) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>`",
    },
    delete_tool_call {
        callback: DeleteToolCallCallback,
        method: DeleteToolCallMethod,
        future: DeleteToolCallFuture,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_tool_call` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: DeleteToolCallParameters,
        output_check: DeleteToolCallOutput,
        parameters_message: "`{Self}` does not take the parameters of a `delete_tool_call` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String)`",
        parameters_note: "a `delete_tool_call` callback is `async fn(ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
        output_message: "this `delete_tool_call` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: DeleteToolCallExists,
        exists_message: "`{State}` has no method `delete_tool_call`",
        exists_label: "`self.delete_tool_call` names a method of `{State}`, and there is none",
        exists_note: "add `async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `delete_tool_call` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_retrievable {
        callback: StoreRetrievableCallback,
        method: StoreRetrievableMethod,
        future: StoreRetrievableFuture,
        parameters: (retrievable: Retrievable),
        output: (),
        callback_message: "`{Self}` is not a valid `store_retrievable` callback",
        callback_label: "expected `async fn(&StorageContext, Retrievable) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, retrievable| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreRetrievableParameters,
        output_check: StoreRetrievableOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_retrievable` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, retrievable: Retrievable)`",
        parameters_note: "a `store_retrievable` callback is `async fn(ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>`",
        output_message: "this `store_retrievable` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: StoreRetrievableExists,
        exists_message: "`{State}` has no method `store_retrievable`",
        exists_label: "`self.store_retrievable` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_retrievable(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_retrievable` method",
        method_label: "expected `async fn(&self, &StorageContext, Retrievable) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>`",
    },
    mutate_retrievable {
        callback: MutateRetrievableCallback,
        method: MutateRetrievableMethod,
        future: MutateRetrievableFuture,
        parameters: (retrievable: Retrievable),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_retrievable` callback",
        callback_label: "expected `async fn(&StorageContext, Retrievable) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, retrievable| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: MutateRetrievableParameters,
        output_check: MutateRetrievableOutput,
        parameters_message: "`{Self}` does not take the parameters of a `mutate_retrievable` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, retrievable: Retrievable)`",
        parameters_note: "a `mutate_retrievable` callback is `async fn(ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>`",
        output_message: "this `mutate_retrievable` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: MutateRetrievableExists,
        exists_message: "`{State}` has no method `mutate_retrievable`",
        exists_label: "`self.mutate_retrievable` names a method of `{State}`, and there is none",
        exists_note: "add `async fn mutate_retrievable(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `mutate_retrievable` method",
        method_label: "expected `async fn(&self, &StorageContext, Retrievable) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>`",
    },
    delete_retrievable {
        callback: DeleteRetrievableCallback,
        method: DeleteRetrievableMethod,
        future: DeleteRetrievableFuture,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_retrievable` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: DeleteRetrievableParameters,
        output_check: DeleteRetrievableOutput,
        parameters_message: "`{Self}` does not take the parameters of a `delete_retrievable` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String)`",
        parameters_note: "a `delete_retrievable` callback is `async fn(ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
        output_message: "this `delete_retrievable` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: DeleteRetrievableExists,
        exists_message: "`{State}` has no method `delete_retrievable`",
        exists_label: "`self.delete_retrievable` names a method of `{State}`, and there is none",
        exists_note: "add `async fn delete_retrievable(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `delete_retrievable` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_standing_instruction {
        callback: StoreStandingInstructionCallback,
        method: StoreStandingInstructionMethod,
        future: StoreStandingInstructionFuture,
        parameters: (instruction: StandingInstruction),
        output: (),
        callback_message: "`{Self}` is not a valid `store_standing_instruction` callback",
        callback_label: "expected `async fn(&StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, instruction| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreStandingInstructionParameters,
        output_check: StoreStandingInstructionOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_standing_instruction` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, instruction: StandingInstruction)`",
        parameters_note: "a `store_standing_instruction` callback is `async fn(ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
        output_message: "this `store_standing_instruction` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: StoreStandingInstructionExists,
        exists_message: "`{State}` has no method `store_standing_instruction`",
        exists_label: "`self.store_standing_instruction` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_standing_instruction(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_standing_instruction` method",
        method_label: "expected `async fn(&self, &StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
    },
    mutate_standing_instruction {
        callback: MutateStandingInstructionCallback,
        method: MutateStandingInstructionMethod,
        future: MutateStandingInstructionFuture,
        parameters: (instruction: StandingInstruction),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_standing_instruction` callback",
        callback_label: "expected `async fn(&StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, instruction| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: MutateStandingInstructionParameters,
        output_check: MutateStandingInstructionOutput,
        parameters_message: "`{Self}` does not take the parameters of a `mutate_standing_instruction` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, instruction: StandingInstruction)`",
        parameters_note: "a `mutate_standing_instruction` callback is `async fn(ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
        output_message: "this `mutate_standing_instruction` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: MutateStandingInstructionExists,
        exists_message: "`{State}` has no method `mutate_standing_instruction`",
        exists_label: "`self.mutate_standing_instruction` names a method of `{State}`, and there is none",
        exists_note: "add `async fn mutate_standing_instruction(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `mutate_standing_instruction` method",
        method_label: "expected `async fn(&self, &StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
    },
    delete_standing_instruction {
        callback: DeleteStandingInstructionCallback,
        method: DeleteStandingInstructionMethod,
        future: DeleteStandingInstructionFuture,
        parameters: (instruction: StandingInstruction),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_standing_instruction` callback",
        callback_label: "expected `async fn(&StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, instruction| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: DeleteStandingInstructionParameters,
        output_check: DeleteStandingInstructionOutput,
        parameters_message: "`{Self}` does not take the parameters of a `delete_standing_instruction` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, instruction: StandingInstruction)`",
        parameters_note: "a `delete_standing_instruction` callback is `async fn(ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
        output_message: "this `delete_standing_instruction` callback resolves to `{Self}`, expected `Result<(), StorageError>`",
        output_label: "expected `Result<(), StorageError>`",
        exists: DeleteStandingInstructionExists,
        exists_message: "`{State}` has no method `delete_standing_instruction`",
        exists_label: "`self.delete_standing_instruction` names a method of `{State}`, and there is none",
        exists_note: "add `async fn delete_standing_instruction(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `delete_standing_instruction` method",
        method_label: "expected `async fn(&self, &StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
    },
    store_media_bytes {
        callback: StoreMediaBytesCallback,
        method: StoreMediaBytesMethod,
        future: StoreMediaBytesFuture,
        parameters: (id: String, bytes: ConduitBytes),
        output: MediaReader,
        callback_message: "`{Self}` is not a valid `store_media_bytes` callback",
        callback_label: "expected `async fn(&StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id, bytes| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreMediaBytesParameters,
        output_check: StoreMediaBytesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_media_bytes` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String, bytes: ConduitBytes)`",
        parameters_note: "a `store_media_bytes` callback is `async fn(ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>`",
        output_message: "this `store_media_bytes` callback resolves to `{Self}`, expected `Result<MediaReader, StorageError>`",
        output_label: "expected `Result<MediaReader, StorageError>`",
        exists: StoreMediaBytesExists,
        exists_message: "`{State}` has no method `store_media_bytes`",
        exists_label: "`self.store_media_bytes` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_media_bytes(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_media_bytes` method",
        method_label: "expected `async fn(&self, &StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>`",
    },
    store_retrievable_bytes {
        callback: StoreRetrievableBytesCallback,
        method: StoreRetrievableBytesMethod,
        future: StoreRetrievableBytesFuture,
        parameters: (id: String, bytes: ConduitBytes),
        output: SpoolReader,
        callback_message: "`{Self}` is not a valid `store_retrievable_bytes` callback",
        callback_label: "expected `async fn(&StorageContext, String, ConduitBytes) -> Result<SpoolReader, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id, bytes| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        parameters_check: StoreRetrievableBytesParameters,
        output_check: StoreRetrievableBytesOutput,
        parameters_message: "`{Self}` does not take the parameters of a `store_retrievable_bytes` callback",
        parameters_label: "expected parameters `(ctx: &StorageContext, id: String, bytes: ConduitBytes)`",
        parameters_note: "a `store_retrievable_bytes` callback is `async fn(ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>`",
        output_message: "this `store_retrievable_bytes` callback resolves to `{Self}`, expected `Result<SpoolReader, StorageError>`",
        output_label: "expected `Result<SpoolReader, StorageError>`",
        exists: StoreRetrievableBytesExists,
        exists_message: "`{State}` has no method `store_retrievable_bytes`",
        exists_label: "`self.store_retrievable_bytes` names a method of `{State}`, and there is none",
        exists_note: "add `async fn store_retrievable_bytes(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>` to an `impl {State}` block",
        method_message: "`{Self}` is not a valid `store_retrievable_bytes` method",
        method_label: "expected `async fn(&self, &StorageContext, String, ConduitBytes) -> Result<SpoolReader, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>`",
    }
}

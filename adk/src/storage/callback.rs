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
//! A third trait per callback, `Missing<Name>Method`, guards `self.<name>`: see its docs.
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

macro_rules! checkers {
    ($(
        $name:ident {
            callback: $Callback:ident,
            method: $Method:ident,
            missing: $Missing:ident,
            parameters: ($($argument:ident: $Argument:ty),*),
            output: $Output:ty,
            callback_message: $callback_message:literal,
            callback_label: $callback_label:literal,
            callback_note: $callback_note:literal,
            method_message: $method_message:literal,
            method_label: $method_label:literal,
            method_note: $method_note:literal,
        }
    ),* $(,)?) => {$(
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
            "Brought into scope where `self.", stringify!($name), "` is resolved, so that when the adapter has ",
            "no inherent `", stringify!($name), "` the name resolves to this placeholder, which fails the `",
            stringify!($Method), "` check with a message naming the missing method, instead of to the ",
            "`StorageAdapter` method being generated (which would call itself forever)."
        )]
        pub trait $Missing {
            /// A placeholder whose signature matches no callback.
            fn $name() {}
        }

        impl<T: ?Sized> $Missing for T {}
    )*};
}

// The messages are spelt out because diagnostic attributes take only literals. A unit test in
// adk-macros checks every label against the signature table the macro uses.
checkers! {
    fetch_memories {
        callback: FetchMemoriesCallback,
        method: FetchMemoriesMethod,
        missing: MissingFetchMemoriesMethod,
        parameters: (),
        output: Vec<Memory>,
        callback_message: "`{Self}` is not a valid `fetch_memories` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Memory>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `fetch_memories` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Memory>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError>`",
    },
    fetch_messages {
        callback: FetchMessagesCallback,
        method: FetchMessagesMethod,
        missing: MissingFetchMessagesMethod,
        parameters: (),
        output: Vec<Message>,
        callback_message: "`{Self}` is not a valid `fetch_messages` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Message>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `fetch_messages` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Message>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError>`",
    },
    fetch_thoughts {
        callback: FetchThoughtsCallback,
        method: FetchThoughtsMethod,
        missing: MissingFetchThoughtsMethod,
        parameters: (),
        output: Vec<Thought>,
        callback_message: "`{Self}` is not a valid `fetch_thoughts` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Thought>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `fetch_thoughts` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Thought>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError>`",
    },
    fetch_tool_calls {
        callback: FetchToolCallsCallback,
        method: FetchToolCallsMethod,
        missing: MissingFetchToolCallsMethod,
        parameters: (),
        output: Vec<ToolCall>,
        callback_message: "`{Self}` is not a valid `fetch_tool_calls` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `fetch_tool_calls` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError>`",
    },
    fetch_tools {
        callback: FetchToolsCallback,
        method: FetchToolsMethod,
        missing: MissingFetchToolsMethod,
        parameters: (),
        output: Vec<Tool>,
        callback_message: "`{Self}` is not a valid `fetch_tools` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Tool>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `fetch_tools` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Tool>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError>`",
    },
    fetch_retrievables {
        callback: FetchRetrievablesCallback,
        method: FetchRetrievablesMethod,
        missing: MissingFetchRetrievablesMethod,
        parameters: (),
        output: Vec<Retrievable>,
        callback_message: "`{Self}` is not a valid `fetch_retrievables` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `fetch_retrievables` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<Retrievable>, StorageError>`",
    },
    refresh_standing_instructions {
        callback: RefreshStandingInstructionsCallback,
        method: RefreshStandingInstructionsMethod,
        missing: MissingRefreshStandingInstructionsMethod,
        parameters: (),
        output: Vec<StandingInstruction>,
        callback_message: "`{Self}` is not a valid `refresh_standing_instructions` callback",
        callback_label: "expected `async fn(&StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `refresh_standing_instructions` method",
        method_label: "expected `async fn(&self, &StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext) -> Result<Vec<StandingInstruction>, StorageError>`",
    },
    store_memory {
        callback: StoreMemoryCallback,
        method: StoreMemoryMethod,
        missing: MissingStoreMemoryMethod,
        parameters: (memory: Memory),
        output: (),
        callback_message: "`{Self}` is not a valid `store_memory` callback",
        callback_label: "expected `async fn(&StorageContext, Memory) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, memory| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_memory` method",
        method_label: "expected `async fn(&self, &StorageContext, Memory) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>`",
    },
    mutate_memory {
        callback: MutateMemoryCallback,
        method: MutateMemoryMethod,
        missing: MissingMutateMemoryMethod,
        parameters: (memory: Memory),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_memory` callback",
        callback_label: "expected `async fn(&StorageContext, Memory) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, memory| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `mutate_memory` method",
        method_label: "expected `async fn(&self, &StorageContext, Memory) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError>`",
    },
    delete_memory {
        callback: DeleteMemoryCallback,
        method: DeleteMemoryMethod,
        missing: MissingDeleteMemoryMethod,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_memory` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `delete_memory` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_message {
        callback: StoreMessageCallback,
        method: StoreMessageMethod,
        missing: MissingStoreMessageMethod,
        parameters: (message: Message),
        output: (),
        callback_message: "`{Self}` is not a valid `store_message` callback",
        callback_label: "expected `async fn(&StorageContext, Message) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, message| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_message` method",
        method_label: "expected `async fn(&self, &StorageContext, Message) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError>`",
    },
    mutate_message {
        callback: MutateMessageCallback,
        method: MutateMessageMethod,
        missing: MissingMutateMessageMethod,
        parameters: (message: Message),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_message` callback",
        callback_label: "expected `async fn(&StorageContext, Message) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, message| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `mutate_message` method",
        method_label: "expected `async fn(&self, &StorageContext, Message) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError>`",
    },
    delete_message {
        callback: DeleteMessageCallback,
        method: DeleteMessageMethod,
        missing: MissingDeleteMessageMethod,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_message` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `delete_message` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_thought {
        callback: StoreThoughtCallback,
        method: StoreThoughtMethod,
        missing: MissingStoreThoughtMethod,
        parameters: (thought: Thought),
        output: (),
        callback_message: "`{Self}` is not a valid `store_thought` callback",
        callback_label: "expected `async fn(&StorageContext, Thought) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, thought| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_thought` method",
        method_label: "expected `async fn(&self, &StorageContext, Thought) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>`",
    },
    mutate_thought {
        callback: MutateThoughtCallback,
        method: MutateThoughtMethod,
        missing: MissingMutateThoughtMethod,
        parameters: (thought: Thought),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_thought` callback",
        callback_label: "expected `async fn(&StorageContext, Thought) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, thought| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `mutate_thought` method",
        method_label: "expected `async fn(&self, &StorageContext, Thought) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError>`",
    },
    delete_thought {
        callback: DeleteThoughtCallback,
        method: DeleteThoughtMethod,
        missing: MissingDeleteThoughtMethod,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_thought` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `delete_thought` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_tool_call {
        callback: StoreToolCallCallback,
        method: StoreToolCallMethod,
        missing: MissingStoreToolCallMethod,
        parameters: (tool_call: ToolCall),
        output: (),
        callback_message: "`{Self}` is not a valid `store_tool_call` callback",
        callback_label: "expected `async fn(&StorageContext, ToolCall) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, tool_call| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_tool_call` method",
        method_label: "expected `async fn(&self, &StorageContext, ToolCall) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>`",
    },
    mutate_tool_call {
        callback: MutateToolCallCallback,
        method: MutateToolCallMethod,
        missing: MissingMutateToolCallMethod,
        parameters: (tool_call: ToolCall),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_tool_call` callback",
        callback_label: "expected `async fn(&StorageContext, ToolCall) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, tool_call| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `mutate_tool_call` method",
        method_label: "expected `async fn(&self, &StorageContext, ToolCall) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError>`",
    },
    delete_tool_call {
        callback: DeleteToolCallCallback,
        method: DeleteToolCallMethod,
        missing: MissingDeleteToolCallMethod,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_tool_call` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `delete_tool_call` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_retrievable {
        callback: StoreRetrievableCallback,
        method: StoreRetrievableMethod,
        missing: MissingStoreRetrievableMethod,
        parameters: (retrievable: Retrievable),
        output: (),
        callback_message: "`{Self}` is not a valid `store_retrievable` callback",
        callback_label: "expected `async fn(&StorageContext, Retrievable) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, retrievable| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_retrievable` method",
        method_label: "expected `async fn(&self, &StorageContext, Retrievable) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>`",
    },
    mutate_retrievable {
        callback: MutateRetrievableCallback,
        method: MutateRetrievableMethod,
        missing: MissingMutateRetrievableMethod,
        parameters: (retrievable: Retrievable),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_retrievable` callback",
        callback_label: "expected `async fn(&StorageContext, Retrievable) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, retrievable| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `mutate_retrievable` method",
        method_label: "expected `async fn(&self, &StorageContext, Retrievable) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError>`",
    },
    delete_retrievable {
        callback: DeleteRetrievableCallback,
        method: DeleteRetrievableMethod,
        missing: MissingDeleteRetrievableMethod,
        parameters: (id: String),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_retrievable` callback",
        callback_label: "expected `async fn(&StorageContext, String) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `delete_retrievable` method",
        method_label: "expected `async fn(&self, &StorageContext, String) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError>`",
    },
    store_standing_instruction {
        callback: StoreStandingInstructionCallback,
        method: StoreStandingInstructionMethod,
        missing: MissingStoreStandingInstructionMethod,
        parameters: (instruction: StandingInstruction),
        output: (),
        callback_message: "`{Self}` is not a valid `store_standing_instruction` callback",
        callback_label: "expected `async fn(&StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, instruction| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_standing_instruction` method",
        method_label: "expected `async fn(&self, &StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
    },
    mutate_standing_instruction {
        callback: MutateStandingInstructionCallback,
        method: MutateStandingInstructionMethod,
        missing: MissingMutateStandingInstructionMethod,
        parameters: (instruction: StandingInstruction),
        output: (),
        callback_message: "`{Self}` is not a valid `mutate_standing_instruction` callback",
        callback_label: "expected `async fn(&StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, instruction| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `mutate_standing_instruction` method",
        method_label: "expected `async fn(&self, &StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
    },
    delete_standing_instruction {
        callback: DeleteStandingInstructionCallback,
        method: DeleteStandingInstructionMethod,
        missing: MissingDeleteStandingInstructionMethod,
        parameters: (instruction: StandingInstruction),
        output: (),
        callback_message: "`{Self}` is not a valid `delete_standing_instruction` callback",
        callback_label: "expected `async fn(&StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, instruction| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `delete_standing_instruction` method",
        method_label: "expected `async fn(&self, &StorageContext, StandingInstruction) -> Result<(), StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError>`",
    },
    store_media_bytes {
        callback: StoreMediaBytesCallback,
        method: StoreMediaBytesMethod,
        missing: MissingStoreMediaBytesMethod,
        parameters: (id: String, bytes: ConduitBytes),
        output: MediaReader,
        callback_message: "`{Self}` is not a valid `store_media_bytes` callback",
        callback_label: "expected `async fn(&StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id, bytes| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_media_bytes` method",
        method_label: "expected `async fn(&self, &StorageContext, String, ConduitBytes) -> Result<MediaReader, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError>`",
    },
    store_retrievable_bytes {
        callback: StoreRetrievableBytesCallback,
        method: StoreRetrievableBytesMethod,
        missing: MissingStoreRetrievableBytesMethod,
        parameters: (id: String, bytes: ConduitBytes),
        output: SpoolReader,
        callback_message: "`{Self}` is not a valid `store_retrievable_bytes` callback",
        callback_label: "expected `async fn(&StorageContext, String, ConduitBytes) -> Result<SpoolReader, StorageError>`",
        callback_note: "write an `async fn` with this signature, a closure `|ctx, id, bytes| async move {{ .. }}`, or `self.method_name` to call a method of the adapter",
        method_message: "`{Self}` is not a valid `store_retrievable_bytes` method",
        method_label: "expected `async fn(&self, &StorageContext, String, ConduitBytes) -> Result<SpoolReader, StorageError>`",
        method_note: "`self.method_name` calls a method defined in an `impl` block of the adapter: `async fn method_name(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError>`",
    }
}

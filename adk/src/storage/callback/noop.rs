//! The `..noop` methods `storage_adapter!` fills in.

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
    (@method read_media_bytes) => {
        fn read_media_bytes(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<::core::option::Option<$crate::storage::callback::MediaReader>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::read_media_bytes($crate::storage::callback::noop(), ctx, id)
        }
    };
    (@method read_retrievable_bytes) => {
        fn read_retrievable_bytes(&self, ctx: &$crate::storage::StorageContext, id: ::std::string::String) -> impl ::core::future::Future<
            Output = ::core::result::Result<::core::option::Option<$crate::storage::callback::SpoolReader>, $crate::storage::StorageError>,
        > + ::core::marker::Send {
            $crate::storage::StorageAdapter::read_retrievable_bytes($crate::storage::callback::noop(), ctx, id)
        }
    };
}

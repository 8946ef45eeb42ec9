//! The storage methods both contexts offer, delegating to the adapter.
//!
//! One macro writes them for both contexts so the two cannot drift apart. Each write persists
//! first and, only when the adapter succeeded, records the change through the context's
//! `record_change` (the turn applies it; a dispatch applies it and queues it for the turn).

macro_rules! storage_methods {
    ($context:ty) => {
        impl $context {
            $crate::context::storage_methods::storage_methods!(@fetch
                fetch_memories -> Memory, "memories",
                fetch_messages -> Message, "messages",
                fetch_thoughts -> Thought, "thoughts",
                fetch_tool_calls -> ToolCall, "tool calls",
                fetch_tools -> Tool, "tools the model may call (supplementary to the runner's)",
                fetch_retrievables -> Retrievable, "retrievables",
                refresh_standing_instructions -> StandingInstruction, "standing instructions"
            );
            $crate::context::storage_methods::storage_methods!(@window
                fetch_memories_within -> Memory, fetch_memories, "memories",
                fetch_messages_within -> Message, fetch_messages, "messages",
                fetch_thoughts_within -> Thought, fetch_thoughts, "thoughts",
                fetch_tool_calls_within -> ToolCall, fetch_tool_calls, "tool calls",
                fetch_retrievables_within -> Retrievable, fetch_retrievables, "retrievables"
            );
            $crate::context::storage_methods::storage_methods!(@record
                Message, message, "message", store_message, mutate_message, delete_message;
                Memory, memory, "memory", store_memory, mutate_memory, delete_memory;
                Thought, thought, "thought", store_thought, mutate_thought, delete_thought;
                ToolCall, tool_call, "tool call", store_tool_call, mutate_tool_call, delete_tool_call;
                Retrievable, retrievable, "retrievable", store_retrievable, mutate_retrievable, delete_retrievable
            );

            /// Persists a standing instruction, then adds it to `standing_instructions`.
            pub async fn store_standing_instruction(
                &mut self,
                instruction: $crate::primitives::StandingInstruction,
            ) -> Result<(), $crate::storage::StorageError> {
                let shared = ::std::sync::Arc::clone(&self.shared);
                shared
                    .storage
                    .store_standing_instruction(&shared.storage_context, instruction.clone())
                    .await?;
                self.record_change($crate::context::write_queue::Delta::StoreInstruction(instruction));
                Ok(())
            }

            /// Persists a changed standing instruction (the adapter receives exactly this value).
            pub async fn mutate_standing_instruction(
                &mut self,
                instruction: $crate::primitives::StandingInstruction,
            ) -> Result<(), $crate::storage::StorageError> {
                let shared = ::std::sync::Arc::clone(&self.shared);
                shared
                    .storage
                    .mutate_standing_instruction(&shared.storage_context, instruction.clone())
                    .await?;
                self.record_change($crate::context::write_queue::Delta::MutateInstruction(instruction));
                Ok(())
            }

            /// Deletes a standing instruction, identified by its value, then removes it from
            /// `standing_instructions`.
            pub async fn delete_standing_instruction(
                &mut self,
                instruction: $crate::primitives::StandingInstruction,
            ) -> Result<(), $crate::storage::StorageError> {
                let shared = ::std::sync::Arc::clone(&self.shared);
                shared
                    .storage
                    .delete_standing_instruction(&shared.storage_context, instruction.clone())
                    .await?;
                self.record_change($crate::context::write_queue::Delta::DeleteInstruction(instruction));
                Ok(())
            }

            /// Routes media bytes into storage and returns a reader over them. A pure conduit:
            /// no collection changes until you store the primitive that owns the media.
            pub async fn store_media_bytes(
                &self,
                id: impl Into<String>,
                bytes: impl Into<$crate::bytes::ConduitBytes>,
            ) -> Result<$crate::bytes::MediaReader, $crate::storage::StorageError> {
                self.shared
                    .storage
                    .store_media_bytes(&self.shared.storage_context, id.into(), bytes.into())
                    .await
            }

            /// Routes large retrievable text into storage and returns a spool reader over it. A
            /// pure conduit: wrap the reader in a `SpooledArtifact` and store the retrievable.
            pub async fn store_retrievable_bytes(
                &self,
                id: impl Into<String>,
                bytes: impl Into<$crate::bytes::ConduitBytes>,
            ) -> Result<$crate::bytes::SpoolReader, $crate::storage::StorageError> {
                self.shared
                    .storage
                    .store_retrievable_bytes(&self.shared.storage_context, id.into(), bytes.into())
                    .await
            }
        }
    };
    (@fetch $($method:ident -> $primitive:ident, $what:literal),*) => {$(
        #[doc = concat!("Asks the storage adapter for the conversation's ", $what, ".")]
        ///
        /// Never called by the runner and never added to a collection by itself: add what you
        /// want the model to see.
        pub async fn $method(
            &self,
        ) -> Result<Vec<$crate::primitives::$primitive>, $crate::storage::StorageError> {
            self.shared.storage.$method(&self.shared.storage_context).await
        }
    )*};
    (@window $($method:ident -> $primitive:ident, $fetch:ident, $what:literal),*) => {$(
        #[doc = concat!("Asks the storage adapter for a window of the conversation's ", $what, " (say, the last 20), oldest first.")]
        ///
        /// The window travels on the `StorageContext` the adapter receives
        /// (`StorageContext::fetch_window`); an adapter that honours it (`NoopStorage`,
        /// `SqliteStorage`) reads only the window, and whatever an adapter returns is trimmed to
        /// it here. Like every fetch, never called by the runner: add what you want to the
        /// collection.
        pub async fn $method(
            &self,
            window: $crate::storage::FetchWindow,
        ) -> Result<Vec<$crate::primitives::$primitive>, $crate::storage::StorageError> {
            if window.is_all() {
                return self.$fetch().await;
            }
            let storage_context = self.shared.storage_context.clone().with_fetch_window(window);
            let records = self.shared.storage.$fetch(&storage_context).await?;
            Ok(storage_context.fetch_window().apply(records))
        }
    )*};
    (@record $($primitive:ident, $argument:ident, $what:literal, $store:ident, $mutate:ident, $delete:ident);*) => {$(
        #[doc = concat!("Persists a new ", $what, ", then adds it to the collection.")]
        pub async fn $store(
            &mut self,
            $argument: $crate::primitives::$primitive,
        ) -> Result<(), $crate::storage::StorageError> {
            let shared = ::std::sync::Arc::clone(&self.shared);
            shared.storage.$store(&shared.storage_context, $argument.clone()).await?;
            self.record_change($crate::context::write_queue::Delta::$primitive(
                $crate::context::write_queue::Change::Store($argument),
            ));
            Ok(())
        }

        #[doc = concat!("Persists a changed ", $what, ", then replaces it in the collection where it stands.")]
        pub async fn $mutate(
            &mut self,
            $argument: $crate::primitives::$primitive,
        ) -> Result<(), $crate::storage::StorageError> {
            let shared = ::std::sync::Arc::clone(&self.shared);
            shared.storage.$mutate(&shared.storage_context, $argument.clone()).await?;
            self.record_change($crate::context::write_queue::Delta::$primitive(
                $crate::context::write_queue::Change::Mutate($argument),
            ));
            Ok(())
        }

        #[doc = concat!("Deletes a ", $what, " by id, then removes it from the collection.")]
        pub async fn $delete(
            &mut self,
            id: impl Into<String>,
        ) -> Result<(), $crate::storage::StorageError> {
            let id = id.into();
            let shared = ::std::sync::Arc::clone(&self.shared);
            shared.storage.$delete(&shared.storage_context, id.clone()).await?;
            self.record_change($crate::context::write_queue::Delta::$primitive(
                $crate::context::write_queue::Change::Delete(id),
            ));
            Ok(())
        }
    )*};
}

pub(crate) use storage_methods;

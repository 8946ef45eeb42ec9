//! The storage methods both contexts offer, delegating to the adapter.
//!
//! One macro writes them for both contexts so the two cannot drift apart. Each write persists
//! first and, only when the adapter succeeded, records the change through the context's
//! `record_change` (the turn applies it; a dispatch applies it and queues it for the turn).
//!
//! Tool calls and retrievables share one id space per turn: storing or mutating one under an id
//! the other kind holds is refused (`E_ARTIFACT_ID_COLLISION`) before anything is persisted.
//! A retrievable with static, non-inline text is auto-spooled (its text written through
//! `store_retrievable_bytes` and the record stored with a reader over it) on store, mutate and
//! fetch, as the original does; dynamic text and inline records are never spooled.

use crate::primitives::Retrievable;
use crate::storage::{SharedStorage, StorageContext, StorageError};

/// Auto-spooling (spec 5.6): static, non-inline text goes through the retrievable-bytes conduit
/// under the record's id, and the same record comes back with a reader over the stored bytes;
/// anything else comes back unchanged.
pub(crate) async fn auto_spool(
    storage: &SharedStorage,
    ctx: &StorageContext,
    retrievable: Retrievable,
) -> Result<Retrievable, StorageError> {
    match retrievable.spoolable_text() {
        Some(text) => {
            let reader = storage
                .store_retrievable_bytes(ctx, retrievable.id().to_owned(), text.into())
                .await?;
            Ok(retrievable.into_spooled(reader))
        }
        None => Ok(retrievable),
    }
}

/// What a context's retrievable fetch returns: refused if two records share an id (before any
/// bytes are written), otherwise every record auto-spooled.
pub(crate) async fn checked_and_spooled(
    storage: &SharedStorage,
    ctx: &StorageContext,
    fetched: Vec<Retrievable>,
) -> Result<Vec<Retrievable>, StorageError> {
    let mut seen = std::collections::HashSet::new();
    for retrievable in &fetched {
        if !seen.insert(retrievable.id()) {
            return Err(StorageError::DuplicateRetrievableId {
                id: retrievable.id().to_owned(),
            });
        }
    }
    let mut spooled = Vec::with_capacity(fetched.len());
    for retrievable in fetched {
        spooled.push(auto_spool(storage, ctx, retrievable).await?);
    }
    Ok(spooled)
}

macro_rules! storage_methods {
    ($context:ty) => {
        impl $context {
            $crate::context::storage_methods::storage_methods!(@fetch
                fetch_memories -> Memory, "memories",
                fetch_messages -> Message, "messages",
                fetch_thoughts -> Thought, "thoughts",
                fetch_tool_calls -> ToolCall, "tool calls",
                fetch_tools -> Tool, "tools the model may call (supplementary to the runner's)",
                refresh_standing_instructions -> StandingInstruction, "standing instructions"
            );
            $crate::context::storage_methods::storage_methods!(@window
                fetch_memories_within -> Memory, fetch_memories, "memories",
                fetch_messages_within -> Message, fetch_messages, "messages",
                fetch_thoughts_within -> Thought, fetch_thoughts, "thoughts",
                fetch_tool_calls_within -> ToolCall, fetch_tool_calls, "tool calls"
            );
            $crate::context::storage_methods::storage_methods!(@record
                Message, message, "message", store_message, mutate_message, delete_message, plain;
                Memory, memory, "memory", store_memory, mutate_memory, delete_memory, plain;
                Thought, thought, "thought", store_thought, mutate_thought, delete_thought, plain;
                ToolCall, tool_call, "tool call", store_tool_call, mutate_tool_call, delete_tool_call, tool_call;
                Retrievable, retrievable, "retrievable", store_retrievable, mutate_retrievable, delete_retrievable, retrievable
            );

            /// Asks the storage adapter for the conversation's retrievables, refusing a result
            /// that holds two records with one id (`Duplicate retrievable id: ...`, checked
            /// before any bytes are written), then auto-spools each one with static, non-inline
            /// text.
            ///
            /// Never called by the runner and never added to a collection by itself: add what you
            /// want the model to see.
            pub async fn fetch_retrievables(
                &self,
            ) -> Result<Vec<$crate::primitives::Retrievable>, $crate::storage::StorageError> {
                let shared = &self.shared;
                let fetched = shared.storage.fetch_retrievables(&shared.storage_context).await?;
                $crate::context::storage_methods::checked_and_spooled(
                    &shared.storage,
                    &shared.storage_context,
                    fetched,
                )
                .await
            }

            /// Asks the storage adapter for a window of the conversation's retrievables (say,
            /// the last 20), oldest first, checked and auto-spooled as
            /// [`fetch_retrievables`](Self::fetch_retrievables) does.
            ///
            /// The window travels on the `StorageContext` the adapter receives
            /// (`StorageContext::fetch_window`); whatever an adapter returns is trimmed to it
            /// here, before any bytes are spooled.
            pub async fn fetch_retrievables_within(
                &self,
                window: $crate::storage::FetchWindow,
            ) -> Result<Vec<$crate::primitives::Retrievable>, $crate::storage::StorageError> {
                if window.is_all() {
                    return self.fetch_retrievables().await;
                }
                let shared = &self.shared;
                let storage_context = shared.storage_context.clone().with_fetch_window(window);
                let fetched = shared.storage.fetch_retrievables(&storage_context).await?;
                let fetched = storage_context.fetch_window().apply(fetched);
                $crate::context::storage_methods::checked_and_spooled(
                    &shared.storage,
                    &shared.storage_context,
                    fetched,
                )
                .await
            }

            /// Replaces a group of tool calls: the calls named by `ids` leave storage and the
            /// `tool_calls` collection, and `replacements` take the place of the first of them
            /// (or go at the end when none was there), in order. For providers that number
            /// tool-call ids per response, so that a new answer's `call_0` does not collide with,
            /// or get the results of, an earlier `call_0`.
            ///
            /// A replacement whose id a retrievable of this turn holds is refused
            /// (`E_ARTIFACT_ID_COLLISION`) before anything is persisted. Persistence goes through
            /// the adapter's `replace_tool_call_group`: atomic when the adapter provides it,
            /// otherwise delete-then-store call by call, whose failure
            /// (`StorageError::ToolCallGroupReplacement`) names the ids already deleted and
            /// stored. The collection changes only once persistence succeeded.
            pub async fn replace_tool_call_group(
                &mut self,
                ids: impl IntoIterator<Item = impl Into<String>>,
                replacements: Vec<$crate::primitives::ToolCall>,
            ) -> Result<(), $crate::storage::StorageError> {
                let ids: Vec<String> = ids.into_iter().map(Into::into).collect();
                for call in &replacements {
                    if self.retrievables.contains(call.id()) {
                        return Err($crate::storage::StorageError::ArtifactIdCollision {
                            id: call.id().to_owned(),
                            existing: $crate::storage::Primitive::Retrievables,
                            refused: $crate::storage::Primitive::ToolCalls,
                        });
                    }
                }
                let shared = &self.shared;
                shared
                    .storage
                    .replace_tool_call_group(&shared.storage_context, ids.clone(), replacements.clone())
                    .await?;
                self.record_change($crate::context::write_queue::Delta::ReplaceToolCallGroup {
                    ids,
                    replacements,
                });
                Ok(())
            }

            /// Persists a standing instruction, then adds it to `standing_instructions`.
            pub async fn store_standing_instruction(
                &mut self,
                instruction: $crate::primitives::StandingInstruction,
            ) -> Result<(), $crate::storage::StorageError> {
                let shared = &self.shared;
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
                let shared = &self.shared;
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
                let shared = &self.shared;
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
    // What a store or mutate does before persisting, per kind of record.
    (@prepare plain, $self:ident, $shared:ident, $argument:ident) => {};
    (@prepare tool_call, $self:ident, $shared:ident, $argument:ident) => {
        if $self.retrievables.contains($argument.id()) {
            return Err($crate::storage::StorageError::ArtifactIdCollision {
                id: $argument.id().to_owned(),
                existing: $crate::storage::Primitive::Retrievables,
                refused: $crate::storage::Primitive::ToolCalls,
            });
        }
    };
    (@prepare retrievable, $self:ident, $shared:ident, $argument:ident) => {
        if $self.tool_calls.contains($argument.id()) {
            return Err($crate::storage::StorageError::ArtifactIdCollision {
                id: $argument.id().to_owned(),
                existing: $crate::storage::Primitive::ToolCalls,
                refused: $crate::storage::Primitive::Retrievables,
            });
        }
        let $argument = $crate::context::storage_methods::auto_spool(
            &$shared.storage,
            &$shared.storage_context,
            $argument,
        )
        .await?;
    };
    // How a mutate persists, per kind of record: a tool call that `execute_tool` ran under the
    // ledger takes its parked ledger result along, in one adapter call.
    (@mutate tool_call, $mutate:ident, $shared:ident, $argument:ident) => {
        match $crate::storage::ledger::take_parked(&$shared.storage_context, $argument.id()) {
            Some(result) => {
                $shared
                    .storage
                    .mutate_tool_call_with_result(&$shared.storage_context, $argument.clone(), result)
                    .await?
            }
            None => $shared.storage.$mutate(&$shared.storage_context, $argument.clone()).await?,
        }
    };
    (@mutate $other:ident, $mutate:ident, $shared:ident, $argument:ident) => {
        $shared.storage.$mutate(&$shared.storage_context, $argument.clone()).await?
    };
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
    (@record $($primitive:ident, $argument:ident, $what:literal, $store:ident, $mutate:ident, $delete:ident, $prepare:ident);*) => {$(
        #[doc = concat!("Persists a new ", $what, ", then adds it to the collection.")]
        pub async fn $store(
            &mut self,
            $argument: $crate::primitives::$primitive,
        ) -> Result<(), $crate::storage::StorageError> {
            let shared = &self.shared;
            $crate::context::storage_methods::storage_methods!(@prepare $prepare, self, shared, $argument);
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
            let shared = &self.shared;
            $crate::context::storage_methods::storage_methods!(@prepare $prepare, self, shared, $argument);
            $crate::context::storage_methods::storage_methods!(@mutate $prepare, $mutate, shared, $argument);
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
            let shared = &self.shared;
            shared.storage.$delete(&shared.storage_context, id.clone()).await?;
            self.record_change($crate::context::write_queue::Delta::$primitive(
                $crate::context::write_queue::Change::Delete(id),
            ));
            Ok(())
        }
    )*};
}

pub(crate) use storage_methods;

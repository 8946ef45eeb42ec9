//! A tool handler's way to storage: the storage half of
//! [`ToolInvocation`].
//!
//! The invocation is declared among the values, which know no storage; it carries the turn's
//! [`SharedStorage`] and [`StorageContext`] through the `InvocationStorage` trait it declares,
//! implemented here, and its storage methods are defined here.

use super::{NoopStorage, SharedStorage, StorageContext, StorageError};
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::primitives::{InvocationStorage, ToolInvocation, TurnStorage};

/// The conversation id of the storage context an invocation made outside a turn carries.
const STANDALONE_CONVERSATION: &str = "standalone-tool-invocation";

impl InvocationStorage for TurnStorage {
    type Storage = SharedStorage;
    type Context = StorageContext;

    fn standalone() -> (SharedStorage, StorageContext) {
        (
            SharedStorage::new(NoopStorage::new()),
            StorageContext::new(STANDALONE_CONVERSATION),
        )
    }
}

impl ToolInvocation {
    /// The same invocation persisting through `storage`, with `storage_context` handed to
    /// every storage call.
    ///
    /// ```
    /// use adk::primitives::ToolInvocation;
    /// use adk::storage::{NoopStorage, SharedStorage, StorageContext};
    ///
    /// let invocation = ToolInvocation::new("weather", "call-1")
    ///     .with_storage(SharedStorage::new(NoopStorage::new()), StorageContext::new("c-7"));
    /// assert_eq!(invocation.storage_context().conversation_id().as_str(), "c-7");
    /// ```
    pub fn with_storage(mut self, storage: SharedStorage, storage_context: StorageContext) -> Self {
        self.storage = storage;
        self.storage_context = storage_context;
        self
    }

    /// The turn's storage.
    pub fn storage(&self) -> &SharedStorage {
        &self.storage
    }

    /// What storage calls receive: conversation, turn, identity, cancellation.
    pub fn storage_context(&self) -> &StorageContext {
        &self.storage_context
    }

    /// Routes media bytes into storage and returns a reader over them; build a
    /// [`Media`](crate::primitives::Media) from the reader and return it, or store the record
    /// that owns it.
    ///
    /// ```
    /// use adk::primitives::ToolInvocation;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let invocation = ToolInvocation::new("camera", "call-1");
    /// let reader = invocation.store_media_bytes("photo-1", vec![0xff, 0xd8]).await?;
    /// # let _ = reader;
    /// # Ok::<(), adk::storage::StorageError>(())
    /// # }).unwrap();
    /// ```
    pub async fn store_media_bytes(
        &self,
        id: impl Into<String>,
        bytes: impl Into<ConduitBytes>,
    ) -> Result<MediaReader, StorageError> {
        self.storage
            .store_media_bytes(&self.storage_context, id.into(), bytes.into())
            .await
    }

    /// Routes large text into storage and returns a spool reader over it; wrap the reader in
    /// a [`SpooledArtifact`](crate::primitives::SpooledArtifact) and return it.
    pub async fn store_retrievable_bytes(
        &self,
        id: impl Into<String>,
        bytes: impl Into<ConduitBytes>,
    ) -> Result<SpoolReader, StorageError> {
        self.storage
            .store_retrievable_bytes(&self.storage_context, id.into(), bytes.into())
            .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_standalone_invocation_stores_media_bytes_in_memory() {
        let invocation = ToolInvocation::new("camera", "c");
        assert_eq!(invocation.dispatch_id(), None);
        assert_eq!(invocation.iteration(), None);
        let reader = invocation
            .store_media_bytes("photo", vec![1u8, 2, 3])
            .await
            .unwrap();
        assert!(!reader.is_detached());
    }
}

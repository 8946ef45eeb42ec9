//! The [`ByteStore`] contract.

use std::future::Future;

use super::{ByteStoreError, ConduitBytes};

/// A store of byte records keyed by id, handing back a reader for what it holds.
///
/// `write` replaces any record under the same id; text is stored as UTF-8; stream input is
/// consumed before the returned future resolves. `read` is `None` for an unknown id; `delete`
/// says whether something was removed.
///
/// ```
/// use adk::bytes::{ByteStore, InMemorySpoolStore};
///
/// async fn keep_twice<S: ByteStore>(store: &S) -> Result<S::Reader, adk::bytes::ByteStoreError> {
///     store.write("draft", "one".into()).await?;
///     store.write("draft", "two".into()).await
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = InMemorySpoolStore::new();
/// let reader = keep_twice(&store).await.unwrap();
/// assert_eq!(&reader.read_all().await.unwrap()[..], b"two");
/// # });
/// ```
pub trait ByteStore: Send + Sync {
    /// The reader handed back for stored bytes.
    type Reader: Clone + Send + Sync + 'static;

    /// Stores `bytes` under `id`, replacing what was there, and returns a reader over them.
    fn write(
        &self,
        id: &str,
        bytes: ConduitBytes,
    ) -> impl Future<Output = Result<Self::Reader, ByteStoreError>> + Send;

    /// A reader over the bytes stored under `id`, or `None`.
    fn read(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Self::Reader>, ByteStoreError>> + Send;

    /// Removes the bytes stored under `id`; `true` when something was removed.
    fn delete(&self, id: &str) -> impl Future<Output = Result<bool, ByteStoreError>> + Send;
}

//! [`InMemorySpoolStore`]: byte records held in process memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

use super::spool_reader::MemorySpool;
use super::{ByteStore, ByteStoreError, ConduitBytes, ReaderDescriptor, SpoolReader};

/// The descriptor store name of in-memory readers.
const STORE_NAME: &str = "in-memory";

/// A [`ByteStore`] keeping every record in memory. Clones share the same records.
///
/// Readers are snapshots: rewriting or deleting an id later does not change a reader already
/// handed out. Stream input is drained whole before `write` resolves (the bytes end up in memory
/// anyway); use [`FileSpoolStore`](super::FileSpoolStore) for payloads that should not.
///
/// ```
/// use adk::bytes::{ByteStore, InMemorySpoolStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = InMemorySpoolStore::new();
/// let before = store.write("page", "old".into()).await?;
/// store.write("page", "new".into()).await?;
/// assert_eq!(&before.read_all().await?[..], b"old");
/// let now = store.read("page").await?.expect("stored");
/// assert_eq!(&now.read_all().await?[..], b"new");
/// assert_eq!(store.len(), 1);
/// assert!(store.delete("page").await?);
/// assert!(store.is_empty());
/// # Ok::<(), adk::bytes::ByteStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct InMemorySpoolStore {
    records: Arc<Mutex<HashMap<String, Bytes>>>,
}

impl InMemorySpoolStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of stored records.
    pub fn len(&self) -> usize {
        self.records().len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.records().is_empty()
    }

    /// Removes every record (readers already handed out keep their snapshot).
    pub fn clear(&self) {
        self.records().clear();
    }

    /// The ids currently stored, in no particular order.
    pub fn ids(&self) -> Vec<String> {
        self.records().keys().cloned().collect()
    }

    fn records(&self) -> MutexGuard<'_, HashMap<String, Bytes>> {
        // The map is only touched by short, non-panicking sections; a poisoned lock still
        // holds consistent data, so recover it rather than fail every later call.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn reader(id: &str, bytes: Bytes) -> SpoolReader {
        SpoolReader::new(MemorySpool::new(
            id.to_owned(),
            bytes,
            Some(ReaderDescriptor::new(STORE_NAME, id)),
        ))
    }
}

impl ByteStore for InMemorySpoolStore {
    type Reader = SpoolReader;

    async fn write(&self, id: &str, bytes: ConduitBytes) -> Result<SpoolReader, ByteStoreError> {
        let bytes = bytes
            .collect()
            .await
            .map_err(|source| ByteStoreError::InputStream {
                id: id.to_owned(),
                source,
            })?;
        self.records().insert(id.to_owned(), bytes.clone());
        Ok(Self::reader(id, bytes))
    }

    async fn read(&self, id: &str) -> Result<Option<SpoolReader>, ByteStoreError> {
        let bytes = self.records().get(id).cloned();
        Ok(bytes.map(|bytes| Self::reader(id, bytes)))
    }

    async fn delete(&self, id: &str) -> Result<bool, ByteStoreError> {
        Ok(self.records().remove(id).is_some())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn binary_bytes_are_kept_byte_faithfully() {
        let store = InMemorySpoolStore::new();
        let payload = vec![0u8, 0xff, 0xfe, b'\n', 0x80];
        let reader = store.write("bin", payload.clone().into()).await.unwrap();
        assert_eq!(&reader.read_all().await.unwrap()[..], &payload[..]);
    }

    #[tokio::test]
    async fn a_reader_is_a_snapshot_that_survives_delete_and_clear() {
        let store = InMemorySpoolStore::new();
        let reader = store.write("a", "kept".into()).await.unwrap();
        store.delete("a").await.unwrap();
        store.clear();
        assert_eq!(&reader.read_all().await.unwrap()[..], b"kept");
    }

    #[tokio::test]
    async fn clones_share_records() {
        let store = InMemorySpoolStore::new();
        let clone = store.clone();
        store.write("shared", "x".into()).await.unwrap();
        assert!(clone.read("shared").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_failing_input_stream_stores_nothing() {
        let store = InMemorySpoolStore::new();
        let stream = ConduitBytes::from_stream(futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"partial")),
            Err(std::io::Error::other("network dropped")),
        ]));
        let error = store.write("broken", stream).await.unwrap_err();
        assert!(matches!(error, ByteStoreError::InputStream { ref id, .. } if id == "broken"));
        assert!(store.is_empty());
    }

    #[tokio::test]
    async fn deleting_an_unknown_id_reports_false() {
        assert!(!InMemorySpoolStore::new().delete("nothing").await.unwrap());
    }
}

//! [`InMemorySpoolStore`]: byte records held in process memory.

use std::collections::{BTreeMap, HashMap};
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
    records: Arc<Mutex<Records>>,
}

// The records, plus what a bounded store needs to forget the oldest first.
#[derive(Debug, Default)]
struct Records {
    by_id: HashMap<String, (u64, Bytes)>,
    // Write order: the sequence number of each id's current bytes.
    oldest_first: BTreeMap<u64, String>,
    next_sequence: u64,
    total_bytes: usize,
    byte_budget: Option<usize>,
}

impl Records {
    fn remove(&mut self, id: &str) -> bool {
        match self.by_id.remove(id) {
            Some((sequence, bytes)) => {
                self.oldest_first.remove(&sequence);
                self.total_bytes -= bytes.len();
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, id: &str, bytes: Bytes) {
        self.remove(id);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.total_bytes += bytes.len();
        self.by_id.insert(id.to_owned(), (sequence, bytes));
        self.oldest_first.insert(sequence, id.to_owned());
        let Some(budget) = self.byte_budget else {
            return;
        };
        while self.total_bytes > budget {
            let Some((_, oldest)) = self.oldest_first.pop_first() else {
                break;
            };
            if let Some((_, bytes)) = self.by_id.remove(&oldest) {
                self.total_bytes -= bytes.len();
            }
        }
    }
}

impl InMemorySpoolStore {
    /// An empty store with no limit: it keeps everything written until it is deleted or the
    /// last clone is dropped.
    ///
    /// ```
    /// assert!(adk::bytes::InMemorySpoolStore::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that keeps at most `max_bytes` bytes: a write that takes it over the
    /// budget first forgets the records written longest ago (a record larger than the whole
    /// budget is not kept at all). Readers already handed out are snapshots and keep working;
    /// only later [`read`](ByteStore::read)s of a forgotten id return `None`.
    ///
    /// ```
    /// use adk::bytes::{ByteStore, InMemorySpoolStore};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = InMemorySpoolStore::bounded(8);
    /// let first = store.write("first", "12345".into()).await?;
    /// store.write("second", "6789".into()).await?;
    /// assert!(store.read("first").await?.is_none());
    /// assert_eq!(&first.read_all().await?[..], b"12345");
    /// assert_eq!(store.total_bytes(), 4);
    /// # Ok::<(), adk::bytes::ByteStoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn bounded(max_bytes: usize) -> Self {
        Self {
            records: Arc::new(Mutex::new(Records {
                byte_budget: Some(max_bytes),
                ..Records::default()
            })),
        }
    }

    /// The most bytes this store keeps, or `None` when it is unbounded.
    ///
    /// ```
    /// use adk::bytes::InMemorySpoolStore;
    /// assert_eq!(InMemorySpoolStore::bounded(1024).byte_budget(), Some(1024));
    /// assert_eq!(InMemorySpoolStore::new().byte_budget(), None);
    /// ```
    pub fn byte_budget(&self) -> Option<usize> {
        self.records().byte_budget
    }

    /// How many bytes the kept records hold together.
    ///
    /// ```
    /// assert_eq!(adk::bytes::InMemorySpoolStore::new().total_bytes(), 0);
    /// ```
    pub fn total_bytes(&self) -> usize {
        self.records().total_bytes
    }

    /// How many records are stored.
    ///
    /// ```
    /// assert_eq!(adk::bytes::InMemorySpoolStore::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.records().by_id.len()
    }

    /// Whether the store holds no record.
    ///
    /// ```
    /// assert!(adk::bytes::InMemorySpoolStore::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.records().by_id.is_empty()
    }

    /// Removes every record. Readers already handed out keep their bytes.
    ///
    /// ```
    /// let store = adk::bytes::InMemorySpoolStore::new();
    /// store.clear();
    /// assert!(store.is_empty());
    /// ```
    pub fn clear(&self) {
        let mut records = self.records();
        records.by_id.clear();
        records.oldest_first.clear();
        records.total_bytes = 0;
    }

    /// The ids currently stored, in no particular order.
    ///
    /// ```
    /// assert!(adk::bytes::InMemorySpoolStore::new().ids().is_empty());
    /// ```
    pub fn ids(&self) -> Vec<String> {
        self.records().by_id.keys().cloned().collect()
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        // The map is only touched by short, non-panicking sections; a poisoned lock still
        // holds consistent data, so recover it rather than fail every later call.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `bytes` under the store key `key` and hands back a reader named `id`: a caller
    /// that keys one store by partition (`NoopStorage`) keeps its users' ids on the readers.
    pub(crate) async fn write_keyed(
        &self,
        key: &str,
        id: &str,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, ByteStoreError> {
        let bytes = bytes
            .collect()
            .await
            .map_err(|source| ByteStoreError::InputStream {
                id: id.to_owned(),
                source,
            })?;
        self.records().insert(key, bytes.clone());
        Ok(Self::reader(id, bytes))
    }

    /// A reader named `id` over the bytes under the store key `key`, if any.
    pub(crate) fn read_keyed(&self, key: &str, id: &str) -> Option<SpoolReader> {
        let bytes = self
            .records()
            .by_id
            .get(key)
            .map(|(_, bytes)| bytes.clone());
        bytes.map(|bytes| Self::reader(id, bytes))
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
        self.write_keyed(id, id, bytes).await
    }

    async fn read(&self, id: &str) -> Result<Option<SpoolReader>, ByteStoreError> {
        Ok(self.read_keyed(id, id))
    }

    async fn delete(&self, id: &str) -> Result<bool, ByteStoreError> {
        Ok(self.records().remove(id))
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

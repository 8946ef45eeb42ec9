//! [`SpoolReader`]: a cheap handle over line-oriented stored text, and the [`SpoolSource`] trait
//! that backs it.

use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::lines::{collect_lines, decode_line, for_each_line};
use super::{ByteStoreError, ByteStream, CHUNK_SIZE};

/// A serialisable handle naming where a reader's bytes live: which store and under which id.
///
/// Stores fill it in so a [`SpooledArtifact`](crate::primitives::SpooledArtifact) can be
/// persisted as a handle and re-attached to its bytes later.
///
/// ```
/// use adk::bytes::ReaderDescriptor;
/// let handle = ReaderDescriptor::new("file", "report-7");
/// assert_eq!(handle.store(), "file");
/// assert_eq!(handle.id(), "report-7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReaderDescriptor {
    store: String,
    id: String,
}

impl ReaderDescriptor {
    /// A handle for the bytes stored under `id` in the store called `store`.
    pub fn new(store: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            store: store.into(),
            id: id.into(),
        }
    }

    /// The kind of store, e.g. `"in-memory"` or `"file"`.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// The id the bytes are stored under.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// The backing of a [`SpoolReader`]. Implement it to serve stored text from your own storage.
///
/// Only [`id`](Self::id), [`byte_length`](Self::byte_length) and [`stream`](Self::stream) are
/// required; the line methods default to one streaming pass over the bytes. Lines follow the
/// `split('\n')` rule: `""` has no lines, `"a\nb\n"` has three (the last empty), `\r` is kept,
/// and invalid UTF-8 is decoded as U+FFFD.
///
/// ```
/// use adk::bytes::{ByteStoreError, ByteStream, SpoolReader, SpoolSource};
/// use futures_util::future::BoxFuture;
///
/// struct Greeting;
///
/// impl SpoolSource for Greeting {
///     fn id(&self) -> &str { "greeting" }
///     fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
///         Box::pin(async { Ok(11) })
///     }
///     fn stream(&self) -> ByteStream {
///         Box::pin(futures_util::stream::iter(vec![Ok(bytes::Bytes::from_static(b"hello\nworld"))]))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reader = SpoolReader::new(Greeting);
/// assert_eq!(reader.line(1).await.unwrap().as_deref(), Some("world"));
/// # });
/// ```
pub trait SpoolSource: Send + Sync + 'static {
    /// The id the bytes are stored under (used in error messages).
    fn id(&self) -> &str;

    /// The exact number of stored bytes.
    fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>>;

    /// A fresh stream over every stored byte, from the start.
    fn stream(&self) -> ByteStream;

    /// The number of lines.
    fn line_count(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
        Box::pin(async move {
            let mut count = 0;
            for_each_line(self.stream(), |index, _| {
                count = index + 1;
                true
            })
            .await
            .map_err(|source| stream_failure(self.id(), source))?;
            Ok(count)
        })
    }

    /// The decoded lines whose 0-based indexes fall in `range` (fewer when the text is shorter).
    fn lines(&self, range: Range<u64>) -> BoxFuture<'_, Result<Vec<String>, ByteStoreError>> {
        Box::pin(async move {
            collect_lines(self.stream(), range)
                .await
                .map_err(|source| stream_failure(self.id(), source))
        })
    }

    /// Every stored byte, unchanged (`\r\n` and a trailing newline are kept).
    fn read_all(&self) -> BoxFuture<'_, Result<Bytes, ByteStoreError>> {
        Box::pin(async move {
            super::ConduitBytes::Stream(self.stream())
                .collect()
                .await
                .map_err(|source| stream_failure(self.id(), source))
        })
    }

    /// A handle naming where the bytes live, if they can be found again by id.
    fn describe(&self) -> Option<ReaderDescriptor> {
        None
    }
}

fn stream_failure(id: &str, source: std::io::Error) -> ByteStoreError {
    // A reader's own errors travel through the stream as `io::Error`; unwrap them back.
    match source.downcast::<ByteStoreError>() {
        Ok(original) => original,
        Err(source) => ByteStoreError::Io {
            id: id.to_owned(),
            operation: "reading",
            source,
        },
    }
}

/// A cheaply cloneable handle over stored text, read line by line or as a whole.
///
/// Returned by [`ByteStore::write`](super::ByteStore::write) on a spool store and wrapped by
/// [`SpooledArtifact`](crate::primitives::SpooledArtifact). Reads are async because a file or a
/// database may sit behind it.
///
/// ```
/// use adk::bytes::SpoolReader;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reader = SpoolReader::from_bytes("doc", "one\r\ntwo\n");
/// assert_eq!(reader.line_count().await?, 3);
/// assert_eq!(reader.line(0).await?.as_deref(), Some("one\r"));
/// assert_eq!(reader.line(9).await?, None);
/// assert_eq!(&reader.read_all().await?[..], b"one\r\ntwo\n");
/// # Ok::<(), adk::bytes::ByteStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SpoolReader {
    source: Arc<dyn SpoolSource>,
    detached: bool,
}

impl SpoolReader {
    /// Wraps your own source.
    pub fn new(source: impl SpoolSource) -> Self {
        Self {
            source: Arc::new(source),
            detached: false,
        }
    }

    /// A reader over bytes held in memory (a snapshot: nothing else can change them).
    pub fn from_bytes(id: impl Into<String>, bytes: impl Into<Bytes>) -> Self {
        Self::new(MemorySpool::new(id.into(), bytes.into(), None))
    }

    /// A reader whose bytes are not available: every read fails with
    /// [`ByteStoreError::Detached`]. Deserialized artifacts start detached until you attach a
    /// reader from your store. [`describe`](Self::describe) still returns `descriptor`, so
    /// serializing the artifact again keeps its handle.
    ///
    /// ```
    /// use adk::bytes::{ReaderDescriptor, SpoolReader};
    ///
    /// let reader = SpoolReader::detached("report", Some(ReaderDescriptor::new("file", "report")));
    /// assert!(reader.is_detached());
    /// assert_eq!(reader.describe().unwrap().store(), "file");
    /// ```
    pub fn detached(id: impl Into<String>, descriptor: Option<ReaderDescriptor>) -> Self {
        Self {
            source: Arc::new(DetachedSpool {
                id: id.into(),
                descriptor,
            }),
            detached: true,
        }
    }

    /// The id the bytes are stored under.
    pub fn id(&self) -> &str {
        self.source.id()
    }

    /// Line `index` (0-based), without its `\n`; `None` past the end.
    pub async fn line(&self, index: u64) -> Result<Option<String>, ByteStoreError> {
        let end = index.saturating_add(1);
        Ok(self.source.lines(index..end).await?.into_iter().next())
    }

    /// The lines whose 0-based indexes fall in `range`, in one pass.
    pub async fn lines(&self, range: Range<u64>) -> Result<Vec<String>, ByteStoreError> {
        self.source.lines(range).await
    }

    /// The exact number of stored bytes.
    pub async fn byte_length(&self) -> Result<u64, ByteStoreError> {
        self.source.byte_length().await
    }

    /// The number of lines (`""` has none; `"a\n"` has two).
    pub async fn line_count(&self) -> Result<u64, ByteStoreError> {
        self.source.line_count().await
    }

    /// Every stored byte, unchanged.
    pub async fn read_all(&self) -> Result<Bytes, ByteStoreError> {
        self.source.read_all().await
    }

    /// A fresh stream over the stored bytes, chunk by chunk.
    pub fn stream(&self) -> ByteStream {
        self.source.stream()
    }

    /// Where the bytes live, if the source can say.
    pub fn describe(&self) -> Option<ReaderDescriptor> {
        self.source.describe()
    }

    /// Whether this reader has no bytes behind it (see [`SpoolReader::detached`]).
    pub fn is_detached(&self) -> bool {
        self.detached
    }
}

impl fmt::Debug for SpoolReader {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SpoolReader")
            .field("id", &self.id())
            .field("descriptor", &self.describe())
            .field("detached", &self.detached)
            .finish()
    }
}

struct DetachedSpool {
    id: String,
    descriptor: Option<ReaderDescriptor>,
}

impl DetachedSpool {
    fn error(&self) -> ByteStoreError {
        ByteStoreError::Detached {
            id: self.id.clone(),
        }
    }
}

impl SpoolSource for DetachedSpool {
    fn id(&self) -> &str {
        &self.id
    }

    fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
        Box::pin(async move { Err(self.error()) })
    }

    fn stream(&self) -> ByteStream {
        let error = self.error().into_io();
        Box::pin(futures_util::stream::once(async move { Err(error) }))
    }

    fn describe(&self) -> Option<ReaderDescriptor> {
        self.descriptor.clone()
    }
}

/// Text held in memory; line boundaries are found once, on first use.
pub(crate) struct MemorySpool {
    id: String,
    bytes: Bytes,
    newline_positions: OnceLock<Vec<usize>>,
    descriptor: Option<ReaderDescriptor>,
}

impl MemorySpool {
    pub(crate) fn new(id: String, bytes: Bytes, descriptor: Option<ReaderDescriptor>) -> Self {
        Self {
            id,
            bytes,
            newline_positions: OnceLock::new(),
            descriptor,
        }
    }

    fn newline_positions(&self) -> &[usize] {
        self.newline_positions.get_or_init(|| {
            self.bytes
                .iter()
                .enumerate()
                .filter(|(_, byte)| **byte == b'\n')
                .map(|(position, _)| position)
                .collect()
        })
    }

    fn line_count(&self) -> u64 {
        if self.bytes.is_empty() {
            0
        } else {
            self.newline_positions().len() as u64 + 1
        }
    }

    fn line_at(&self, index: u64) -> Option<String> {
        if index >= self.line_count() {
            return None;
        }
        let positions = self.newline_positions();
        let index = usize::try_from(index).ok()?;
        let start = match index.checked_sub(1) {
            None => 0,
            Some(previous) => positions.get(previous)? + 1,
        };
        let end = positions.get(index).copied().unwrap_or(self.bytes.len());
        Some(decode_line(&self.bytes[start..end]))
    }
}

impl SpoolSource for MemorySpool {
    fn id(&self) -> &str {
        &self.id
    }

    fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
        let length = self.bytes.len() as u64;
        Box::pin(async move { Ok(length) })
    }

    fn stream(&self) -> ByteStream {
        chunked_stream(self.bytes.clone())
    }

    fn line_count(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
        let count = MemorySpool::line_count(self);
        Box::pin(async move { Ok(count) })
    }

    fn lines(&self, range: Range<u64>) -> BoxFuture<'_, Result<Vec<String>, ByteStoreError>> {
        let lines = range.map_while(|index| self.line_at(index)).collect();
        Box::pin(async move { Ok(lines) })
    }

    fn read_all(&self) -> BoxFuture<'_, Result<Bytes, ByteStoreError>> {
        let bytes = self.bytes.clone();
        Box::pin(async move { Ok(bytes) })
    }

    fn describe(&self) -> Option<ReaderDescriptor> {
        self.descriptor.clone()
    }
}

/// Streams an in-memory buffer in [`CHUNK_SIZE`] slices without copying it.
pub(crate) fn chunked_stream(bytes: Bytes) -> ByteStream {
    let chunks: Vec<std::io::Result<Bytes>> = (0..bytes.len())
        .step_by(CHUNK_SIZE)
        .map(|start| Ok(bytes.slice(start..(start + CHUNK_SIZE).min(bytes.len()))))
        .collect();
    Box::pin(futures_util::stream::iter(chunks))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn line_out_of_range_is_none_not_an_error() {
        let reader = SpoolReader::from_bytes("a", "x\ny");
        assert_eq!(reader.line(2).await.unwrap(), None);
        assert_eq!(reader.line(u64::MAX).await.unwrap(), None);
    }

    #[tokio::test]
    async fn empty_text_has_zero_lines_and_no_line_zero() {
        let reader = SpoolReader::from_bytes("a", "");
        assert_eq!(reader.line_count().await.unwrap(), 0);
        assert_eq!(reader.line(0).await.unwrap(), None);
    }

    #[tokio::test]
    async fn byte_length_counts_bytes_not_characters() {
        let reader = SpoolReader::from_bytes("a", "é");
        assert_eq!(reader.byte_length().await.unwrap(), 2);
    }

    #[tokio::test]
    async fn a_detached_reader_fails_every_read_naming_its_id() {
        let reader = SpoolReader::detached("lost-7", Some(ReaderDescriptor::new("file", "lost-7")));
        assert!(reader.is_detached());
        let error = reader.read_all().await.unwrap_err();
        assert!(matches!(error, ByteStoreError::Detached { ref id } if id == "lost-7"));
        assert!(matches!(
            reader.line_count().await.unwrap_err(),
            ByteStoreError::Detached { .. }
        ));
    }

    #[tokio::test]
    async fn default_line_methods_stream_the_source_once() {
        struct Streamed;
        impl SpoolSource for Streamed {
            fn id(&self) -> &str {
                "streamed"
            }
            fn byte_length(&self) -> BoxFuture<'_, Result<u64, ByteStoreError>> {
                Box::pin(async { Ok(6) })
            }
            fn stream(&self) -> ByteStream {
                chunked_stream(Bytes::from_static(b"a\nb\nc\n"))
            }
        }
        let reader = SpoolReader::new(Streamed);
        assert_eq!(reader.line_count().await.unwrap(), 4);
        assert_eq!(reader.lines(1..3).await.unwrap(), vec!["b", "c"]);
        assert_eq!(&reader.read_all().await.unwrap()[..], b"a\nb\nc\n");
    }
}

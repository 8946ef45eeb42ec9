//! [`MediaReader`]: a cheap, replayable handle over media bytes, and the [`MediaSource`] trait
//! that backs it.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;

use super::spool_reader::chunked_stream;
use super::{ByteStoreError, ByteStream, ReaderDescriptor, SpoolReader};

/// The backing of a [`MediaReader`]. Implement it to stream media from your own storage.
///
/// ```
/// use adk::bytes::{ByteStream, MediaReader, MediaSource};
/// use futures_util::future::BoxFuture;
///
/// struct Pixel;
///
/// impl MediaSource for Pixel {
///     fn stream(&self) -> ByteStream {
///         Box::pin(futures_util::stream::iter(vec![Ok(bytes::Bytes::from_static(&[0xff]))]))
///     }
///     fn byte_length(&self) -> BoxFuture<'_, Option<u64>> {
///         Box::pin(async { Some(1) })
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reader = MediaReader::new(Pixel);
/// assert_eq!(&reader.read_all().await.unwrap()[..], &[0xff]);
/// # });
/// ```
pub trait MediaSource: Send + Sync + 'static {
    /// A fresh stream over the media bytes, from the start, every time it is called.
    fn stream(&self) -> ByteStream;

    /// The number of bytes, when known without reading them.
    fn byte_length(&self) -> BoxFuture<'_, Option<u64>>;

    /// A handle naming where the bytes live, if they can be found again by id.
    fn describe(&self) -> Option<ReaderDescriptor> {
        None
    }
}

/// A cheaply cloneable handle over media bytes; every [`stream`](Self::stream) starts over.
///
/// ```
/// use adk::bytes::MediaReader;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reader = MediaReader::from_bytes(vec![1u8, 2, 3]);
/// assert_eq!(reader.byte_length().await, Some(3));
/// assert_eq!(&reader.read_all().await.unwrap()[..], &[1, 2, 3]);
/// assert_eq!(&reader.read_all().await.unwrap()[..], &[1, 2, 3]);
/// # });
/// ```
#[derive(Clone)]
pub struct MediaReader {
    source: Arc<dyn MediaSource>,
    detached: bool,
}

impl MediaReader {
    /// Wraps your own source.
    pub fn new(source: impl MediaSource) -> Self {
        Self {
            source: Arc::new(source),
            detached: false,
        }
    }

    /// A reader over bytes held in memory.
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Self {
        Self::new(MemoryMedia {
            bytes: bytes.into(),
        })
    }

    /// A media reader over bytes a spool store holds, e.g. the reader a
    /// [`FileSpoolStore`](super::FileSpoolStore) returned.
    ///
    /// ```
    /// use adk::bytes::{MediaReader, SpoolReader};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let media = MediaReader::from_spool(SpoolReader::from_bytes("logo", vec![7u8, 8]));
    /// assert_eq!(media.byte_length().await, Some(2));
    /// # });
    /// ```
    pub fn from_spool(reader: SpoolReader) -> Self {
        Self::new(SpoolMedia { reader })
    }

    /// A reader whose bytes are not available: its stream fails with
    /// [`ByteStoreError::Detached`] naming `id`. Deserialized [`Media`](crate::primitives::Media)
    /// starts detached until you attach a reader from your store.
    pub fn detached(id: impl Into<String>) -> Self {
        Self {
            source: Arc::new(DetachedMedia { id: id.into() }),
            detached: true,
        }
    }

    /// A fresh stream over the bytes.
    pub fn stream(&self) -> ByteStream {
        self.source.stream()
    }

    /// The number of bytes, when the source knows it.
    pub async fn byte_length(&self) -> Option<u64> {
        self.source.byte_length().await
    }

    /// Every byte, gathered in memory.
    pub async fn read_all(&self) -> std::io::Result<Bytes> {
        super::ConduitBytes::Stream(self.stream()).collect().await
    }

    /// Where the bytes live, if the source can say.
    pub fn describe(&self) -> Option<ReaderDescriptor> {
        self.source.describe()
    }

    /// Whether this reader has no bytes behind it (see [`MediaReader::detached`]).
    pub fn is_detached(&self) -> bool {
        self.detached
    }
}

impl fmt::Debug for MediaReader {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("MediaReader")
            .field("descriptor", &self.describe())
            .field("detached", &self.detached)
            .finish()
    }
}

struct MemoryMedia {
    bytes: Bytes,
}

impl MediaSource for MemoryMedia {
    fn stream(&self) -> ByteStream {
        chunked_stream(self.bytes.clone())
    }

    fn byte_length(&self) -> BoxFuture<'_, Option<u64>> {
        let length = self.bytes.len() as u64;
        Box::pin(async move { Some(length) })
    }
}

struct SpoolMedia {
    reader: SpoolReader,
}

impl MediaSource for SpoolMedia {
    fn stream(&self) -> ByteStream {
        self.reader.stream()
    }

    fn byte_length(&self) -> BoxFuture<'_, Option<u64>> {
        Box::pin(async move { self.reader.byte_length().await.ok() })
    }

    fn describe(&self) -> Option<ReaderDescriptor> {
        self.reader.describe()
    }
}

struct DetachedMedia {
    id: String,
}

impl MediaSource for DetachedMedia {
    fn stream(&self) -> ByteStream {
        let error = ByteStoreError::Detached {
            id: self.id.clone(),
        }
        .into_io();
        Box::pin(futures_util::stream::once(async move { Err(error) }))
    }

    fn byte_length(&self) -> BoxFuture<'_, Option<u64>> {
        Box::pin(async { None })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_stream_replays_from_the_start() {
        let reader = MediaReader::from_bytes(Bytes::from_static(b"replay"));
        let first = reader.read_all().await.unwrap();
        let second = reader.read_all().await.unwrap();
        assert_eq!(first, second);
    }

    #[tokio::test]
    async fn a_detached_media_reader_fails_naming_its_id() {
        let reader = MediaReader::detached("photo-1");
        assert!(reader.is_detached());
        assert_eq!(reader.byte_length().await, None);
        let error = reader.read_all().await.unwrap_err();
        assert!(error.to_string().contains("photo-1"));
    }
}

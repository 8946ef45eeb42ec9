//! [`ConduitBytes`]: the three shapes bytes can take on their way into a store.

use std::fmt;
use std::io;
use std::pin::Pin;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use futures_util::StreamExt;

/// A boxed, sendable stream of byte chunks, as produced by readers and accepted by stores.
///
/// ```
/// use adk::bytes::ByteStream;
/// use bytes::Bytes;
///
/// let stream: ByteStream = Box::pin(futures_util::stream::iter(vec![Ok(Bytes::from("abc"))]));
/// # let _ = stream;
/// ```
pub type ByteStream = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// Bytes handed to a [`ByteStore`](super::ByteStore): text (stored as UTF-8), a byte buffer, or a
/// stream of chunks that the store consumes chunk by chunk.
///
/// ```
/// use adk::bytes::ConduitBytes;
///
/// let text: ConduitBytes = "hello".into();
/// let raw: ConduitBytes = vec![0u8, 159, 146, 150].into();
/// let streamed = ConduitBytes::from_stream(futures_util::stream::iter(vec![
///     Ok(bytes::Bytes::from_static(b"chunk one ")),
///     Ok(bytes::Bytes::from_static(b"chunk two")),
/// ]));
/// assert!(matches!(text, ConduitBytes::Text(_)));
/// assert!(matches!(raw, ConduitBytes::Bytes(_)));
/// assert!(matches!(streamed, ConduitBytes::Stream(_)));
/// ```
pub enum ConduitBytes {
    /// Text; stores encode it as UTF-8.
    Text(String),
    /// A complete byte buffer.
    Bytes(Bytes),
    /// Chunks arriving over time; an `Err` item aborts the write.
    Stream(ByteStream),
}

impl ConduitBytes {
    /// Wraps any sendable stream of byte chunks.
    ///
    /// ```
    /// use adk::bytes::ConduitBytes;
    /// let bytes = ConduitBytes::from_stream(futures_util::stream::empty());
    /// assert!(matches!(bytes, ConduitBytes::Stream(_)));
    /// ```
    pub fn from_stream<S>(stream: S) -> Self
    where
        S: Stream<Item = io::Result<Bytes>> + Send + 'static,
    {
        Self::Stream(Box::pin(stream))
    }

    /// Turns any shape into a stream of chunks, without copying text or buffers.
    ///
    /// ```
    /// use adk::bytes::ConduitBytes;
    /// use futures_util::StreamExt;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mut stream = ConduitBytes::from("abc").into_stream();
    /// assert_eq!(stream.next().await.unwrap().unwrap(), "abc");
    /// # });
    /// ```
    pub fn into_stream(self) -> ByteStream {
        match self {
            Self::Text(text) => single_chunk_stream(Bytes::from(text)),
            Self::Bytes(bytes) => single_chunk_stream(bytes),
            Self::Stream(stream) => stream,
        }
    }

    /// Gathers every byte into one buffer. Streams are drained; use this only where the whole
    /// payload is meant to live in memory (an in-memory store does exactly that).
    ///
    /// ```
    /// use adk::bytes::ConduitBytes;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let all = ConduitBytes::from("héllo").collect().await.unwrap();
    /// assert_eq!(&all[..], "héllo".as_bytes());
    /// # });
    /// ```
    pub async fn collect(self) -> io::Result<Bytes> {
        match self {
            Self::Text(text) => Ok(Bytes::from(text)),
            Self::Bytes(bytes) => Ok(bytes),
            Self::Stream(mut stream) => {
                let mut gathered = BytesMut::new();
                while let Some(chunk) = stream.next().await {
                    gathered.extend_from_slice(&chunk?);
                }
                Ok(gathered.freeze())
            }
        }
    }
}

fn single_chunk_stream(bytes: Bytes) -> ByteStream {
    if bytes.is_empty() {
        Box::pin(futures_util::stream::empty())
    } else {
        Box::pin(futures_util::stream::once(async move { Ok(bytes) }))
    }
}

impl fmt::Debug for ConduitBytes {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(text) => formatter
                .debug_struct("Text")
                .field("byte_length", &text.len())
                .finish(),
            Self::Bytes(bytes) => formatter
                .debug_struct("Bytes")
                .field("byte_length", &bytes.len())
                .finish(),
            Self::Stream(_) => formatter.write_str("Stream(..)"),
        }
    }
}

impl From<String> for ConduitBytes {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ConduitBytes {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<u8>> for ConduitBytes {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Bytes(Bytes::from(bytes))
    }
}

impl From<&[u8]> for ConduitBytes {
    fn from(bytes: &[u8]) -> Self {
        Self::Bytes(Bytes::copy_from_slice(bytes))
    }
}

impl From<Bytes> for ConduitBytes {
    fn from(bytes: Bytes) -> Self {
        Self::Bytes(bytes)
    }
}

impl From<ByteStream> for ConduitBytes {
    fn from(stream: ByteStream) -> Self {
        Self::Stream(stream)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[tokio::test]
    async fn text_is_collected_as_utf8() {
        let collected = ConduitBytes::from("ünï").collect().await.unwrap();
        assert_eq!(&collected[..], "ünï".as_bytes());
    }

    #[tokio::test]
    async fn stream_chunks_are_concatenated_in_order() {
        let bytes = ConduitBytes::from_stream(futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"ab")),
            Ok(Bytes::from_static(b"cd")),
        ]));
        assert_eq!(&bytes.collect().await.unwrap()[..], b"abcd");
    }

    #[tokio::test]
    async fn a_failing_stream_fails_the_collection() {
        let bytes = ConduitBytes::from_stream(futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"ab")),
            Err(io::Error::other("source broke")),
        ]));
        assert!(bytes.collect().await.is_err());
    }

    #[tokio::test]
    async fn empty_text_becomes_an_empty_stream() {
        let mut stream = ConduitBytes::from("").into_stream();
        assert!(stream.next().await.is_none());
    }
}

//! [`ByteStoreError`]: everything that can go wrong writing or reading stored bytes.

use std::io;

/// An error from a [`ByteStore`](super::ByteStore) or a reader.
///
/// Every variant names the id it concerns, so a log line is enough to find the record.
///
/// ```
/// use adk::bytes::{ByteStore, ByteStoreError, FileSpoolStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let folder = std::env::temp_dir().join(format!("adk-doc-store-error-{}", std::process::id()));
/// let store = FileSpoolStore::open(&folder).await.unwrap();
/// let refused = store.write("../escape", "x".into()).await.unwrap_err();
/// assert!(matches!(refused, ByteStoreError::InvalidId { .. }));
/// assert!(refused.to_string().contains("../escape"));
/// # std::fs::remove_dir_all(&folder).ok();
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ByteStoreError {
    /// The id cannot name a stored record (for a file store: it could leave the folder).
    #[error(
        "the byte store id {id:?} is refused: {reason}; use a plain name without path separators, \
         NUL bytes or `.`/`..`"
    )]
    InvalidId {
        /// The refused id.
        id: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The record was deleted (or never written) while a reader still pointed at it.
    #[error("the bytes stored under {id:?} are gone; write them again before reading")]
    Missing {
        /// The id whose bytes are gone.
        id: String,
    },
    /// The reader is detached: its bytes were not restored after deserialization.
    #[error(
        "the reader for {id:?} is detached (it was restored from stored metadata without its \
         bytes); attach a reader from your byte store before reading"
    )]
    Detached {
        /// The id of the detached reader.
        id: String,
    },
    /// The input stream handed to `write` failed; nothing was stored.
    #[error("the input stream for {id:?} failed, so nothing was stored: {source}")]
    InputStream {
        /// The id being written.
        id: String,
        /// The stream's error.
        #[source]
        source: io::Error,
    },
    /// Reading or writing the backing storage failed.
    #[error("{operation} {id:?} failed: {source}")]
    Io {
        /// The id concerned.
        id: String,
        /// What was being done, e.g. `"writing"`.
        operation: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A custom source (a [`SpoolSource`](super::SpoolSource) or
    /// [`MediaSource`](super::MediaSource) you implemented) failed.
    #[error("the byte source for {id:?} failed: {source}")]
    Source {
        /// The id concerned.
        id: String,
        /// The source's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ByteStoreError {
    /// Turns this error into an `io::Error`, for streams (whose items are `io::Result`).
    pub(crate) fn into_io(self) -> io::Error {
        let kind = match &self {
            Self::Io { source, .. } | Self::InputStream { source, .. } => source.kind(),
            Self::Missing { .. } => io::ErrorKind::NotFound,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }
}

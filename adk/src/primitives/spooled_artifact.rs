//! [`SpooledArtifact`]: large text kept in a byte store and read a slice at a time.

use std::ops::{Bound, RangeBounds};

use serde::{Deserialize, Serialize};

use crate::bytes::lines::{decode_line, for_each_line};
use crate::bytes::{ByteStoreError, ReaderDescriptor, SpoolReader};

/// Large text (a tool's long output, an extracted document) that stays in a byte store; a model
/// or your code reads it by lines instead of loading it whole.
///
/// Serialization writes a handle only: the reader's id, its [`ReaderDescriptor`] when the store
/// gives one, and size hints — never the text. Deserializing yields an artifact whose reader is
/// detached (reads fail with [`ByteStoreError::Detached`]) until you
/// [`attach`](Self::attach) a reader from your store, e.g. `store.read(handle_id)`.
///
/// ```
/// use adk::bytes::{ByteStore, InMemorySpoolStore};
/// use adk::primitives::SpooledArtifact;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = InMemorySpoolStore::new();
/// let reader = store.write("log", "boot\nwarn: disk\nok\nwarn: fan".into()).await?;
/// let artifact = SpooledArtifact::new(reader);
/// assert_eq!(artifact.head(1).await?, vec!["boot"]);
/// assert_eq!(artifact.tail(1).await?, vec!["warn: fan"]);
/// assert_eq!(artifact.cat(1..3).await?, vec!["warn: disk", "ok"]);
/// let warnings = artifact.grep("warn").await?;
/// assert_eq!(warnings.iter().map(|hit| hit.line_number).collect::<Vec<_>>(), vec![1, 3]);
///
/// let stored = serde_json::to_string(&artifact).unwrap();
/// let restored: SpooledArtifact = serde_json::from_str(&stored).unwrap();
/// assert!(restored.reader().is_detached());
/// let restored = restored.attach(store.read("log").await?.expect("still stored"));
/// assert_eq!(restored.line_count().await?, 4);
/// # Ok::<(), adk::bytes::ByteStoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "SpooledArtifactHandle", from = "SpooledArtifactHandle")]
pub struct SpooledArtifact {
    reader: SpoolReader,
    byte_length_hint: Option<u64>,
    line_count_hint: Option<u64>,
}

/// What a [`SpooledArtifact`] serializes to: where its text lives and how big it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpooledArtifactHandle {
    /// The id the text is stored under.
    pub id: String,
    /// The store's handle, when the reader gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<ReaderDescriptor>,
    /// The size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_length: Option<u64>,
    /// The number of lines, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_count: Option<u64>,
}

/// One line [`SpooledArtifact::grep`] matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepMatch {
    /// The line's 0-based index.
    pub line_number: u64,
    /// The whole line, without its newline.
    pub line: String,
}

impl SpooledArtifact {
    /// An artifact over `reader`, with no size hints.
    pub fn new(reader: SpoolReader) -> Self {
        Self {
            reader,
            byte_length_hint: None,
            line_count_hint: None,
        }
    }

    /// The same artifact remembering its size, so [`byte_length`](Self::byte_length) and
    /// [`line_count`](Self::line_count) answer without reading, and the serialized handle
    /// carries them.
    ///
    /// ```
    /// use adk::bytes::SpoolReader;
    /// use adk::primitives::SpooledArtifact;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let artifact = SpooledArtifact::new(SpoolReader::from_bytes("a", "x\ny"))
    ///     .with_size_hints(3, 2);
    /// assert_eq!(artifact.line_count().await.unwrap(), 2);
    /// # });
    /// ```
    pub fn with_size_hints(mut self, byte_length: u64, line_count: u64) -> Self {
        self.byte_length_hint = Some(byte_length);
        self.line_count_hint = Some(line_count);
        self
    }

    /// The same artifact reading from `reader` (e.g. after deserialization), keeping its hints.
    pub fn attach(mut self, reader: SpoolReader) -> Self {
        self.reader = reader;
        self
    }

    /// The reader the text comes from.
    pub fn reader(&self) -> &SpoolReader {
        &self.reader
    }

    /// The id the text is stored under.
    pub fn id(&self) -> &str {
        self.reader.id()
    }

    /// The first `count` lines.
    pub async fn head(&self, count: u64) -> Result<Vec<String>, ByteStoreError> {
        self.reader.lines(0..count).await
    }

    /// The last `count` lines.
    pub async fn tail(&self, count: u64) -> Result<Vec<String>, ByteStoreError> {
        let total = self.line_count().await?;
        self.reader.lines(total.saturating_sub(count)..total).await
    }

    /// Every line containing `pattern` as a plain substring (not a regular expression), with
    /// its index. Reads the text once, a chunk at a time.
    pub async fn grep(&self, pattern: &str) -> Result<Vec<GrepMatch>, ByteStoreError> {
        let mut matches = Vec::new();
        let needle = pattern.as_bytes();
        for_each_line(self.reader.stream(), |index, line| {
            if contains(line, needle) {
                matches.push(GrepMatch {
                    line_number: index,
                    line: decode_line(line),
                });
            }
            true
        })
        .await
        .map_err(|source| stream_error(self.id(), source))?;
        Ok(matches)
    }

    /// The lines whose 0-based indexes fall in `range` (`..` for all of them).
    pub async fn cat(&self, range: impl RangeBounds<u64>) -> Result<Vec<String>, ByteStoreError> {
        let start = match range.start_bound() {
            Bound::Included(start) => *start,
            Bound::Excluded(start) => start.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(end) => end.saturating_add(1),
            Bound::Excluded(end) => *end,
            Bound::Unbounded => u64::MAX,
        };
        self.reader.lines(start..end).await
    }

    /// The size in bytes (the hint when there is one).
    pub async fn byte_length(&self) -> Result<u64, ByteStoreError> {
        match self.byte_length_hint {
            Some(length) => Ok(length),
            None => self.reader.byte_length().await,
        }
    }

    /// The number of lines (the hint when there is one).
    pub async fn line_count(&self) -> Result<u64, ByteStoreError> {
        match self.line_count_hint {
            Some(count) => Ok(count),
            None => self.reader.line_count().await,
        }
    }

    /// The whole text, decoded as UTF-8 (invalid sequences become U+FFFD).
    pub async fn as_string(&self) -> Result<String, ByteStoreError> {
        let bytes = self.reader.read_all().await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The serializable handle of this artifact.
    pub fn handle(&self) -> SpooledArtifactHandle {
        SpooledArtifactHandle {
            id: self.reader.id().to_owned(),
            reader: self.reader.describe(),
            byte_length: self.byte_length_hint,
            line_count: self.line_count_hint,
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|window| window == needle)
}

fn stream_error(id: &str, source: std::io::Error) -> ByteStoreError {
    match source.downcast::<ByteStoreError>() {
        Ok(original) => original,
        Err(source) => ByteStoreError::Io {
            id: id.to_owned(),
            operation: "reading",
            source,
        },
    }
}

impl From<SpooledArtifact> for SpooledArtifactHandle {
    fn from(artifact: SpooledArtifact) -> Self {
        artifact.handle()
    }
}

impl From<SpooledArtifactHandle> for SpooledArtifact {
    fn from(handle: SpooledArtifactHandle) -> Self {
        Self {
            reader: SpoolReader::detached(handle.id, handle.reader),
            byte_length_hint: handle.byte_length,
            line_count_hint: handle.line_count,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    fn artifact(text: &'static str) -> SpooledArtifact {
        SpooledArtifact::new(SpoolReader::from_bytes("a", text))
    }

    #[tokio::test]
    async fn head_and_tail_stop_at_the_text_bounds() {
        let artifact = artifact("1\n2\n3");
        assert_eq!(artifact.head(10).await.unwrap(), vec!["1", "2", "3"]);
        assert_eq!(artifact.tail(2).await.unwrap(), vec!["2", "3"]);
        assert!(artifact.head(0).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn grep_matches_substrings_and_reports_line_indexes() {
        let hits = artifact("apple\nbanana\npineapple")
            .grep("apple")
            .await
            .unwrap();
        let numbers: Vec<u64> = hits.iter().map(|hit| hit.line_number).collect();
        assert_eq!(numbers, vec![0, 2]);
        assert_eq!(hits[1].line, "pineapple");
    }

    #[tokio::test]
    async fn cat_accepts_every_range_shape() {
        let artifact = artifact("a\nb\nc\nd");
        assert_eq!(artifact.cat(..).await.unwrap().len(), 4);
        assert_eq!(artifact.cat(2..).await.unwrap(), vec!["c", "d"]);
        assert_eq!(artifact.cat(..=1).await.unwrap(), vec!["a", "b"]);
        let (start, end) = (3, 1);
        assert!(artifact.cat(start..end).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn as_string_keeps_crlf_and_trailing_newline() {
        assert_eq!(artifact("a\r\nb\n").as_string().await.unwrap(), "a\r\nb\n");
    }

    #[tokio::test]
    async fn a_deserialized_artifact_is_detached_but_keeps_its_handle_and_hints() {
        let original = artifact("x\ny").with_size_hints(3, 2);
        let json = serde_json::to_value(&original).unwrap();
        let restored: SpooledArtifact = serde_json::from_value(json.clone()).unwrap();
        assert!(restored.reader().is_detached());
        assert_eq!(restored.line_count().await.unwrap(), 2);
        assert!(matches!(
            restored.head(1).await.unwrap_err(),
            ByteStoreError::Detached { .. }
        ));
        assert_eq!(serde_json::to_value(&restored).unwrap(), json);
    }
}

//! [`Media`]: a pointer to image, audio, video or document bytes, with what is known about them.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::error::Checker;
use super::{PrimitiveError, PrimitiveKind, TrustTier};
use crate::bytes::{ByteStream, MediaReader};

/// What sort of media this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// A picture.
    Image,
    /// Sound.
    Audio,
    /// Moving pictures.
    Video,
    /// A document (PDF, text, spreadsheet…).
    Document,
}

impl MediaKind {
    /// The hazard media of this kind carries by default: documents can hold text a model would
    /// read as instructions; other kinds are perceived, not parsed.
    pub const fn default_hazard(self) -> ModalityHazard {
        match self {
            Self::Document => ModalityHazard::ExtractableInstructions,
            Self::Image | Self::Audio | Self::Video => ModalityHazard::OpaquePerceptual,
        }
    }
}

/// How media could smuggle instructions into a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModalityHazard {
    /// Carries nothing a model would follow.
    Inert,
    /// Contains extractable text that may read as instructions.
    ExtractableInstructions,
    /// Perceived by the model (pixels, audio); instructions may hide in it.
    OpaquePerceptual,
}

/// One entry of a media's stash: a value derived about the media and how far to trust it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaStashEntry {
    /// The value (an OCR transcript, a caption, a hash…).
    pub value: serde_json::Value,
    /// How far the value can be trusted.
    pub trust_tier: TrustTier,
    /// The id of the media the value was derived from, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from_media: Option<String>,
}

/// Everything about a [`Media`] except its bytes: what `Media` serializes to.
///
/// Rebuild a `Media` from stored metadata with [`Media::from_metadata`] and a reader from your
/// byte store.
///
/// ```
/// use adk::bytes::MediaReader;
/// use adk::primitives::{Media, MediaKind, MediaMetadata};
///
/// let original = Media::user_attachment(MediaKind::Image, "image/png", "cat.png",
///                                       MediaReader::from_bytes(vec![1u8, 2]))?;
/// let stored = serde_json::to_string(&original).unwrap();
/// let metadata: MediaMetadata = serde_json::from_str(&stored).unwrap();
/// let restored = Media::from_metadata(metadata, MediaReader::from_bytes(vec![1u8, 2]))?;
/// assert_eq!(restored.id(), original.id());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaMetadata {
    /// The media's id.
    pub id: String,
    /// What sort of media it is.
    pub kind: MediaKind,
    /// Its MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Its file name.
    pub filename: String,
    /// Where it came from (a URL, a tool name…), when known.
    #[serde(default)]
    pub source: Option<String>,
    /// How far it can be trusted.
    pub trust_tier: TrustTier,
    /// How it could carry instructions.
    pub modality_hazard: ModalityHazard,
    /// Values derived about it, by name.
    #[serde(default)]
    pub stash: BTreeMap<String, MediaStashEntry>,
}

/// A pointer to media bytes plus what is known about them. Not a byte array: the bytes stay in
/// their [`MediaReader`] and are streamed on demand.
///
/// Serialization writes the metadata only (id, kind, MIME type, filename, source, trust tier,
/// modality hazard, stash) — never the bytes. Deserializing yields a `Media` whose reader is
/// *detached* (reads fail with [`ByteStoreError::Detached`](crate::bytes::ByteStoreError));
/// attach your stored bytes with [`Media::with_reader`], or deserialize a [`MediaMetadata`] and
/// call [`Media::from_metadata`].
///
/// ```
/// use adk::bytes::MediaReader;
/// use adk::primitives::{Media, MediaKind, ModalityHazard, TrustTier};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let chart = Media::tool_generated(MediaKind::Image, "image/png", "chart.png",
///                                   MediaReader::from_bytes(vec![137u8, 80, 78, 71]))?;
/// assert_eq!(chart.trust_tier(), TrustTier::FirstParty);
/// assert_eq!(chart.modality_hazard(), ModalityHazard::OpaquePerceptual);
/// assert_eq!(chart.byte_length().await, Some(4));
///
/// let json = serde_json::to_value(&chart).unwrap();
/// assert!(json.get("reader").is_none());
/// let restored: Media = serde_json::from_value(json).unwrap();
/// assert!(restored.reader().is_detached());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "MediaMetadata", try_from = "MediaMetadata")]
pub struct Media {
    metadata: MediaMetadata,
    reader: MediaReader,
}

impl Media {
    /// Media with every field given; the id is generated (a UUID v7).
    pub fn new(
        kind: MediaKind,
        mime_type: impl Into<String>,
        filename: impl Into<String>,
        reader: MediaReader,
        trust_tier: TrustTier,
        modality_hazard: ModalityHazard,
    ) -> Result<Self, PrimitiveError> {
        Self::from_metadata(
            MediaMetadata {
                id: crate::ids::time_ordered_string(),
                kind,
                mime_type: mime_type.into(),
                filename: filename.into(),
                source: None,
                trust_tier,
                modality_hazard,
                stash: BTreeMap::new(),
            },
            reader,
        )
    }

    /// Media a user attached: third-party private, hazard from its kind.
    pub fn user_attachment(
        kind: MediaKind,
        mime_type: impl Into<String>,
        filename: impl Into<String>,
        reader: MediaReader,
    ) -> Result<Self, PrimitiveError> {
        let tier = TrustTier::ThirdPartyPrivate;
        Self::new(
            kind,
            mime_type,
            filename,
            reader,
            tier,
            kind.default_hazard(),
        )
    }

    /// Media your own tool produced: first party, hazard from its kind.
    pub fn tool_generated(
        kind: MediaKind,
        mime_type: impl Into<String>,
        filename: impl Into<String>,
        reader: MediaReader,
    ) -> Result<Self, PrimitiveError> {
        let tier = TrustTier::FirstParty;
        Self::new(
            kind,
            mime_type,
            filename,
            reader,
            tier,
            kind.default_hazard(),
        )
    }

    /// Media retrieved from a public source: third-party public, hazard from its kind.
    pub fn retrieved_public(
        kind: MediaKind,
        mime_type: impl Into<String>,
        filename: impl Into<String>,
        reader: MediaReader,
    ) -> Result<Self, PrimitiveError> {
        let tier = TrustTier::ThirdPartyPublic;
        Self::new(
            kind,
            mime_type,
            filename,
            reader,
            tier,
            kind.default_hazard(),
        )
    }

    /// Media retrieved from a private source: third-party private, hazard from its kind.
    pub fn retrieved_private(
        kind: MediaKind,
        mime_type: impl Into<String>,
        filename: impl Into<String>,
        reader: MediaReader,
    ) -> Result<Self, PrimitiveError> {
        let tier = TrustTier::ThirdPartyPrivate;
        Self::new(
            kind,
            mime_type,
            filename,
            reader,
            tier,
            kind.default_hazard(),
        )
    }

    /// Rebuilds media from stored metadata and a reader over its bytes, checking the metadata.
    pub fn from_metadata(
        metadata: MediaMetadata,
        reader: MediaReader,
    ) -> Result<Self, PrimitiveError> {
        validate(&metadata)?;
        Ok(Self { metadata, reader })
    }

    /// The same media with another id (e.g. one your store chose).
    pub fn with_id(mut self, id: impl Into<String>) -> Result<Self, PrimitiveError> {
        self.metadata.id = id.into();
        validate(&self.metadata)?;
        Ok(self)
    }

    /// The same media, noting where it came from.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.metadata.source = Some(source.into());
        self
    }

    /// The same media with a stash entry added (replacing one of the same name).
    pub fn with_stash_entry(mut self, name: impl Into<String>, entry: MediaStashEntry) -> Self {
        self.metadata.stash.insert(name.into(), entry);
        self
    }

    /// The same media reading its bytes from `reader` (e.g. after deserialization).
    pub fn with_reader(mut self, reader: MediaReader) -> Self {
        self.reader = reader;
        self
    }

    /// The media's id.
    pub fn id(&self) -> &str {
        &self.metadata.id
    }

    /// What sort of media it is.
    pub fn kind(&self) -> MediaKind {
        self.metadata.kind
    }

    /// Its MIME type.
    pub fn mime_type(&self) -> &str {
        &self.metadata.mime_type
    }

    /// Its file name.
    pub fn filename(&self) -> &str {
        &self.metadata.filename
    }

    /// Where it came from, when known.
    pub fn source(&self) -> Option<&str> {
        self.metadata.source.as_deref()
    }

    /// How far it can be trusted.
    pub fn trust_tier(&self) -> TrustTier {
        self.metadata.trust_tier
    }

    /// How it could carry instructions.
    pub fn modality_hazard(&self) -> ModalityHazard {
        self.metadata.modality_hazard
    }

    /// Values derived about it.
    pub fn stash(&self) -> &BTreeMap<String, MediaStashEntry> {
        &self.metadata.stash
    }

    /// Its metadata (what it serializes to).
    pub fn metadata(&self) -> &MediaMetadata {
        &self.metadata
    }

    /// The reader over its bytes.
    pub fn reader(&self) -> &MediaReader {
        &self.reader
    }

    /// A fresh stream over its bytes.
    pub fn stream(&self) -> ByteStream {
        self.reader.stream()
    }

    /// The number of bytes, when the reader knows it.
    pub async fn byte_length(&self) -> Option<u64> {
        self.reader.byte_length().await
    }

    /// Every byte, gathered in memory.
    pub async fn as_bytes(&self) -> std::io::Result<Bytes> {
        self.reader.read_all().await
    }

    /// Every byte as standard base64 with padding, as model APIs take inline media.
    ///
    /// ```
    /// use adk::bytes::MediaReader;
    /// use adk::primitives::{Media, MediaKind};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let media = Media::tool_generated(MediaKind::Document, "text/plain", "a.txt",
    ///                                   MediaReader::from_bytes(&b"hello"[..])).unwrap();
    /// assert_eq!(media.as_base64().await.unwrap(), "aGVsbG8=");
    /// # });
    /// ```
    pub async fn as_base64(&self) -> std::io::Result<String> {
        Ok(encode_base64(&self.as_bytes().await?))
    }
}

fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let symbol = |index: u32| char::from(ALPHABET[(index & 0x3f) as usize]);
    let mut encoded = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let [first, second, third] = [0, 1, 2].map(|at| group.get(at).copied().unwrap_or(0));
        let triple = u32::from(first) << 16 | u32::from(second) << 8 | u32::from(third);
        encoded.push(symbol(triple >> 18));
        encoded.push(symbol(triple >> 12));
        encoded.push(if group.len() > 1 {
            symbol(triple >> 6)
        } else {
            '='
        });
        encoded.push(if group.len() > 2 { symbol(triple) } else { '=' });
    }
    encoded
}

fn validate(metadata: &MediaMetadata) -> Result<(), PrimitiveError> {
    let check = Checker::new(PrimitiveKind::Media, &metadata.id);
    check.non_empty("id", &metadata.id)?;
    check.non_empty("mime_type", &metadata.mime_type)?;
    if !is_mime_type(&metadata.mime_type) {
        return Err(check.fail(
            "mime_type",
            format!(
                "must look like `type/subtype`, got {:?}",
                metadata.mime_type
            ),
        ));
    }
    check.non_empty("filename", &metadata.filename)?;
    if metadata.source.as_deref() == Some("") {
        return Err(check.fail("source", "must not be empty when given"));
    }
    Ok(())
}

fn is_mime_type(value: &str) -> bool {
    match value.split_once('/') {
        Some((kind, subtype)) => {
            !kind.is_empty()
                && !subtype.is_empty()
                && !value.chars().any(|character| character.is_whitespace())
        }
        None => false,
    }
}

impl From<Media> for MediaMetadata {
    fn from(media: Media) -> Self {
        media.metadata
    }
}

impl TryFrom<MediaMetadata> for Media {
    type Error = PrimitiveError;

    fn try_from(metadata: MediaMetadata) -> Result<Self, Self::Error> {
        let reader = MediaReader::detached(metadata.id.clone());
        Self::from_metadata(metadata, reader)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    fn pixels() -> MediaReader {
        MediaReader::from_bytes(vec![0u8; 4])
    }

    #[test]
    fn base64_pads_partial_groups() {
        assert_eq!(encode_base64(b""), "");
        assert_eq!(encode_base64(b"f"), "Zg==");
        assert_eq!(encode_base64(b"fo"), "Zm8=");
        assert_eq!(encode_base64(b"foo"), "Zm9v");
        assert_eq!(encode_base64(&[0xff, 0xfe, 0xfd, 0x00]), "//79AA==");
    }

    #[test]
    fn each_media_gets_its_own_generated_id() {
        let first =
            Media::user_attachment(MediaKind::Image, "image/png", "a.png", pixels()).unwrap();
        let second =
            Media::user_attachment(MediaKind::Image, "image/png", "a.png", pixels()).unwrap();
        assert_ne!(first.id(), second.id());
    }

    #[test]
    fn documents_default_to_extractable_instructions() {
        let document =
            Media::retrieved_public(MediaKind::Document, "application/pdf", "a.pdf", pixels())
                .unwrap();
        assert_eq!(
            document.modality_hazard(),
            ModalityHazard::ExtractableInstructions
        );
        assert_eq!(document.trust_tier(), TrustTier::ThirdPartyPublic);
    }

    #[test]
    fn a_mime_type_without_a_subtype_is_rejected() {
        let error =
            Media::user_attachment(MediaKind::Image, "image", "a.png", pixels()).unwrap_err();
        assert_eq!(error.field(), "mime_type");
    }

    #[test]
    fn an_empty_filename_is_rejected() {
        let error =
            Media::user_attachment(MediaKind::Image, "image/png", "", pixels()).unwrap_err();
        assert_eq!(error.field(), "filename");
    }

    #[test]
    fn serialization_writes_metadata_only() {
        let media = Media::tool_generated(MediaKind::Audio, "audio/ogg", "a.ogg", pixels())
            .unwrap()
            .with_source("synth");
        let json = serde_json::to_value(&media).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "kind",
                "mime_type",
                "filename",
                "source",
                "trust_tier",
                "modality_hazard",
                "stash"
            ]
        );
    }

    #[test]
    fn a_stash_entry_with_unknown_keys_is_rejected() {
        let result = serde_json::from_value::<MediaStashEntry>(serde_json::json!({
            "value": 1, "trust_tier": "first-party", "extra": true
        }));
        assert!(result.is_err());
    }
}

//! [`Retrievable`]: a knowledge chunk injected by retrieval, and how far to trust it.

use serde::{Deserialize, Serialize};

use super::error::{Checker, StoredTimestamp};
use super::{
    PrimitiveError, PrimitiveKind, SpooledArtifact, SpooledArtifactHandle, Timestamp, Tokenizable,
};
use crate::bytes::{ByteStoreError, SpoolReader};

/// How far content can be trusted, by where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustTier {
    /// Produced by you (your tools, your data).
    FirstParty,
    /// From the public web or another public source.
    ThirdPartyPublic,
    /// From a private third-party source, such as a user's upload.
    ThirdPartyPrivate,
}

/// The text of a [`Retrievable`]: inline text or a [`SpooledArtifact`] kept in a byte store.
///
/// Serializes as a string for text and as the artifact's handle (an object) otherwise.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum RetrievableContent {
    /// Text held with the record.
    Text(Tokenizable),
    /// Text kept in a byte store.
    Artifact(SpooledArtifact),
}

impl<'de> Deserialize<'de> for RetrievableContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        // Decided by shape so a broken artifact handle reports its own problem, not a vague
        // "matched no variant".
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => Ok(Self::Text(Tokenizable::new(text))),
            value @ serde_json::Value::Object(_) => {
                serde_json::from_value::<SpooledArtifactHandle>(value)
                    .map(|handle| Self::Artifact(handle.into()))
                    .map_err(|error| {
                        D::Error::custom(format!(
                            "`content` is not a spooled artifact handle: {error}"
                        ))
                    })
            }
            other => Err(D::Error::custom(format!(
                "`content` must be a string or a spooled artifact handle, got {other}"
            ))),
        }
    }
}

impl From<&str> for RetrievableContent {
    fn from(text: &str) -> Self {
        Self::Text(Tokenizable::new(text))
    }
}

impl From<String> for RetrievableContent {
    fn from(text: String) -> Self {
        Self::Text(Tokenizable::new(text))
    }
}

impl From<Tokenizable> for RetrievableContent {
    fn from(text: Tokenizable) -> Self {
        Self::Text(text)
    }
}

impl From<SpooledArtifact> for RetrievableContent {
    fn from(artifact: SpooledArtifact) -> Self {
        Self::Artifact(artifact)
    }
}

/// A knowledge chunk brought in by retrieval (RAG), with its trust tier and relevance.
///
/// Rules: id non-empty; text content non-empty; `source` and `kind` non-empty when given;
/// `score` between 0 and 1 inclusive. `inline` (default `false`) asks that the text stay with the
/// record instead of being spooled to a byte store.
///
/// ```
/// use adk::primitives::{Retrievable, TrustTier};
///
/// let chunk = Retrievable::new("doc-1#3", "Paris is the capital of France.", TrustTier::ThirdPartyPublic)?
///     .with_source("https://example.org/france")
///     .with_score(0.83)?;
/// assert_eq!(chunk.score(), Some(0.83));
/// assert!(!chunk.inline());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RetrievableFields")]
pub struct Retrievable {
    id: String,
    content: RetrievableContent,
    trust_tier: TrustTier,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    inline: bool,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl Retrievable {
    /// A retrievable created and updated now.
    pub fn new(
        id: impl Into<String>,
        content: impl Into<RetrievableContent>,
        trust_tier: TrustTier,
    ) -> Result<Self, PrimitiveError> {
        let now = Timestamp::now();
        let retrievable = Self {
            id: id.into(),
            content: content.into(),
            trust_tier,
            source: None,
            kind: None,
            score: None,
            inline: false,
            created_at: now,
            updated_at: now,
        };
        retrievable.validate()
    }

    /// The same retrievable with other content.
    pub fn with_content(
        mut self,
        content: impl Into<RetrievableContent>,
    ) -> Result<Self, PrimitiveError> {
        self.content = content.into();
        self.validate()
    }

    /// The same retrievable, noting where it came from.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The same retrievable with a kind label (e.g. `"faq"`).
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// The same retrievable with a relevance score.
    pub fn with_score(mut self, score: f64) -> Result<Self, PrimitiveError> {
        self.score = Some(score);
        self.validate()
    }

    /// The same retrievable, kept inline (`true`) or spoolable (`false`).
    pub fn with_inline(mut self, inline: bool) -> Self {
        self.inline = inline;
        self
    }

    /// The same retrievable with another creation time.
    pub fn with_created_at(mut self, created_at: Timestamp) -> Self {
        self.created_at = created_at;
        self
    }

    /// The same retrievable with another update time.
    pub fn with_updated_at(mut self, updated_at: Timestamp) -> Self {
        self.updated_at = updated_at;
        self
    }

    /// The caller-chosen id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its text.
    pub fn content(&self) -> &RetrievableContent {
        &self.content
    }

    /// How far it can be trusted.
    pub fn trust_tier(&self) -> TrustTier {
        self.trust_tier
    }

    /// Where it came from.
    pub fn source(&self) -> Option<&str> {
        self.source.as_deref()
    }

    /// Its kind label.
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// Its relevance, from 0 to 1.
    pub fn score(&self) -> Option<f64> {
        self.score
    }

    /// Whether its text must stay with the record.
    pub fn inline(&self) -> bool {
        self.inline
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When it was last changed.
    pub fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    /// Its whole text, reading the artifact when it is spooled.
    ///
    /// ```
    /// use adk::primitives::{Retrievable, TrustTier};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let chunk = Retrievable::new("r", "text", TrustTier::FirstParty).unwrap();
    /// assert_eq!(chunk.content_string().await.unwrap(), "text");
    /// # });
    /// ```
    pub async fn content_string(&self) -> Result<String, ByteStoreError> {
        match &self.content {
            RetrievableContent::Text(text) => Ok(text.render()),
            RetrievableContent::Artifact(artifact) => artifact.as_string().await,
        }
    }

    /// The text to move into a byte store, when this retrievable should be spooled: its content
    /// is fixed (not dynamic) inline text and `inline` is `false`. `None` otherwise.
    ///
    /// Together with [`into_spooled`](Self::into_spooled) this is the auto-spooling step a
    /// context applies when retrievables are stored or fetched.
    ///
    /// ```
    /// use adk::bytes::{ByteStore, InMemorySpoolStore};
    /// use adk::primitives::{Retrievable, RetrievableContent, TrustTier};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = InMemorySpoolStore::new();
    /// let chunk = Retrievable::new("r-1", "line one\nline two", TrustTier::FirstParty).unwrap();
    /// let chunk = match chunk.spoolable_text() {
    ///     Some(text) => {
    ///         let reader = store.write(chunk.id(), text.into()).await?;
    ///         chunk.into_spooled(reader)
    ///     }
    ///     None => chunk,
    /// };
    /// assert!(matches!(chunk.content(), RetrievableContent::Artifact(_)));
    /// assert_eq!(chunk.content_string().await?, "line one\nline two");
    /// # Ok::<(), adk::bytes::ByteStoreError>(())
    /// # }).unwrap();
    /// ```
    pub fn spoolable_text(&self) -> Option<String> {
        match &self.content {
            RetrievableContent::Text(text) if !self.inline => text.as_static().map(str::to_owned),
            _ => None,
        }
    }

    /// The same retrievable (every other field unchanged) whose content is `reader`, wrapped in
    /// a [`SpooledArtifact`]. When the current content is fixed text, the artifact carries its
    /// size as hints: its UTF-8 byte length and its line count (`""` has none, otherwise one
    /// more than its newlines).
    pub fn into_spooled(mut self, reader: SpoolReader) -> Self {
        let artifact = SpooledArtifact::new(reader);
        let artifact = match &self.content {
            RetrievableContent::Text(text) => match text.as_static() {
                Some(text) => {
                    let lines = if text.is_empty() {
                        0
                    } else {
                        text.matches('\n').count() as u64 + 1
                    };
                    artifact.with_size_hints(text.len() as u64, lines)
                }
                None => artifact,
            },
            RetrievableContent::Artifact(_) => artifact,
        };
        self.content = RetrievableContent::Artifact(artifact);
        self
    }

    fn validate(self) -> Result<Self, PrimitiveError> {
        let check = Checker::new(PrimitiveKind::Retrievable, &self.id);
        check.non_empty("id", &self.id)?;
        if let RetrievableContent::Text(text) = &self.content
            && text.is_empty_static()
        {
            return Err(check.fail("content", "must not be empty"));
        }
        if let Some(source) = &self.source {
            check.non_empty("source", source)?;
        }
        if let Some(kind) = &self.kind {
            check.non_empty("kind", kind)?;
        }
        if let Some(score) = self.score {
            check.unit_interval("score", score)?;
        }
        Ok(self)
    }
}

#[derive(Deserialize)]
struct RetrievableFields {
    id: String,
    content: RetrievableContent,
    trust_tier: TrustTier,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    inline: bool,
    created_at: StoredTimestamp,
    updated_at: StoredTimestamp,
}

impl TryFrom<RetrievableFields> for Retrievable {
    type Error = PrimitiveError;

    fn try_from(fields: RetrievableFields) -> Result<Self, Self::Error> {
        let check = Checker::new(PrimitiveKind::Retrievable, &fields.id);
        let created_at = check.timestamp("created_at", fields.created_at)?;
        let updated_at = check.timestamp("updated_at", fields.updated_at)?;
        Self {
            id: fields.id,
            content: fields.content,
            trust_tier: fields.trust_tier,
            source: fields.source,
            kind: fields.kind,
            score: fields.score,
            inline: fields.inline,
            created_at,
            updated_at,
        }
        .validate()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::bytes::SpoolReader;

    #[test]
    fn score_outside_zero_to_one_is_rejected() {
        let chunk = Retrievable::new("r", "x", TrustTier::FirstParty).unwrap();
        assert_eq!(chunk.with_score(1.5).unwrap_err().field(), "score");
    }

    #[test]
    fn empty_text_content_is_rejected() {
        let error = Retrievable::new("r", "", TrustTier::FirstParty).unwrap_err();
        assert_eq!(error.field(), "content");
        assert_eq!(error.code(), "E_INVALID_INITIAL_RETRIEVABLE_VALUE");
    }

    #[test]
    fn trust_tier_is_required_when_deserializing() {
        let error = serde_json::from_value::<Retrievable>(serde_json::json!({
            "id": "r", "content": "x",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap_err();
        assert!(error.to_string().contains("trust_tier"), "{error}");
    }

    #[test]
    fn a_broken_artifact_handle_is_rejected_naming_content() {
        let error = serde_json::from_value::<Retrievable>(serde_json::json!({
            "id": "r", "content": {"byte_length": 3}, "trust_tier": "first-party",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap_err();
        assert!(error.to_string().contains("`content`"), "{error}");
        assert!(error.to_string().contains("`id`"), "{error}");
    }

    #[test]
    fn only_fixed_text_that_is_not_inline_is_spoolable() {
        let fixed = Retrievable::new("r", "x", TrustTier::FirstParty).unwrap();
        assert_eq!(fixed.spoolable_text().as_deref(), Some("x"));
        assert_eq!(fixed.clone().with_inline(true).spoolable_text(), None);
        let dynamic = fixed
            .clone()
            .with_content(Tokenizable::dynamic(|| "now".into()))
            .unwrap();
        assert_eq!(dynamic.spoolable_text(), None);
        let artifact = SpooledArtifact::new(SpoolReader::from_bytes("r", "x"));
        assert_eq!(fixed.with_content(artifact).unwrap().spoolable_text(), None);
    }

    #[tokio::test]
    async fn spooling_keeps_every_field_and_hints_the_size_of_the_text() {
        let chunk = Retrievable::new("r", "é\nb\n", TrustTier::ThirdPartyPublic)
            .unwrap()
            .with_source("s")
            .with_score(0.25)
            .unwrap();
        let spooled = chunk
            .clone()
            .into_spooled(SpoolReader::from_bytes("r", "é\nb\n"));
        let RetrievableContent::Artifact(artifact) = spooled.content() else {
            panic!("content should be spooled");
        };
        let handle = artifact.handle();
        assert_eq!((handle.byte_length, handle.line_count), (Some(5), Some(3)));
        assert_eq!(spooled.source(), Some("s"));
        assert_eq!(spooled.score(), Some(0.25));
        assert_eq!(spooled.created_at(), chunk.created_at());
        assert_eq!(spooled.trust_tier(), TrustTier::ThirdPartyPublic);
    }

    #[tokio::test]
    async fn spooled_content_is_read_from_its_artifact() {
        let artifact = SpooledArtifact::new(SpoolReader::from_bytes("r", "long text"));
        let chunk = Retrievable::new("r", artifact, TrustTier::ThirdPartyPrivate).unwrap();
        assert_eq!(chunk.content_string().await.unwrap(), "long text");
    }

    #[test]
    fn text_content_serializes_as_a_string_and_an_artifact_as_its_handle() {
        let text = Retrievable::new("r", "x", TrustTier::FirstParty).unwrap();
        assert_eq!(serde_json::to_value(&text).unwrap()["content"], "x");
        let artifact = SpooledArtifact::new(SpoolReader::from_bytes("blob", "y"));
        let spooled = Retrievable::new("r", artifact, TrustTier::FirstParty).unwrap();
        let json = serde_json::to_value(&spooled).unwrap();
        assert_eq!(json["content"]["id"], "blob");
        let restored: Retrievable = serde_json::from_value(json).unwrap();
        assert!(matches!(
            restored.content(),
            RetrievableContent::Artifact(_)
        ));
    }
}

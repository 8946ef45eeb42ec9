//! [`Thought`]: a reasoning trace from an extended-thinking model.

use serde::{Deserialize, Serialize};

use super::answer_link::check_link;
use super::error::{Checker, StoredTimestamp};
use super::{AnswerLink, Identity, PrimitiveError, PrimitiveKind, Timestamp, Tokenizable};

/// A reasoning trace, kept for debugging, auditing or replay to the same vendor.
///
/// Rules: the id is non-empty; a vendor `payload` (any JSON but `null`) requires a non-empty
/// `replay_compatibility` tag saying which model family can replay it; without a payload the
/// content must be non-empty (a dynamic content always counts as present). With a payload the
/// content may be empty. Without an explicit identity a thought belongs to `"assistant"`. A
/// thought made while a model answered carries an [`AnswerLink`] (non-empty answer id) to that
/// answer; serialization omits `answer` when unlinked.
///
/// ```
/// use adk::primitives::Thought;
/// use serde_json::json;
///
/// let visible = Thought::new("t-1", "The user wants a summary first.")?;
/// let opaque = Thought::from_payload("t-2", json!({"signature": "abc"}), "vendor-x/v2")?;
/// assert_eq!(opaque.content().render(), "");
/// assert_eq!(opaque.replay_compatibility(), Some("vendor-x/v2"));
/// assert!(Thought::new("t-3", "").is_err());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "ThoughtFields")]
pub struct Thought {
    id: String,
    content: Tokenizable,
    identity: Identity,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_compatibility: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<AnswerLink>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl Thought {
    /// A readable thought, created and updated now.
    pub fn new(
        id: impl Into<String>,
        content: impl Into<Tokenizable>,
    ) -> Result<Self, PrimitiveError> {
        let now = Timestamp::now();
        Self::try_from(ThoughtFields {
            id: id.into(),
            content: Some(content.into()),
            identity: None,
            payload: None,
            replay_compatibility: None,
            answer: None,
            created_at: now.into(),
            updated_at: now.into(),
        })
    }

    /// A thought carried as a vendor-opaque payload, replayable to models tagged
    /// `replay_compatibility`; its content starts empty.
    pub fn from_payload(
        id: impl Into<String>,
        payload: serde_json::Value,
        replay_compatibility: impl Into<String>,
    ) -> Result<Self, PrimitiveError> {
        let now = Timestamp::now();
        Self::try_from(ThoughtFields {
            id: id.into(),
            content: None,
            identity: None,
            payload: Some(payload),
            replay_compatibility: Some(replay_compatibility.into()),
            answer: None,
            created_at: now.into(),
            updated_at: now.into(),
        })
    }

    /// The same thought with other content.
    pub fn with_content(mut self, content: impl Into<Tokenizable>) -> Result<Self, PrimitiveError> {
        self.content = content.into();
        self.revalidate()
    }

    /// The same thought with a vendor payload and its replay tag.
    pub fn with_payload(
        mut self,
        payload: serde_json::Value,
        replay_compatibility: impl Into<String>,
    ) -> Result<Self, PrimitiveError> {
        self.payload = Some(payload);
        self.replay_compatibility = Some(replay_compatibility.into());
        self.revalidate()
    }

    /// The same thought attributed to `identity`.
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = identity;
        self
    }

    /// The same thought as part `link` of a model answer (see [`AnswerLink`]); refused for an
    /// empty answer id.
    ///
    /// ```
    /// use adk::primitives::{AnswerLink, Thought};
    /// let thought = Thought::new("t-1", "The user wants Oslo.")?.with_answer(AnswerLink::new("a-1", 0))?;
    /// assert_eq!(thought.answer().map(AnswerLink::position), Some(0));
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn with_answer(mut self, link: AnswerLink) -> Result<Self, PrimitiveError> {
        self.answer = Some(link);
        self.revalidate()
    }

    /// The answer this thought was part of, when it was written with a link.
    pub fn answer(&self) -> Option<&AnswerLink> {
        self.answer.as_ref()
    }

    /// The same thought with another creation time.
    pub fn with_created_at(mut self, created_at: Timestamp) -> Self {
        self.created_at = created_at;
        self
    }

    /// The same thought with another update time.
    pub fn with_updated_at(mut self, updated_at: Timestamp) -> Self {
        self.updated_at = updated_at;
        self
    }

    /// The caller-chosen id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The readable reasoning (empty for a payload-only thought).
    pub fn content(&self) -> &Tokenizable {
        &self.content
    }

    /// Who it belongs to.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The vendor-opaque payload, if any.
    pub fn payload(&self) -> Option<&serde_json::Value> {
        self.payload.as_ref()
    }

    /// Which models can replay the payload.
    pub fn replay_compatibility(&self) -> Option<&str> {
        self.replay_compatibility.as_deref()
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When it was last changed.
    pub fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    fn revalidate(self) -> Result<Self, PrimitiveError> {
        Self::try_from(ThoughtFields {
            id: self.id,
            content: Some(self.content),
            identity: Some(self.identity),
            payload: self.payload,
            replay_compatibility: self.replay_compatibility,
            answer: self.answer,
            created_at: self.created_at.into(),
            updated_at: self.updated_at.into(),
        })
    }
}

#[derive(Deserialize)]
struct ThoughtFields {
    id: String,
    #[serde(default)]
    content: Option<Tokenizable>,
    #[serde(default)]
    identity: Option<Identity>,
    #[serde(default)]
    payload: Option<serde_json::Value>,
    #[serde(default)]
    replay_compatibility: Option<String>,
    #[serde(default)]
    answer: Option<AnswerLink>,
    created_at: StoredTimestamp,
    updated_at: StoredTimestamp,
}

impl TryFrom<ThoughtFields> for Thought {
    type Error = PrimitiveError;

    fn try_from(fields: ThoughtFields) -> Result<Self, Self::Error> {
        let check = Checker::new(PrimitiveKind::Thought, &fields.id);
        check.non_empty("id", &fields.id)?;
        check_link(&check, fields.answer.as_ref())?;
        // `null` is how JSON says "no payload"; keeping it would demand a replay tag for nothing.
        let payload = fields.payload.filter(|payload| !payload.is_null());
        if let Some(tag) = &fields.replay_compatibility {
            check.non_empty("replay_compatibility", tag)?;
        }
        let content = match (payload.is_some(), fields.content) {
            (true, _) if fields.replay_compatibility.is_none() => {
                return Err(check.fail(
                    "replay_compatibility",
                    "is required when a payload is present: say which models can replay it",
                ));
            }
            (true, content) => content.unwrap_or_else(|| Tokenizable::new("")),
            (false, Some(content)) if !content.is_empty_static() => content,
            (false, _) => {
                return Err(check.fail(
                    "content",
                    "must not be empty when the thought has no payload",
                ));
            }
        };
        let created_at = check.timestamp("created_at", fields.created_at)?;
        let updated_at = check.timestamp("updated_at", fields.updated_at)?;
        Ok(Self {
            id: fields.id,
            content,
            identity: fields
                .identity
                .unwrap_or_else(|| Identity::for_role(super::Role::Assistant)),
            payload,
            replay_compatibility: fields.replay_compatibility,
            answer: fields.answer,
            created_at,
            updated_at,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payload_without_replay_compatibility_is_rejected() {
        let error = serde_json::from_value::<Thought>(json!({
            "id": "t", "payload": {"a": 1},
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap_err();
        assert!(
            error.to_string().contains("replay_compatibility"),
            "{error}"
        );
    }

    #[test]
    fn empty_replay_compatibility_is_rejected() {
        let error = Thought::from_payload("t", json!(1), "").unwrap_err();
        assert_eq!(error.field(), "replay_compatibility");
    }

    #[test]
    fn a_null_payload_counts_as_no_payload() {
        let error = Thought::new("t", "x")
            .unwrap()
            .with_content("")
            .unwrap_err();
        assert_eq!(error.field(), "content");
        let thought = Thought::from_payload("t", json!(null), "tag");
        assert!(
            thought.is_err(),
            "null payload leaves a thought without content"
        );
    }

    #[test]
    fn dynamic_content_counts_as_present() {
        assert!(Thought::new("t", Tokenizable::dynamic(String::new)).is_ok());
    }

    #[test]
    fn default_identity_is_assistant() {
        assert_eq!(
            Thought::new("t", "x").unwrap().identity().identifier(),
            "assistant"
        );
    }
}

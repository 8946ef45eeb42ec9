//! [`Memory`]: a durable fact kept across turns.

use serde::{Deserialize, Serialize};

use super::error::{Checker, StoredTimestamp};
use super::{PrimitiveError, PrimitiveKind, Timestamp, Tokenizable};

/// A durable fact accumulated across turns, such as a user preference.
///
/// Rules: id and content non-empty; `confidence` and `importance` between 0 and 1 inclusive.
///
/// ```
/// use adk::primitives::Memory;
///
/// let memory = Memory::new("mem-1", "Prefers metric units", 0.9, 0.4)?;
/// assert_eq!(memory.confidence(), 0.9);
/// assert!(Memory::new("mem-2", "x", 0.5, -0.1).is_err());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "MemoryFields")]
pub struct Memory {
    id: String,
    content: Tokenizable,
    confidence: f64,
    importance: f64,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl Memory {
    /// A memory created and updated now.
    pub fn new(
        id: impl Into<String>,
        content: impl Into<Tokenizable>,
        confidence: f64,
        importance: f64,
    ) -> Result<Self, PrimitiveError> {
        let now = Timestamp::now();
        Self::try_from(MemoryFields {
            id: id.into(),
            content: content.into(),
            confidence,
            importance,
            created_at: now.into(),
            updated_at: now.into(),
        })
    }

    /// The same memory with other content.
    pub fn with_content(self, content: impl Into<Tokenizable>) -> Result<Self, PrimitiveError> {
        let mut fields = self.into_fields();
        fields.content = content.into();
        Self::try_from(fields)
    }

    /// The same memory with another confidence.
    pub fn with_confidence(self, confidence: f64) -> Result<Self, PrimitiveError> {
        let mut fields = self.into_fields();
        fields.confidence = confidence;
        Self::try_from(fields)
    }

    /// The same memory with another importance.
    pub fn with_importance(self, importance: f64) -> Result<Self, PrimitiveError> {
        let mut fields = self.into_fields();
        fields.importance = importance;
        Self::try_from(fields)
    }

    /// The same memory with another creation time.
    pub fn with_created_at(mut self, created_at: Timestamp) -> Self {
        self.created_at = created_at;
        self
    }

    /// The same memory with another update time.
    pub fn with_updated_at(mut self, updated_at: Timestamp) -> Self {
        self.updated_at = updated_at;
        self
    }

    /// The caller-chosen id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The fact.
    pub fn content(&self) -> &Tokenizable {
        &self.content
    }

    /// How sure the agent is of it, from 0 to 1.
    pub fn confidence(&self) -> f64 {
        self.confidence
    }

    /// How much it matters, from 0 to 1.
    pub fn importance(&self) -> f64 {
        self.importance
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When it was last changed.
    pub fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    fn into_fields(self) -> MemoryFields {
        MemoryFields {
            id: self.id,
            content: self.content,
            confidence: self.confidence,
            importance: self.importance,
            created_at: self.created_at.into(),
            updated_at: self.updated_at.into(),
        }
    }
}

#[derive(Deserialize)]
struct MemoryFields {
    id: String,
    content: Tokenizable,
    confidence: f64,
    importance: f64,
    created_at: StoredTimestamp,
    updated_at: StoredTimestamp,
}

impl TryFrom<MemoryFields> for Memory {
    type Error = PrimitiveError;

    fn try_from(fields: MemoryFields) -> Result<Self, Self::Error> {
        let check = Checker::new(PrimitiveKind::Memory, &fields.id);
        check.non_empty("id", &fields.id)?;
        if fields.content.is_empty_static() {
            return Err(check.fail("content", "must not be empty"));
        }
        check.unit_interval("confidence", fields.confidence)?;
        check.unit_interval("importance", fields.importance)?;
        let created_at = check.timestamp("created_at", fields.created_at)?;
        let updated_at = check.timestamp("updated_at", fields.updated_at)?;
        Ok(Self {
            id: fields.id,
            content: fields.content,
            confidence: fields.confidence,
            importance: fields.importance,
            created_at,
            updated_at,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn confidence_above_one_is_rejected() {
        assert_eq!(
            Memory::new("m", "x", 1.01, 0.5).unwrap_err().field(),
            "confidence"
        );
    }

    #[test]
    fn importance_that_is_not_a_number_is_rejected() {
        assert_eq!(
            Memory::new("m", "x", 0.5, f64::NAN).unwrap_err().field(),
            "importance"
        );
    }

    #[test]
    fn the_bounds_zero_and_one_are_accepted() {
        assert!(Memory::new("m", "x", 0.0, 1.0).is_ok());
    }

    #[test]
    fn empty_content_is_rejected() {
        assert_eq!(
            Memory::new("m", "", 0.5, 0.5).unwrap_err().field(),
            "content"
        );
    }

    #[test]
    fn a_rejected_update_names_the_memory() {
        let memory = Memory::new("mem-9", "x", 0.5, 0.5).unwrap();
        let error = memory.with_confidence(2.0).unwrap_err();
        assert_eq!(error.id(), Some("mem-9"));
    }
}

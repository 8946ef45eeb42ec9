//! [`PrimitiveError`]: why a primitive could not be built or restored.

use std::fmt;

use super::Timestamp;

/// Which primitive a [`PrimitiveError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PrimitiveKind {
    /// A [`Message`](super::Message).
    Message,
    /// A [`Memory`](super::Memory).
    Memory,
    /// A [`Thought`](super::Thought).
    Thought,
    /// A [`ToolCall`](super::ToolCall).
    ToolCall,
    /// A [`Retrievable`](super::Retrievable).
    Retrievable,
    /// An [`Identity`](super::Identity).
    Identity,
    /// A [`Media`](super::Media).
    Media,
    /// A [`Tool`](super::Tool).
    Tool,
    /// A [`StandingInstruction`](super::StandingInstruction).
    StandingInstruction,
}

impl PrimitiveKind {
    /// The primitive's name as written in messages, e.g. `"tool call"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Memory => "memory",
            Self::Thought => "thought",
            Self::ToolCall => "tool call",
            Self::Retrievable => "retrievable",
            Self::Identity => "identity",
            Self::Media => "media",
            Self::Tool => "tool",
            Self::StandingInstruction => "standing instruction",
        }
    }

    /// The error code the TypeScript original uses for an invalid value of this primitive
    /// (standing instructions had none there; theirs is new).
    pub const fn code(self) -> &'static str {
        match self {
            Self::Message => "E_INVALID_INITIAL_MESSAGE_VALUE",
            Self::Memory => "E_INVALID_INITIAL_MEMORY_VALUE",
            Self::Thought => "E_INVALID_INITIAL_THOUGHT_VALUE",
            Self::ToolCall => "E_INVALID_INITIAL_TOOL_CALL_VALUE",
            Self::Retrievable => "E_INVALID_INITIAL_RETRIEVABLE_VALUE",
            Self::Identity => "E_INVALID_INITIAL_IDENTITY_VALUE",
            Self::Media => "E_INVALID_INITIAL_MEDIA_VALUE",
            Self::Tool => "E_INVALID_INITIAL_TOOL_VALUE",
            Self::StandingInstruction => "E_INVALID_STANDING_INSTRUCTION_VALUE",
        }
    }
}

impl fmt::Display for PrimitiveKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A primitive value broke one of its rules. Names the primitive, its id when known, the field
/// and the rule.
///
/// ```
/// use adk::primitives::{Memory, PrimitiveKind};
///
/// let error = Memory::new("mem-1", "likes tea", 1.5, 0.5).unwrap_err();
/// assert_eq!(error.kind(), PrimitiveKind::Memory);
/// assert_eq!(error.field(), "confidence");
/// assert_eq!(error.code(), "E_INVALID_INITIAL_MEMORY_VALUE");
/// assert!(error.to_string().contains("mem-1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}{}: `{field}` {rule}", quoted_id(.id.as_deref()))]
pub struct PrimitiveError {
    kind: PrimitiveKind,
    id: Option<String>,
    field: &'static str,
    rule: String,
}

impl PrimitiveError {
    pub(crate) fn new(
        kind: PrimitiveKind,
        id: Option<&str>,
        field: &'static str,
        rule: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            id: id.filter(|id| !id.is_empty()).map(str::to_owned),
            field,
            rule: rule.into(),
        }
    }

    /// The primitive concerned.
    pub fn kind(&self) -> PrimitiveKind {
        self.kind
    }

    /// The id of the rejected value, when it had a usable one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The offending field, e.g. `"content"`.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The rule that was broken, in words.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// The original's error code, e.g. `"E_INVALID_INITIAL_MESSAGE_VALUE"`.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}

fn quoted_id(id: Option<&str>) -> String {
    id.map(|id| format!(" {id:?}")).unwrap_or_default()
}

/// Shared checks, so every primitive words the same rule the same way.
///
/// It borrows the record's id: a record that passes (nearly every one) costs no copy of its id;
/// only a failure's error owns one.
pub(crate) struct Checker<'a> {
    kind: PrimitiveKind,
    id: &'a str,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(kind: PrimitiveKind, id: &'a str) -> Self {
        Self { kind, id }
    }

    pub(crate) fn fail(&self, field: &'static str, rule: impl Into<String>) -> PrimitiveError {
        PrimitiveError::new(self.kind, Some(self.id), field, rule)
    }

    pub(crate) fn non_empty(&self, field: &'static str, value: &str) -> Result<(), PrimitiveError> {
        if value.is_empty() {
            Err(self.fail(field, "must not be empty"))
        } else {
            Ok(())
        }
    }

    pub(crate) fn unit_interval(
        &self,
        field: &'static str,
        value: f64,
    ) -> Result<(), PrimitiveError> {
        if (0.0..=1.0).contains(&value) {
            Ok(())
        } else {
            Err(self.fail(
                field,
                format!("must be between 0 and 1 inclusive, got {value}"),
            ))
        }
    }
}

/// A timestamp as read from storage, kept even when malformed so the primitive's own
/// validation can reject it naming the field (a parse error alone would not say which field).
pub(crate) enum StoredTimestamp {
    Valid(Timestamp),
    Invalid(String),
}

impl From<Timestamp> for StoredTimestamp {
    fn from(timestamp: Timestamp) -> Self {
        Self::Valid(timestamp)
    }
}

impl<'de> serde::Deserialize<'de> for StoredTimestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) => match text.parse::<Timestamp>() {
                Ok(timestamp) => Self::Valid(timestamp),
                Err(error) => Self::Invalid(format!("{text:?} ({error})")),
            },
            other => Self::Invalid(other.to_string()),
        })
    }
}

impl Checker<'_> {
    pub(crate) fn timestamp(
        &self,
        field: &'static str,
        stored: StoredTimestamp,
    ) -> Result<Timestamp, PrimitiveError> {
        match stored {
            StoredTimestamp::Valid(timestamp) => Ok(timestamp),
            StoredTimestamp::Invalid(found) => Err(self.fail(
                field,
                format!(
                    "must be an RFC 3339 timestamp such as \"2026-01-02T03:04:05Z\", got {found}"
                ),
            )),
        }
    }
}

//! [`AnswerLink`]: which model answer a message, thought or tool call belongs to, and where.

use serde::{Deserialize, Serialize};

use super::PrimitiveError;
use super::error::Checker;

/// The link from a record to the model answer that produced it: the answer's id and the
/// record's position within that answer.
///
/// One call of a model produces one *answer*: some reasoning, some text, some tool calls. They
/// are stored as separate records (a [`Thought`](super::Thought), an assistant
/// [`Message`](super::Message), [`ToolCall`](super::ToolCall)s), created at different moments
/// of the stream, so their creation times say nothing reliable about how they belong together.
/// The link does: every record of one answer carries the same `answer_id`, and `position`
/// numbers them in the order the model produced them (0 first). [`crate::transcript`] reads it
/// to rebuild the answer whole.
///
/// An executor allocates the answer id when it starts a model call (see
/// [`AnswerParts`](crate::transcript::AnswerParts)); ids need only be unique within a
/// conversation. Serialized as `{"id": "…", "position": 0}` under the record's `answer` field;
/// records written without one (before links existed) have none.
///
/// ```
/// use adk::primitives::{AnswerLink, Message, ToolCall};
///
/// let text = Message::assistant("m-1", "Let me check.")?.with_answer(AnswerLink::new("a-1", 0))?;
/// let call = ToolCall::new("c-1", "weather", serde_json::json!({"city": "Oslo"}))?
///     .with_answer(AnswerLink::new("a-1", 1))?;
/// assert_eq!(text.answer().map(AnswerLink::answer_id), call.answer().map(AnswerLink::answer_id));
/// assert!(text.answer().unwrap().position() < call.answer().unwrap().position());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AnswerLink {
    #[serde(rename = "id")]
    answer_id: String,
    position: u32,
}

impl AnswerLink {
    /// The record at `position` (0 first) of the answer `answer_id`. The id must not be empty:
    /// the record given the link (`with_answer`) refuses an empty one, as does deserializing.
    pub fn new(answer_id: impl Into<String>, position: u32) -> Self {
        Self {
            answer_id: answer_id.into(),
            position,
        }
    }

    /// The answer's id.
    pub fn answer_id(&self) -> &str {
        &self.answer_id
    }

    /// Where the record stands in its answer, 0 first.
    pub fn position(&self) -> u32 {
        self.position
    }
}

/// The rule every carrier of a link applies: an answer needs an id.
pub(crate) fn check_link(
    check: &Checker<'_>,
    link: Option<&AnswerLink>,
) -> Result<(), PrimitiveError> {
    match link {
        Some(link) if link.answer_id.is_empty() => {
            Err(check.fail("answer", "must name its answer: the answer id is empty"))
        }
        _ => Ok(()),
    }
}

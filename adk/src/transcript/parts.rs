//! [`AnswerParts`]: the links an executor gives the records of one model answer.

use crate::context::DispatchContext;
use crate::primitives::AnswerLink;

/// Hands out the [`AnswerLink`]s of one model answer: one answer id, positions 0, 1, 2… in the
/// order the executor asks for them — which must be the order the model produced the parts.
///
/// Allocate one when a model call starts and link every thought, assistant message and tool
/// call stored from its answer:
///
/// ```
/// use adk::primitives::{Message, ToolCall};
/// use adk::transcript::AnswerParts;
///
/// let mut parts = AnswerParts::new("turn-1/dispatch-0");
/// let text = Message::assistant("m-1", "Let me check.")?.with_answer(parts.next_link())?;
/// let call = ToolCall::new("c-1", "weather", serde_json::json!({}))?.with_answer(parts.next_link())?;
/// assert_eq!(text.answer().unwrap().position(), 0);
/// assert_eq!(call.answer().unwrap().position(), 1);
/// assert_eq!(call.answer().unwrap().answer_id(), "turn-1/dispatch-0");
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerParts {
    answer_id: String,
    next: u32,
}

impl AnswerParts {
    /// The parts of the answer `answer_id`, starting at position 0. The id must be unique within
    /// the conversation and not empty (an empty one is refused when a record takes the link).
    pub fn new(answer_id: impl Into<String>) -> Self {
        Self {
            answer_id: answer_id.into(),
            next: 0,
        }
    }

    /// The parts of this iteration's model call: answer id `{dispatch id}-{iteration}`, unique
    /// within the conversation since a turn has one dispatch and turn ids are unique. For an
    /// executor that calls the model once per iteration, as adk's do.
    pub fn for_model_call(ctx: &DispatchContext) -> Self {
        Self::new(format!("{}-{}", ctx.dispatch_id(), ctx.iteration()))
    }

    /// The answer id.
    pub fn answer_id(&self) -> &str {
        &self.answer_id
    }

    /// The link for the next part.
    pub fn next_link(&mut self) -> AnswerLink {
        let link = AnswerLink::new(self.answer_id.clone(), self.next);
        self.next = self.next.saturating_add(1);
        link
    }
}

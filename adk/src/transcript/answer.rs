//! [`Answer`]: one model answer, whole, and its parts.

use crate::primitives::{Message, Thought, ToolCall, ToolCallResults};

/// One answer of the model: its reasoning, text and tool calls in the order it produced them.
///
/// ```
/// use adk::primitives::{AnswerLink, Message, ToolCall};
/// use adk::transcript::Transcript;
///
/// let text = Message::assistant("m-1", "Let me check.")?.with_answer(AnswerLink::new("a", 0))?;
/// let done = ToolCall::new("c-1", "weather", serde_json::json!({}))?
///     .with_answer(AnswerLink::new("a", 1))?
///     .complete("sunny");
/// let cut = ToolCall::new("c-2", "weather", serde_json::json!({}))?
///     .with_answer(AnswerLink::new("a", 2))?;
/// let transcript = Transcript::new([&text], [], [&done, &cut]);
/// let answer = transcript.answers().next().unwrap();
/// assert_eq!(answer.answered_calls().map(|call| call.call().id()).collect::<Vec<_>>(), ["c-1"]);
/// assert_eq!(answer.unanswered_calls().map(ToolCall::id).collect::<Vec<_>>(), ["c-2"]);
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    pub(super) id: Option<&'a str>,
    pub(super) parts: Vec<Part<'a>>,
}

impl<'a> Answer<'a> {
    /// The answer id its records carry; `None` for records without a link, grouped by time.
    pub fn id(&self) -> Option<&'a str> {
        self.id
    }

    /// The parts, in the order the model produced them.
    pub fn parts(&self) -> &[Part<'a>] {
        &self.parts
    }

    /// Its text messages, in order.
    pub fn texts(&self) -> impl DoubleEndedIterator<Item = &'a Message> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::Text(message) => Some(*message),
            _ => None,
        })
    }

    /// Its reasoning, in order.
    pub fn reasoning(&self) -> impl DoubleEndedIterator<Item = &'a Thought> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::Reasoning(thought) => Some(*thought),
            _ => None,
        })
    }

    /// Its tool calls, answered or not, in order.
    pub fn calls(&self) -> impl DoubleEndedIterator<Item = &Call<'a>> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::Call(call) => Some(call),
            _ => None,
        })
    }

    /// The calls that have their result, in order: what may be sent back to a model.
    pub fn answered_calls(&self) -> impl DoubleEndedIterator<Item = &AnsweredCall<'a>> + '_ {
        self.calls().filter_map(|call| match call {
            Call::Answered(answered) => Some(answered),
            Call::Unanswered(_) => None,
        })
    }

    /// The calls without a result (an interrupted turn), in order.
    pub fn unanswered_calls(&self) -> impl DoubleEndedIterator<Item = &'a ToolCall> + '_ {
        self.calls().filter_map(|call| match call {
            Call::Unanswered(call) => Some(*call),
            Call::Answered(_) => None,
        })
    }
}

/// One part of an [`Answer`].
#[derive(Debug, Clone)]
pub enum Part<'a> {
    /// Reasoning the model produced.
    Reasoning(&'a Thought),
    /// Text the model wrote (an assistant message).
    Text(&'a Message),
    /// A tool call the model made, with its result when there is one.
    Call(Call<'a>),
}

/// A tool call of an [`Answer`]: with its result, or without one.
#[derive(Debug, Clone)]
pub enum Call<'a> {
    /// The call finished; its result follows it.
    Answered(AnsweredCall<'a>),
    /// The call has no result: it was still running when the turn was interrupted (or is
    /// running now). A model must not be sent a call without its result.
    Unanswered(&'a ToolCall),
}

impl<'a> Call<'a> {
    /// The call record, either way.
    pub fn tool_call(&self) -> &'a ToolCall {
        match self {
            Self::Answered(answered) => answered.call,
            Self::Unanswered(call) => call,
        }
    }

    pub(super) fn of(call: &'a ToolCall) -> Self {
        if call.is_complete() {
            Self::Answered(AnsweredCall { call })
        } else {
            Self::Unanswered(call)
        }
    }
}

/// A finished tool call: the call and its result.
#[derive(Debug, Clone, Copy)]
pub struct AnsweredCall<'a> {
    call: &'a ToolCall,
}

impl<'a> AnsweredCall<'a> {
    /// The call record (finished).
    pub fn call(&self) -> &'a ToolCall {
        self.call
    }

    /// What the call produced; `None` when it finished with no output recorded.
    pub fn results(&self) -> Option<&'a ToolCallResults> {
        self.call.results()
    }

    /// Whether it finished with an error (its results then describe the error).
    pub fn is_error(&self) -> bool {
        self.call.is_error()
    }
}

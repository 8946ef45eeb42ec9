//! One ordered view of a conversation: what the person said, and each model answer whole — its
//! reasoning, its text and the tool calls it made, in the order the model produced them, each
//! call with its result.
//!
//! A conversation is stored as separate records — [`Message`]s, [`Thought`]s and [`ToolCall`]s,
//! each in its own collection — because each is written at its own moment: a tool call while
//! the answer streams, the text when it ends, the call's result after the tool ran. Merging the
//! collections by creation time puts the parts of one answer in the order they happened to be
//! *written*, not the order the model *produced* them; a model shown its own text after its tool
//! results answers again. [`Transcript`] rebuilds the conversation from the explicit
//! [`AnswerLink`] each record of an answer carries instead:
//!
//! - a user message is an [`Entry::User`];
//! - the records sharing an answer id are one [`Entry::Answer`], their [`Part`]s in `position`
//!   order (on equal positions: reasoning, then text, then calls, then the order they were
//!   read in);
//! - entries are ordered by their first record's creation time (an answer by its earliest part);
//!   on equal times messages come before thoughts, thoughts before tool calls, and each
//!   collection keeps its own order, so the result is deterministic;
//! - a call is [`Call::Answered`] once it finished (its result follows it) and
//!   [`Call::Unanswered`] while it has none — a turn interrupted while the tool ran leaves one.
//!   [`Answer::answered_calls`] yields only the former, so what an executor sends back to a
//!   model always pairs each call with its result.
//!
//! **Records without a link** (written before links existed, or by code that sets none) are
//! grouped by the rule [`link_legacy_answers`](crate::primitives::link_legacy_answers)
//! documents — the rule the SQLite and PostgreSQL batteries' migrations used to link the rows
//! they already held: merged by creation time, a record joins the answer being read unless a
//! result of one of its calls existed before the record was created, or it is a second text, or
//! reasoning after reasoning or text. Within such an answer: reasoning, text, then calls. A
//! user message or a linked record ends it. Such an answer has no [`id`](Answer::id).
//!
//! Executors allocate an answer id per model call with [`AnswerParts`] and give each record they
//! store its next link; `ScriptedModel` and `adk::openai`'s executor do.
//!
//! ```
//! use adk::primitives::{AnswerLink, Message, Timestamp, ToolCall};
//! use adk::transcript::{Call, Entry, Part, Transcript};
//!
//! let at = |second: i64| Timestamp::from_second(1_800_000_000 + second).unwrap();
//! let question = Message::user("m-1", "Weather in Oslo?")?.with_created_at(at(0));
//! // The call was written while the answer streamed, the text when it ended.
//! let call = ToolCall::new("c-1", "weather", serde_json::json!({"city": "Oslo"}))?
//!     .with_answer(AnswerLink::new("a-1", 1))?
//!     .with_created_at(at(1))
//!     .complete("4°C");
//! let text = Message::assistant("m-2", "Let me check.")?
//!     .with_answer(AnswerLink::new("a-1", 0))?
//!     .with_created_at(at(2));
//!
//! let messages = [question, text];
//! let transcript = Transcript::new(&messages, [], [&call]);
//! let [Entry::User(asked), Entry::Answer(answer)] = transcript.entries() else {
//!     panic!("a question and one answer");
//! };
//! assert_eq!(asked.id(), "m-1");
//! assert_eq!(answer.id(), Some("a-1"));
//! assert!(matches!(answer.parts()[0], Part::Text(text) if text.id() == "m-2"));
//! assert!(matches!(&answer.parts()[1], Part::Call(Call::Answered(done)) if done.call().id() == "c-1"));
//! # Ok::<(), adk::primitives::PrimitiveError>(())
//! ```

mod answer;
mod build;
mod parts;

pub use answer::{Answer, AnsweredCall, Call, Part};
pub use parts::AnswerParts;

use crate::context::{DispatchContext, TurnContext};
use crate::primitives::{Message, Thought, ToolCall};

#[cfg(doc)]
use crate::primitives::AnswerLink;

/// One entry of a [`Transcript`].
#[derive(Debug, Clone)]
pub enum Entry<'a> {
    /// What the person said.
    User(&'a Message),
    /// One answer of the model, whole.
    Answer(Answer<'a>),
}

/// A conversation in the order it was said: user messages and model answers, each answer whole.
/// See the [module documentation](self) for how it is built.
///
/// It borrows the records it was built from; build it again after the collections change.
#[derive(Debug, Clone, Default)]
pub struct Transcript<'a> {
    entries: Vec<Entry<'a>>,
}

impl<'a> Transcript<'a> {
    /// The transcript of these records, each list in its collection's (storage) order: a
    /// [`Collection`](crate::context::Collection), a `Vec` or slice fetched from storage, or
    /// any other iterator of references.
    pub fn new(
        messages: impl IntoIterator<Item = &'a Message>,
        thoughts: impl IntoIterator<Item = &'a Thought>,
        tool_calls: impl IntoIterator<Item = &'a ToolCall>,
    ) -> Self {
        Self {
            entries: build::entries(
                messages.into_iter().collect(),
                thoughts.into_iter().collect(),
                tool_calls.into_iter().collect(),
            ),
        }
    }

    /// The transcript of a dispatch: its messages, thoughts and tool calls as they are now,
    /// including what earlier iterations of this dispatch stored.
    ///
    /// ```
    /// use adk::DispatchContext;
    /// use adk::transcript::Transcript;
    ///
    /// fn last_answer_text(ctx: &DispatchContext) -> Option<String> {
    ///     let transcript = Transcript::of_dispatch(ctx);
    ///     let answer = transcript.answers().last()?;
    ///     Some(answer.texts().filter_map(|text| text.content()).map(|text| text.render()).collect())
    /// }
    /// # let _ = last_answer_text;
    /// ```
    pub fn of_dispatch(ctx: &'a DispatchContext) -> Self {
        Self::new(&ctx.messages, &ctx.thoughts, &ctx.tool_calls)
    }

    /// The transcript of a turn's messages, thoughts and tool calls.
    pub fn of_turn(ctx: &'a TurnContext) -> Self {
        Self::new(&ctx.messages, &ctx.thoughts, &ctx.tool_calls)
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[Entry<'a>] {
        &self.entries
    }

    /// The entries, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Entry<'a>> {
        self.entries.iter()
    }

    /// The model's answers, in order.
    pub fn answers(&self) -> impl DoubleEndedIterator<Item = &Answer<'a>> {
        self.entries.iter().filter_map(|entry| match entry {
            Entry::Answer(answer) => Some(answer),
            Entry::User(_) => None,
        })
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'t, 'a> IntoIterator for &'t Transcript<'a> {
    type Item = &'t Entry<'a>;
    type IntoIter = std::slice::Iter<'t, Entry<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

impl<'a> IntoIterator for Transcript<'a> {
    type Item = Entry<'a>;
    type IntoIter = std::vec::IntoIter<Entry<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

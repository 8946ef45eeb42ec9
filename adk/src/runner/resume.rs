//! Resuming a turn a crash interrupted: how the runner finds it in the stored transcript, and
//! what it does with it. See [`TurnRunner::resume`](super::TurnRunner::resume) and
//! `docs/durability.md`.

use crate::context::{HeldUserMessage, InvalidTurnContext, RawTurnContext, ResumePoint};
use crate::ids::TurnId;
use crate::primitives::{Message, Thought, ToolCall};
use crate::storage::{SharedStorage, StorageContext, StorageError};
use crate::transcript::{Entry, Part, Transcript};

use super::TurnOutcome;

/// A turn of a conversation that did not end, as [`TurnRunner::interrupted`] read it from the
/// stored transcript: the user's question with no answer after it, or a model answer with
/// tool calls (with or without their results) and no answer after those.
///
/// [`TurnRunner::interrupted`]: super::TurnRunner::interrupted
#[derive(Debug, Clone)]
pub struct InterruptedTurn {
    turn_id: Option<TurnId>,
    user_message: Option<Message>,
    messages: Vec<Message>,
    thoughts: Vec<Thought>,
    tool_calls: Vec<ToolCall>,
    next_iteration: u32,
}

impl InterruptedTurn {
    /// The interrupted turn's id, read from its answers' links (`{turn}/dispatch-{iteration}`,
    /// as [`AnswerParts::for_model_call`](crate::transcript::AnswerParts::for_model_call) makes
    /// them); `None` when it stored no answer (it stopped before the model answered), and then
    /// a resume runs as a new turn over the stored question.
    pub fn turn_id(&self) -> Option<&TurnId> {
        self.turn_id.as_ref()
    }

    /// The question the turn answers, when one is stored before its answers.
    pub fn user_message(&self) -> Option<&Message> {
        self.user_message.as_ref()
    }

    /// Every tool call the turn stored, in the order the model made them, with or without a
    /// result.
    pub fn tool_calls(&self) -> &[ToolCall] {
        &self.tool_calls
    }

    /// The calls without a result: a resume settles them under the ledger's rules before it
    /// calls the model.
    pub fn unanswered_calls(&self) -> impl Iterator<Item = &ToolCall> + '_ {
        self.tool_calls.iter().filter(|call| !call.is_complete())
    }

    /// The dispatch iteration a resume starts at: one past the turn's last stored answer.
    pub fn next_iteration(&self) -> u32 {
        self.next_iteration
    }

    pub(super) fn into_resume(self) -> (Option<TurnId>, Option<Message>, ResumePoint) {
        let unanswered = self
            .tool_calls
            .iter()
            .filter(|call| !call.is_complete())
            .cloned()
            .collect();
        let point = ResumePoint {
            first_iteration: self.next_iteration,
            unanswered,
            messages: self.messages,
            thoughts: self.thoughts,
            tool_calls: self.tool_calls,
        };
        (self.turn_id, self.user_message, point)
    }
}

/// What [`TurnRunner::resume`](super::TurnRunner::resume) did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Resumption {
    /// The conversation's last turn ended (its last answer made no tool call), or nothing is
    /// stored: nothing ran.
    NothingToResume,
    /// The interrupted turn ran on; its outcome, as `run` returns one.
    Resumed(Box<TurnOutcome>),
}

impl Resumption {
    /// The resumed turn's outcome; `None` when there was nothing to resume.
    pub fn outcome(&self) -> Option<&TurnOutcome> {
        match self {
            Self::Resumed(outcome) => Some(outcome),
            Self::NothingToResume => None,
        }
    }

    /// The resumed turn's outcome, owned; `None` when there was nothing to resume.
    pub fn into_outcome(self) -> Option<TurnOutcome> {
        match self {
            Self::Resumed(outcome) => Some(*outcome),
            Self::NothingToResume => None,
        }
    }
}

/// Why [`TurnRunner::resume`](super::TurnRunner::resume) or
/// [`TurnRunner::interrupted`](super::TurnRunner::interrupted) could not look, or could not go
/// on. Nothing ran.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The raw input was refused, as `run` refuses it.
    #[error(transparent)]
    InvalidTurnContext(#[from] InvalidTurnContext),
    /// A resume continues the stored question; a new one belongs to a new turn.
    #[error(
        "a turn to resume was given a user message; resume continues the question the \
         interrupted turn stored: leave `user_message` out, and `run` a new turn for a new \
         question"
    )]
    UserMessageGiven,
    /// Reading the stored transcript failed.
    #[error("the conversation's records could not be read to find an interrupted turn")]
    Storage(#[source] StorageError),
    /// The last answer made tool calls but its id does not say which turn made it, so the
    /// ledger's records of its calls cannot be found (running them as a new turn could run an
    /// at-most-once call twice).
    #[error(
        "the last answer (id {answer_id:?}) made tool calls without results, but its id does not \
         name its turn as `{{turn}}/dispatch-{{iteration}}`; resume needs answers linked by \
         `AnswerParts::for_model_call`, as adk's executors link them"
    )]
    UnknownTurn {
        /// The answer's id, when it has one.
        answer_id: Option<String>,
    },
}

/// `{turn}/dispatch-{iteration}` split into the turn and the iteration.
fn turn_of(answer_id: &str) -> Option<(TurnId, u32)> {
    let (dispatch, iteration) = answer_id.rsplit_once('-')?;
    let turn = dispatch.strip_suffix("/dispatch")?;
    let iteration = iteration.parse().ok()?;
    (!turn.is_empty()).then(|| (TurnId::from(turn), iteration))
}

/// Reads the conversation `ctx` names and returns its last turn when that turn did not end.
pub(super) async fn find_interrupted(
    storage: &SharedStorage,
    ctx: &StorageContext,
) -> Result<Option<InterruptedTurn>, ResumeError> {
    let messages = storage
        .fetch_messages(ctx)
        .await
        .map_err(ResumeError::Storage)?;
    let thoughts = storage
        .fetch_thoughts(ctx)
        .await
        .map_err(ResumeError::Storage)?;
    let tool_calls = storage
        .fetch_tool_calls(ctx)
        .await
        .map_err(ResumeError::Storage)?;
    let transcript = Transcript::new(&messages, &thoughts, &tool_calls);
    let entries = transcript.entries();
    let last_answer = match entries.last() {
        None => return Ok(None),
        Some(Entry::User(question)) => {
            return Ok(Some(InterruptedTurn {
                turn_id: None,
                user_message: Some((*question).clone()),
                messages: Vec::new(),
                thoughts: Vec::new(),
                tool_calls: Vec::new(),
                next_iteration: 0,
            }));
        }
        Some(Entry::Answer(answer)) => answer,
    };
    if last_answer.calls().next().is_none() {
        return Ok(None);
    }
    let Some((turn_id, _)) = last_answer.id().and_then(turn_of) else {
        return Err(ResumeError::UnknownTurn {
            answer_id: last_answer.id().map(str::to_owned),
        });
    };
    // The turn's answers, newest first, back to its question (or another turn's answer).
    let mut turn = InterruptedTurn {
        turn_id: Some(turn_id.clone()),
        user_message: None,
        messages: Vec::new(),
        thoughts: Vec::new(),
        tool_calls: Vec::new(),
        next_iteration: 0,
    };
    let mut answers = Vec::new();
    for entry in entries.iter().rev() {
        match entry {
            Entry::Answer(answer) => match answer.id().and_then(turn_of) {
                Some((id, iteration)) if id == turn_id => {
                    turn.next_iteration = turn.next_iteration.max(iteration.saturating_add(1));
                    answers.push(answer);
                }
                _ => break,
            },
            Entry::User(question) => {
                turn.user_message = Some((*question).clone());
                break;
            }
        }
    }
    for answer in answers.into_iter().rev() {
        for part in answer.parts() {
            match part {
                Part::Reasoning(thought) => turn.thoughts.push((*thought).clone()),
                Part::Text(message) => turn.messages.push((*message).clone()),
                Part::Call(call) => turn.tool_calls.push(call.tool_call().clone()),
            }
        }
    }
    Ok(Some(turn))
}

/// The storage context of the conversation `raw` names, for reading its records.
pub(super) fn storage_context_of(raw: &RawTurnContext) -> StorageContext {
    StorageContext::new(raw.conversation_id.clone())
        .with_app_name(raw.app_name.clone())
        .with_user_id(raw.user_id.clone())
        .with_thread_id(raw.thread_id.clone())
}

/// `raw` made into the input of the resumed turn: its id, and the stored question.
pub(super) fn resumed_input(
    mut raw: RawTurnContext,
    turn_id: Option<TurnId>,
    question: Option<Message>,
) -> RawTurnContext {
    if let Some(turn_id) = turn_id {
        raw.extras.get_or_insert_with(Box::default).resumed_turn_id = Some(turn_id);
    } else if let Some(extras) = raw.extras.as_mut() {
        extras.resumed_turn_id = None;
    }
    raw.user_message = question.map(|question| HeldUserMessage::Message(Box::new(question)));
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_id_names_its_turn_and_iteration() {
        let (turn, iteration) = turn_of("0193-abc/dispatch-4").unwrap_or_else(|| panic!("parsed"));
        assert_eq!((turn.as_str(), iteration), ("0193-abc", 4));
        assert!(turn_of("a-1").is_none());
        assert!(turn_of("/dispatch-1").is_none());
        assert!(turn_of("t/dispatch-x").is_none());
    }
}

//! [`link_legacy_answers`]: the answer links of records written before links existed, inferred
//! from what those records hold.

use super::{
    AnswerLink, Message, PrimitiveError, PrimitiveKind, Role, Thought, Timestamp, ToolCall,
};

/// Which records [`link_legacy_answers`] linked: indexes into the slices it was given, in
/// ascending order. A storage rewrites exactly these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LegacyLinked {
    /// Indexes into `messages`.
    pub messages: Vec<usize>,
    /// Indexes into `thoughts`.
    pub thoughts: Vec<usize>,
    /// Indexes into `tool_calls`.
    pub tool_calls: Vec<usize>,
}

impl LegacyLinked {
    /// True when nothing was linked.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.thoughts.is_empty() && self.tool_calls.is_empty()
    }
}

/// Gives every unlinked assistant message, thought and tool call among these records the
/// [`AnswerLink`] of the model answer it was part of, inferred from the records alone: for data
/// written before adk stored links, so that it reads back as the answers the model gave.
///
/// Pass the records of one turn (the storage batteries' migrations do, turn by turn), each
/// slice in its storage order. [`crate::transcript`] applies the same rule when it reads
/// unlinked records:
///
/// - the unlinked records are walked in creation-time order (on equal times messages, then
///   thoughts, then tool calls, each slice keeping its own order);
/// - a record joins the answer being read unless the model had already been shown a result of
///   one of that answer's calls when the record was created (a result completed strictly
///   earlier: what came after it is the next answer), or it is a text and the answer already
///   has one, or reasoning and the answer already has reasoning or text;
/// - a user message, or a record that already has a link, ends the answer being read.
///
/// Within an answer the links are numbered reasoning first, then text, then the calls in
/// creation order — the order an OpenAI-style message holds them (`content`, then
/// `tool_calls`); the records do not say more. Answer `n` (0 first) gets the id
/// `{answer_prefix}{n}`, so the prefix must make the ids unique within the conversation, and
/// must not be empty. Records that already have a link, and user messages, are left alone.
///
/// adk's OpenAI executor used to create an answer's tool calls first and its text a moment
/// later, then run the calls: by creation time the text came after its calls. This rule puts it
/// back with them, because no result existed yet when it was written.
///
/// ```
/// use adk::primitives::{Message, Timestamp, ToolCall, link_legacy_answers};
///
/// let at = |ms: i64| Timestamp::from_millisecond(1_767_225_600_000 + ms).unwrap();
/// let mut messages = vec![
///     Message::user("u-1", "Weather in Oslo?")?.with_created_at(at(0)),
///     // Written after its call, before the call's result: the same answer.
///     Message::assistant("m-1", "Let me check.")?.with_created_at(at(20)),
///     // Written after the result: the next answer.
///     Message::assistant("m-2", "4 °C in Oslo.")?.with_created_at(at(900)),
/// ];
/// let mut calls = vec![ToolCall::new("c-1", "weather", serde_json::json!({"city": "Oslo"}))?
///     .with_created_at(at(10))
///     .complete("4 °C")
///     .with_completed_at(Some(at(500)))];
///
/// let linked = link_legacy_answers("legacy/turn-1/", &mut messages, &mut [], &mut calls)?;
/// assert_eq!(linked.messages, [1, 2]);
/// let text = messages[1].answer().unwrap();
/// let call = calls[0].answer().unwrap();
/// assert_eq!((text.answer_id(), text.position()), ("legacy/turn-1/0", 0));
/// assert_eq!((call.answer_id(), call.position()), ("legacy/turn-1/0", 1));
/// assert_eq!(messages[2].answer().unwrap().answer_id(), "legacy/turn-1/1");
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
///
/// # Errors
///
/// [`PrimitiveError`] when `answer_prefix` is empty (a link needs an answer id); nothing is
/// changed then.
pub fn link_legacy_answers(
    answer_prefix: &str,
    messages: &mut [Message],
    thoughts: &mut [Thought],
    tool_calls: &mut [ToolCall],
) -> Result<LegacyLinked, PrimitiveError> {
    // Which answer each unlinked record joins, and each answer's parts by kind.
    let mut grouping = LegacyGrouping::default();
    let mut answers: Vec<[Vec<usize>; 3]> = Vec::new();
    for (kind, index) in merged(messages, thoughts, tool_calls) {
        let linked = match kind {
            LegacyKind::Text => {
                let message = &messages[index];
                message.role() == Role::User || message.answer().is_some()
            }
            LegacyKind::Reasoning => thoughts[index].answer().is_some(),
            LegacyKind::Call => tool_calls[index].answer().is_some(),
        };
        if linked {
            grouping.close();
            continue;
        }
        let (created_at, completed_at) = match kind {
            LegacyKind::Text => (messages[index].created_at(), None),
            LegacyKind::Reasoning => (thoughts[index].created_at(), None),
            LegacyKind::Call => (
                tool_calls[index].created_at(),
                tool_calls[index].completed_at(),
            ),
        };
        let answer = grouping.place(kind, created_at, completed_at);
        if answers.len() <= answer {
            answers.resize_with(answer + 1, Default::default);
        }
        answers[answer][kind as usize].push(index);
    }

    if answer_prefix.is_empty() {
        return Err(PrimitiveError::new(
            PrimitiveKind::Message,
            None,
            "answer",
            "the legacy answer ids need a prefix: it is empty",
        ));
    }
    let mut linked = LegacyLinked::default();
    for (number, [reasoning, texts, calls]) in answers.into_iter().enumerate() {
        let id = format!("{answer_prefix}{number}");
        let mut position = 0u32;
        let mut next = || {
            let link = AnswerLink::new(id.clone(), position);
            position = position.saturating_add(1);
            link
        };
        for index in reasoning {
            thoughts[index] = thoughts[index].clone().with_answer(next())?;
            linked.thoughts.push(index);
        }
        for index in texts {
            messages[index] = messages[index].clone().with_answer(next())?;
            linked.messages.push(index);
        }
        for index in calls {
            tool_calls[index] = tool_calls[index].clone().with_answer(next())?;
            linked.tool_calls.push(index);
        }
    }
    linked.messages.sort_unstable();
    linked.thoughts.sort_unstable();
    linked.tool_calls.sort_unstable();
    Ok(linked)
}

/// The three kinds of part an answer has; the discriminant is the order within an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegacyKind {
    Reasoning = 0,
    Text = 1,
    Call = 2,
}

/// The rule that groups unlinked records into answers (see [`link_legacy_answers`]), fed one
/// record at a time in creation-time order. [`crate::transcript`] applies it to unlinked
/// records it reads; the storage migrations apply it through [`link_legacy_answers`].
#[derive(Debug, Default)]
pub(crate) struct LegacyGrouping {
    answers: usize,
    open: Option<OpenAnswer>,
}

#[derive(Debug)]
struct OpenAnswer {
    number: usize,
    has_reasoning: bool,
    has_text: bool,
    /// When the first result of one of the answer's calls existed.
    first_result: Option<Timestamp>,
}

impl LegacyGrouping {
    /// Ends the answer being read: the next unlinked record starts another.
    pub(crate) fn close(&mut self) {
        self.open = None;
    }

    /// The number (0 first) of the answer an unlinked record created at `created_at` belongs
    /// to; `completed_at` is a call's completion time.
    pub(crate) fn place(
        &mut self,
        kind: LegacyKind,
        created_at: Timestamp,
        completed_at: Option<Timestamp>,
    ) -> usize {
        let joins = self.open.as_ref().is_some_and(|open| {
            let result_seen = open.first_result.is_some_and(|done| done < created_at);
            let room = match kind {
                LegacyKind::Reasoning => !open.has_reasoning && !open.has_text,
                LegacyKind::Text => !open.has_text,
                LegacyKind::Call => true,
            };
            !result_seen && room
        });
        if !joins {
            self.open = Some(OpenAnswer {
                number: self.answers,
                has_reasoning: false,
                has_text: false,
                first_result: None,
            });
            self.answers += 1;
        }
        let Some(open) = self.open.as_mut() else {
            return self.answers.saturating_sub(1);
        };
        match kind {
            LegacyKind::Reasoning => open.has_reasoning = true,
            LegacyKind::Text => open.has_text = true,
            LegacyKind::Call => {
                if let Some(done) = completed_at {
                    open.first_result = Some(open.first_result.map_or(done, |seen| seen.min(done)));
                }
            }
        }
        open.number
    }
}

/// The records' indexes merged by creation time: on equal times messages, then thoughts, then
/// calls; each slice keeps its own order.
fn merged(
    messages: &[Message],
    thoughts: &[Thought],
    tool_calls: &[ToolCall],
) -> Vec<(LegacyKind, usize)> {
    let mut order: Vec<(Timestamp, u8, usize, LegacyKind)> = Vec::new();
    order.extend(
        messages
            .iter()
            .enumerate()
            .map(|(index, record)| (record.created_at(), 0, index, LegacyKind::Text)),
    );
    order.extend(
        thoughts
            .iter()
            .enumerate()
            .map(|(index, record)| (record.created_at(), 1, index, LegacyKind::Reasoning)),
    );
    order.extend(
        tool_calls
            .iter()
            .enumerate()
            .map(|(index, record)| (record.created_at(), 2, index, LegacyKind::Call)),
    );
    // Stable and keyed on (time, kind): each slice keeps its order among equal times. A slice
    // out of time order is read by time, which is what the records say.
    order.sort_by_key(|(at, rank, _, _)| (*at, *rank));
    order
        .into_iter()
        .map(|(_, _, index, kind)| (kind, index))
        .collect()
}

//! Building a transcript: one pass over the records merged by creation time, answers gathered
//! by their link (or, for records without one, by the rule legacy records are linked with:
//! [`link_legacy_answers`](crate::primitives::link_legacy_answers)).

use std::collections::HashMap;

use crate::primitives::{
    AnswerLink, LegacyGrouping, LegacyKind, Message, Role, Thought, Timestamp, ToolCall,
};

use super::Entry;
use super::answer::{Answer, Call, Part};

/// One record of any of the three collections.
#[derive(Clone, Copy)]
enum Record<'a> {
    Message(&'a Message),
    Thought(&'a Thought),
    Call(&'a ToolCall),
}

impl<'a> Record<'a> {
    /// The tie-break of the time merge: on equal creation times messages come first, then
    /// thoughts, then tool calls, as the merge of messages and calls always did.
    fn rank(self) -> u8 {
        match self {
            Self::Message(_) => 0,
            Self::Thought(_) => 1,
            Self::Call(_) => 2,
        }
    }

    fn created_at(self) -> Timestamp {
        match self {
            Self::Message(message) => message.created_at(),
            Self::Thought(thought) => thought.created_at(),
            Self::Call(call) => call.created_at(),
        }
    }

    fn link(self) -> Option<&'a AnswerLink> {
        match self {
            Self::Message(message) => message.answer(),
            Self::Thought(thought) => thought.answer(),
            Self::Call(call) => call.answer(),
        }
    }

    fn part(self) -> Part<'a> {
        match self {
            Self::Message(message) => Part::Text(message),
            Self::Thought(thought) => Part::Reasoning(thought),
            Self::Call(call) => Part::Call(Call::of(call)),
        }
    }

    /// Where the part goes within a linked answer: by position, then reasoning, text, calls.
    fn order_in_answer(self, position: u32) -> (u32, u32) {
        (position, self.kind() as u32)
    }

    /// The kind of part, which also orders equal positions: reasoning, text, calls.
    fn kind(self) -> LegacyKind {
        match self {
            Self::Thought(_) => LegacyKind::Reasoning,
            Self::Message(_) => LegacyKind::Text,
            Self::Call(_) => LegacyKind::Call,
        }
    }

    /// When a call's result existed.
    fn completed_at(self) -> Option<Timestamp> {
        match self {
            Self::Call(call) => call.completed_at(),
            Self::Message(_) | Self::Thought(_) => None,
        }
    }
}

/// An answer being gathered: its parts with the key they are sorted by at the end.
struct Gathering<'a> {
    id: Option<&'a str>,
    parts: Vec<((u32, u32), Part<'a>)>,
}

enum Building<'a> {
    User(&'a Message),
    Answer(Gathering<'a>),
}

pub(super) fn entries<'a>(
    messages: Vec<&'a Message>,
    thoughts: Vec<&'a Thought>,
    tool_calls: Vec<&'a ToolCall>,
) -> Vec<Entry<'a>> {
    let mut building: Vec<Building<'a>> = Vec::new();
    let mut linked: HashMap<&'a str, usize> = HashMap::new();
    // Unlinked records are grouped by the rule the storage migrations link legacy rows with;
    // a user message or a linked record ends the unlinked answer being read.
    let mut grouping = LegacyGrouping::default();
    // Where each unlinked answer (by the grouping's number) is being built.
    let mut unlinked: HashMap<usize, usize> = HashMap::new();

    for record in merged(messages, thoughts, tool_calls) {
        if let Record::Message(message) = record
            && message.role() == Role::User
        {
            building.push(Building::User(message));
            grouping.close();
            continue;
        }
        if let Some(link) = record.link() {
            grouping.close();
            let index = *linked.entry(link.answer_id()).or_insert_with(|| {
                building.push(Building::Answer(Gathering {
                    id: Some(link.answer_id()),
                    parts: Vec::new(),
                }));
                building.len() - 1
            });
            if let Some(Building::Answer(answer)) = building.get_mut(index) {
                answer
                    .parts
                    .push((record.order_in_answer(link.position()), record.part()));
            }
            continue;
        }
        let number = grouping.place(record.kind(), record.created_at(), record.completed_at());
        let index = *unlinked.entry(number).or_insert_with(|| {
            building.push(Building::Answer(Gathering {
                id: None,
                parts: Vec::new(),
            }));
            building.len() - 1
        });
        if let Some(Building::Answer(answer)) = building.get_mut(index) {
            // Unlinked parts: reasoning, text, then calls, each kind in arrival order.
            let arrival = u32::try_from(answer.parts.len()).unwrap_or(u32::MAX);
            answer
                .parts
                .push(((record.kind() as u32, arrival), record.part()));
        }
    }

    building
        .into_iter()
        .map(|entry| match entry {
            Building::User(message) => Entry::User(message),
            Building::Answer(mut answer) => {
                // Stable: equal keys keep the order the records were merged in.
                answer.parts.sort_by_key(|(key, _)| *key);
                Entry::Answer(Answer {
                    id: answer.id,
                    parts: answer.parts.into_iter().map(|(_, part)| part).collect(),
                })
            }
        })
        .collect()
}

/// The three collections merged by creation time: a merge, not a sort, so each keeps its own
/// order; on equal times messages go first, then thoughts, then tool calls.
fn merged<'a>(
    messages: Vec<&'a Message>,
    thoughts: Vec<&'a Thought>,
    tool_calls: Vec<&'a ToolCall>,
) -> Vec<Record<'a>> {
    let mut sources = [
        messages
            .into_iter()
            .map(Record::Message)
            .collect::<Vec<_>>()
            .into_iter()
            .peekable(),
        thoughts
            .into_iter()
            .map(Record::Thought)
            .collect::<Vec<_>>()
            .into_iter()
            .peekable(),
        tool_calls
            .into_iter()
            .map(Record::Call)
            .collect::<Vec<_>>()
            .into_iter()
            .peekable(),
    ];
    let total = sources.iter().map(|source| source.len()).sum();
    let mut out = Vec::with_capacity(total);
    loop {
        let next = sources
            .iter_mut()
            .enumerate()
            .filter_map(|(index, source)| {
                source
                    .peek()
                    .map(|record| ((record.created_at(), record.rank()), index))
            })
            .min()
            .map(|(_, index)| index);
        match next.and_then(|index| sources.get_mut(index)?.next()) {
            Some(record) => out.push(record),
            None => break,
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use serde_json::json;

    use super::super::Transcript;
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    fn link(answer: &str, position: u32) -> AnswerLink {
        AnswerLink::new(answer, position)
    }

    /// `user:id`, `text:id`, `think:id`, `call:id` / `pending:id`, answers in brackets.
    fn shape(transcript: &Transcript<'_>) -> Vec<String> {
        transcript
            .iter()
            .map(|entry| match entry {
                Entry::User(message) => format!("user:{}", message.id()),
                Entry::Answer(answer) => {
                    let parts: Vec<String> = answer
                        .parts()
                        .iter()
                        .map(|part| match part {
                            Part::Text(message) => format!("text:{}", message.id()),
                            Part::Reasoning(thought) => format!("think:{}", thought.id()),
                            Part::Call(Call::Answered(call)) => {
                                format!("call:{}", call.call().id())
                            }
                            Part::Call(Call::Unanswered(call)) => format!("pending:{}", call.id()),
                        })
                        .collect();
                    format!("{}[{}]", answer.id().unwrap_or("-"), parts.join(" "))
                }
            })
            .collect()
    }

    #[test]
    fn linked_parts_follow_their_positions_whatever_their_creation_times() {
        let messages = [
            Message::user("u1", "Oslo?").unwrap().with_created_at(at(0)),
            Message::assistant("t1", "Let me check.")
                .unwrap()
                .with_answer(link("a1", 1))
                .unwrap()
                .with_created_at(at(5)),
            Message::assistant("t2", "4 degrees.")
                .unwrap()
                .with_answer(link("a2", 0))
                .unwrap()
                .with_created_at(at(9)),
        ];
        let thoughts = [Thought::new("r1", "they want Oslo")
            .unwrap()
            .with_answer(link("a1", 0))
            .unwrap()
            .with_created_at(at(4))];
        let calls = [
            ToolCall::new("c1", "weather", json!({}))
                .unwrap()
                .with_answer(link("a1", 2))
                .unwrap()
                .with_created_at(at(2))
                .complete("4"),
            ToolCall::new("c2", "weather", json!({}))
                .unwrap()
                .with_answer(link("a1", 3))
                .unwrap()
                .with_created_at(at(3)),
        ];
        let transcript = Transcript::new(&messages, &thoughts, &calls);
        assert_eq!(
            shape(&transcript),
            [
                "user:u1",
                "a1[think:r1 text:t1 call:c1 pending:c2]",
                "a2[text:t2]"
            ]
        );
        let answer = transcript.answers().next().unwrap();
        assert_eq!(
            answer
                .unanswered_calls()
                .map(ToolCall::id)
                .collect::<Vec<_>>(),
            ["c2"]
        );
    }

    #[test]
    fn unlinked_records_split_into_answers_where_a_result_came_back() {
        let messages = [
            Message::user("u1", "Oslo?").unwrap().with_created_at(at(0)),
            // Written after its calls but before their results: the same answer.
            Message::assistant("t1", "Checking.")
                .unwrap()
                .with_created_at(at(2)),
            // Written after c1's result: the next answer.
            Message::assistant("t2", "Done.")
                .unwrap()
                .with_created_at(at(5)),
            Message::user("u2", "Bergen?")
                .unwrap()
                .with_created_at(at(6)),
            Message::assistant("t3", "Let me check.")
                .unwrap()
                .with_created_at(at(9)),
            Message::assistant("t4", "Rain.")
                .unwrap()
                .with_created_at(at(21)),
        ];
        let thoughts = [Thought::new("r1", "hmm").unwrap().with_created_at(at(7))];
        let calls = [
            ToolCall::new("c1", "weather", json!({}))
                .unwrap()
                .with_created_at(at(1))
                .complete("sunny")
                .with_completed_at(Some(at(3))),
            ToolCall::new("c2", "weather", json!({}))
                .unwrap()
                .with_created_at(at(2)),
            ToolCall::new("c3", "weather", json!({}))
                .unwrap()
                .with_created_at(at(8))
                .complete("rain")
                .with_completed_at(Some(at(20))),
        ];
        let transcript = Transcript::new(&messages, &thoughts, &calls);
        assert_eq!(
            shape(&transcript),
            [
                "user:u1",
                "-[text:t1 call:c1 pending:c2]",
                "-[text:t2]",
                "user:u2",
                "-[think:r1 text:t3 call:c3]",
                "-[text:t4]",
            ]
        );
    }

    #[test]
    fn equal_times_put_messages_first_and_keep_each_collections_order() {
        let messages = [
            Message::user("u1", "a").unwrap().with_created_at(at(0)),
            Message::user("u2", "b").unwrap().with_created_at(at(0)),
        ];
        let calls = [ToolCall::new("c1", "t", json!({}))
            .unwrap()
            .with_answer(link("a1", 0))
            .unwrap()
            .with_created_at(at(0))];
        let transcript = Transcript::new(&messages, [], &calls);
        assert_eq!(shape(&transcript), ["user:u1", "user:u2", "a1[pending:c1]"]);
        assert!(Transcript::new([], [], []).is_empty());
    }
}

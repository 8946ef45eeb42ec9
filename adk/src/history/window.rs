//! Which entries of a transcript a window keeps: whole entries, counted back from the newest.

use crate::primitives::Timestamp;
use crate::tokens::TokenCounter;
use crate::transcript::{Call, Entry, Part};

/// How much history [`LoadHistory`](super::LoadHistory) loads. Whatever the window, it is
/// filled with whole transcript entries (a user message, or a model answer with every call and
/// its result), counted back from the newest, so it never starts inside an answer or between a
/// tool call and its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryWindow {
    /// The last `n` turns: the last `n` user messages and everything after the first of them.
    /// The turn being run counts as one (its user message is stored before `turn_input`).
    Turns(usize),
    /// At most `n` chat messages, as an OpenAI-style request counts them: a user message is
    /// one; an answer is one assistant message (when it has text or answered calls) plus one
    /// result message per answered call.
    Messages(usize),
    /// At most `n` tokens, counted by the loader's [`TokenCounter`] as
    /// [`TokenCounter::entry`] does; standing instructions and memories the loader adds count
    /// against the same `n` first.
    Tokens(usize),
}

/// Where a selection over a transcript's entries starts, and whether the window stopped it
/// (rather than running out of entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Selection {
    pub(super) start: usize,
    pub(super) filled: bool,
    pub(super) tokens: usize,
}

/// When an entry starts: its first record's creation time (an answer's earliest part).
pub(super) fn entry_start(entry: &Entry<'_>) -> Option<Timestamp> {
    match entry {
        Entry::User(message) => Some(message.created_at()),
        Entry::Answer(answer) => answer
            .parts()
            .iter()
            .map(|part| match part {
                Part::Reasoning(thought) => thought.created_at(),
                Part::Text(message) => message.created_at(),
                Part::Call(call) => call.tool_call().created_at(),
            })
            .min(),
    }
}

/// How many chat messages an entry sends.
fn messages_of(entry: &Entry<'_>) -> usize {
    match entry {
        Entry::User(_) => 1,
        Entry::Answer(answer) => {
            let answered = answer
                .calls()
                .filter(|call| matches!(call, Call::Answered(_)))
                .count();
            let has_text = answer.texts().next().is_some();
            usize::from(has_text || answered > 0) + answered
        }
    }
}

impl HistoryWindow {
    /// Walks `entries[first..]` back from the newest, keeping whole entries while the window
    /// has room. `spent` tokens are already taken (instructions and memories).
    pub(super) fn select(
        self,
        entries: &[Entry<'_>],
        first: usize,
        counter: Option<&TokenCounter>,
        reasoning: bool,
        spent: usize,
    ) -> Selection {
        let mut start = entries.len();
        let mut used = 0_usize;
        let mut tokens = spent;
        while start > first {
            let entry = &entries[start - 1];
            let entry_tokens = counter.map_or(0, |counter| counter.entry(entry, reasoning));
            let fits = match self {
                // Once n user messages are in, what is older belongs to an older turn.
                Self::Turns(n) => used < n,
                Self::Messages(n) => used + messages_of(entry) <= n,
                Self::Tokens(n) => tokens + entry_tokens <= n,
            };
            if !fits {
                return Selection {
                    start,
                    filled: true,
                    tokens,
                };
            }
            used += match self {
                Self::Turns(_) => usize::from(matches!(entry, Entry::User(_))),
                Self::Messages(_) => messages_of(entry),
                Self::Tokens(_) => 0,
            };
            tokens += entry_tokens;
            start -= 1;
        }
        Selection {
            start,
            filled: false,
            tokens,
        }
    }

    /// How many records of each collection the first fetch asks for.
    pub(super) fn first_fetch(self) -> usize {
        let guess = match self {
            Self::Turns(n) => n.saturating_mul(8),
            Self::Messages(n) => n.saturating_add(n / 2),
            // A short chat message is ~20 tokens with its framing; some spare, so one read
            // usually fills the window.
            Self::Tokens(n) => n / 12,
        };
        guess.clamp(16, 4096)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::primitives::{AnswerLink, Message, ToolCall};
    use crate::transcript::Transcript;

    #[test]
    fn turns_keep_the_answers_of_the_oldest_kept_turn_and_nothing_before_it() {
        let link = |n| AnswerLink::new(format!("a{n}"), 0);
        let messages = vec![
            Message::user("u0", "q0").unwrap(),
            Message::assistant("t0", "r0")
                .unwrap()
                .with_answer(link(0))
                .unwrap(),
            Message::user("u1", "q1").unwrap(),
            Message::assistant("t1", "r1")
                .unwrap()
                .with_answer(link(1))
                .unwrap(),
            Message::user("u2", "q2").unwrap(),
        ];
        let transcript = Transcript::new(&messages, [], std::iter::empty::<&ToolCall>());
        let selection = HistoryWindow::Turns(2).select(transcript.entries(), 0, None, false, 0);
        assert_eq!(selection.start, 2);
        assert!(selection.filled);
        let all = HistoryWindow::Turns(5).select(transcript.entries(), 0, None, false, 0);
        assert_eq!((all.start, all.filled), (0, false));
    }
}

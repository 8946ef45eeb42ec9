//! Token counting: how many tokens the records of a conversation cost a model.
//!
//! A [`TokenCounter`] counts a conversation's records the way the OpenAI chat format spends them:
//! each message costs its text plus [`MESSAGE_OVERHEAD`] (the role and the message's framing),
//! a tool call its name and JSON arguments plus [`CALL_OVERHEAD`], and its result one more
//! message. The text is counted by a [`Tokenizer`]:
//!
//! - [`Tiktoken`] (feature `tiktoken`): the real byte-pair encodings of OpenAI's models
//!   (`o200k_base` for the GPT-4o, GPT-4.1, GPT-5 and o-series families, `cl100k_base` for
//!   GPT-4 and GPT-3.5), through the [`tiktoken-rs`](https://docs.rs/tiktoken-rs) crate, which
//!   embeds OpenAI's published vocabularies and matches Python `tiktoken` token for token;
//! - [`Heuristic`]: for a model whose tokenizer adk does not have. It never reads a vocabulary:
//!   one token per 4 bytes of ASCII text, rounded up, plus one token per non-ASCII character.
//!   English prose in `cl100k_base`/`o200k_base` averages 4.0–4.5 bytes per token, so the
//!   heuristic overestimates it slightly; a CJK character is about one token, as counted. Use it
//!   for windows and budgets that must not be exceeded, not for billing.
//!
//! [`TokenCounter::for_model`] picks the tokenizer from a model name: a real one when the
//! `tiktoken` feature is on and the model is an OpenAI model, the heuristic otherwise.
//!
//! **Counts are cached per record**, keyed by the record's kind, id and `updated_at`, so counting
//! a long history a second time (the next turn's window) tokenizes nothing again; a mutated
//! record (a new `updated_at`) is counted afresh, and records with dynamic text are never
//! cached. Clones of a counter share its cache.
//!
//! **What the provider reports** is exact and always wins where it exists: an executor reports
//! each model call's usage as [`GenerationStats`](crate::events::GenerationStats), read back by
//! middleware with [`DispatchContext::generation_stats`](crate::DispatchContext::generation_stats),
//! and [`Usage`] reads it (the token budgets of [`crate::budget`] count it). Counting is for
//! what has not been sent yet: which history fits a window.
//!
//! ```
//! use adk::primitives::Message;
//! use adk::tokens::{Heuristic, TokenCounter};
//!
//! let counter = TokenCounter::new(Heuristic);
//! let hello = Message::user("m-1", "Hello there, how are you?")?;
//! // 25 ASCII bytes -> 7 tokens of text, plus the message's framing.
//! assert_eq!(counter.text("Hello there, how are you?"), 7);
//! assert_eq!(counter.message(&hello), 7 + adk::tokens::MESSAGE_OVERHEAD);
//! # Ok::<(), adk::primitives::PrimitiveError>(())
//! ```
// `Tiktoken` exists only with its feature: without it, the link above goes to the item's page
// on docs.rs (built with every feature) instead of failing `cargo doc`.
#![cfg_attr(feature = "tiktoken", doc = "[`Tiktoken`]: Tiktoken")]
#![cfg_attr(
    not(feature = "tiktoken"),
    doc = "[`Tiktoken`]: https://docs.rs/checked-adk/latest/adk/tokens/struct.Tiktoken.html"
)]

mod cache;
mod heuristic;
#[cfg(feature = "tiktoken")]
mod tiktoken;
mod usage;

use std::fmt;
use std::sync::Arc;

pub use heuristic::Heuristic;
#[cfg(feature = "tiktoken")]
#[cfg_attr(docsrs, doc(cfg(feature = "tiktoken")))]
pub use tiktoken::{Encoding, Tiktoken, TiktokenError};
pub use usage::Usage;

use crate::primitives::{Memory, Message, StandingInstruction, Thought, ToolCall, ToolCallResults};
use crate::transcript::{Answer, Call, Entry, Part};
use cache::{Cache, Kind};

/// Tokens of a chat message's framing besides its text: OpenAI's documented 3 per message plus
/// 1 for the role.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Tokens a tool call costs in its assistant message besides its name and arguments (its id,
/// type and the function wrapper).
pub const CALL_OVERHEAD: usize = 8;

/// Tokens that priming the model's reply adds to every request (OpenAI's documented 3).
pub const REPLY_PRIMING: usize = 3;

/// Tokens a media attachment or result is counted as: the cost of one low-detail image, since
/// the bytes are not read to count them.
pub const MEDIA_TOKENS: usize = 85;

/// Counts the tokens of a text for one model's vocabulary.
pub trait Tokenizer: Send + Sync + fmt::Debug + 'static {
    /// The number of tokens `text` encodes to (special tokens count as text).
    fn count(&self, text: &str) -> usize;

    /// A short name for logs and errors: the encoding, or `"heuristic"`.
    fn name(&self) -> &str;
}

/// Counts the tokens of records, with a per-record cache; see the [module documentation](self).
///
/// Cheap to clone: clones share the tokenizer and the cache.
#[derive(Clone, Debug)]
pub struct TokenCounter {
    tokenizer: Arc<dyn Tokenizer>,
    cache: Arc<Cache>,
}

impl TokenCounter {
    /// A counter over `tokenizer`, with an empty cache.
    pub fn new(tokenizer: impl Tokenizer) -> Self {
        Self {
            tokenizer: Arc::new(tokenizer),
            cache: Arc::new(Cache::default()),
        }
    }

    /// The counter for a model: its real tokenizer when the `tiktoken` feature is on and the
    /// name is an OpenAI model's (`gpt-4o`, `gpt-4.1-mini`, `o3`, `gpt-3.5-turbo`…, with or
    /// without a provider prefix such as `openai/`), [`Heuristic`] otherwise.
    ///
    /// ```
    /// use adk::tokens::TokenCounter;
    ///
    /// let unknown = TokenCounter::for_model("my-local-llama");
    /// assert_eq!(unknown.tokenizer_name(), "heuristic");
    /// ```
    pub fn for_model(model: &str) -> Self {
        #[cfg(feature = "tiktoken")]
        if let Ok(tokenizer) = Tiktoken::for_model(model) {
            return Self::new(tokenizer);
        }
        let _ = model;
        Self::new(Heuristic)
    }

    /// The tokenizer's name.
    pub fn tokenizer_name(&self) -> &str {
        self.tokenizer.name()
    }

    /// The tokens of a text, uncached.
    pub fn text(&self, text: &str) -> usize {
        self.tokenizer.count(text)
    }

    /// How many records' counts the cache holds.
    pub fn cached_records(&self) -> usize {
        self.cache.len()
    }

    /// How many record counts were served from the cache since the counter was made.
    pub fn cache_hits(&self) -> u64 {
        self.cache.hits()
    }

    /// A message as one chat message: its text (attachments at [`MEDIA_TOKENS`] each) plus
    /// [`MESSAGE_OVERHEAD`].
    pub fn message(&self, message: &Message) -> usize {
        let dynamic = message
            .content()
            .is_some_and(|content| content.is_dynamic());
        self.cached(
            Kind::Message,
            message.id(),
            message.updated_at(),
            dynamic,
            || {
                let text = message
                    .content()
                    .map_or(0, |content| self.text(&content.render()));
                MESSAGE_OVERHEAD + text + MEDIA_TOKENS * message.attachments().len()
            },
        )
    }

    /// A tool call and its result: the call's name and JSON arguments plus [`CALL_OVERHEAD`] in
    /// the assistant message, and the result as one more message (text counted, media at
    /// [`MEDIA_TOKENS`], artifacts by their rendered JSON). A call without a result costs its
    /// call part only.
    pub fn tool_call(&self, call: &ToolCall) -> usize {
        let dynamic =
            matches!(call.results(), Some(ToolCallResults::Text(text)) if text.is_dynamic());
        self.cached(
            Kind::ToolCall,
            call.id(),
            call.updated_at(),
            dynamic,
            || {
                let arguments = serde_json::to_string(call.args()).unwrap_or_default();
                let asked = CALL_OVERHEAD + self.text(call.tool()) + self.text(&arguments);
                let result = match call.results() {
                    None => return asked,
                    Some(ToolCallResults::Text(text)) => self.text(&text.render()),
                    Some(ToolCallResults::Media(_)) => MEDIA_TOKENS,
                    Some(ToolCallResults::MediaList(list)) => MEDIA_TOKENS * list.len(),
                    Some(
                        results @ (ToolCallResults::Artifact(_) | ToolCallResults::Artifacts(_)),
                    ) => self.text(&serde_json::to_string(results).unwrap_or_default()),
                };
                asked + MESSAGE_OVERHEAD + result
            },
        )
    }

    /// A thought's text (reasoning is sent back, when it is, inside its answer's message).
    pub fn thought(&self, thought: &Thought) -> usize {
        let content = thought.content();
        self.cached(
            Kind::Thought,
            thought.id(),
            thought.updated_at(),
            content.is_dynamic(),
            || self.text(&content.render()),
        )
    }

    /// A memory as one message of its own.
    pub fn memory(&self, memory: &Memory) -> usize {
        let content = memory.content();
        self.cached(
            Kind::Memory,
            memory.id(),
            memory.updated_at(),
            content.is_dynamic(),
            || MESSAGE_OVERHEAD + self.text(&content.render()),
        )
    }

    /// A standing instruction as one system message (uncached: instructions have no id).
    pub fn standing_instruction(&self, instruction: &StandingInstruction) -> usize {
        MESSAGE_OVERHEAD + self.text(&instruction.render())
    }

    /// One transcript entry: a user message, or an answer with everything it would send
    /// (`reasoning` says whether its reasoning counts). Calls without a result are not counted:
    /// they are never sent.
    pub fn entry(&self, entry: &Entry<'_>, reasoning: bool) -> usize {
        match entry {
            Entry::User(message) => self.message(message),
            Entry::Answer(answer) => self.answer(answer, reasoning),
        }
    }

    /// One answer: one assistant message (its texts joined) with its answered calls, and a
    /// result message per call; 0 for an answer that sends nothing (only calls without a
    /// result, or reasoning not counted).
    pub fn answer(&self, answer: &Answer<'_>, reasoning: bool) -> usize {
        let sends = answer.parts().iter().any(|part| match part {
            Part::Reasoning(_) => reasoning,
            Part::Text(_) | Part::Call(Call::Answered(_)) => true,
            Part::Call(Call::Unanswered(_)) => false,
        });
        if !sends {
            // Only reasoning or calls without a result: nothing is sent.
            return 0;
        }
        let mut total = MESSAGE_OVERHEAD;
        for part in answer.parts() {
            total += match part {
                Part::Reasoning(thought) if reasoning => self.thought(thought),
                Part::Reasoning(_) => 0,
                // The texts share the answer's one message.
                Part::Text(message) => self.message(message).saturating_sub(MESSAGE_OVERHEAD),
                Part::Call(Call::Answered(call)) => self.tool_call(call.call()),
                Part::Call(Call::Unanswered(_)) => 0,
            };
        }
        total
    }

    fn cached(
        &self,
        kind: Kind,
        id: &str,
        updated_at: crate::primitives::Timestamp,
        dynamic: bool,
        count: impl FnOnce() -> usize,
    ) -> usize {
        if dynamic {
            return count();
        }
        if let Some(tokens) = self.cache.get(kind, id, updated_at) {
            return tokens;
        }
        let tokens = count();
        self.cache.insert(kind, id, updated_at, tokens);
        tokens
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, Default)]
    struct Counting(Arc<AtomicUsize>);

    impl Tokenizer for Counting {
        fn count(&self, text: &str) -> usize {
            self.0.fetch_add(1, Ordering::Relaxed);
            text.split_whitespace().count()
        }
        fn name(&self) -> &str {
            "words"
        }
    }

    #[test]
    fn counting_a_history_twice_tokenizes_each_record_once() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = TokenCounter::new(Counting(Arc::clone(&calls)));
        let history: Vec<Message> = (0..1000)
            .map(|n| Message::user(format!("m{n}"), format!("message number {n}")).unwrap())
            .collect();
        let first: usize = history.iter().map(|m| counter.message(m)).sum();
        let tokenized = calls.load(Ordering::Relaxed);
        let second: usize = history.iter().map(|m| counter.message(m)).sum();
        assert_eq!(first, second);
        assert_eq!(first, 1000 * (3 + MESSAGE_OVERHEAD));
        assert_eq!(tokenized, 1000);
        assert_eq!(
            calls.load(Ordering::Relaxed),
            1000,
            "the second count tokenized nothing"
        );
        assert_eq!(counter.cache_hits(), 1000);
    }

    #[test]
    fn a_mutated_record_is_counted_afresh() {
        let counter = TokenCounter::new(Counting::default());
        let at = |s: i64| crate::primitives::Timestamp::from_second(1_800_000_000 + s).unwrap();
        let before = Message::user("m", "one two")
            .unwrap()
            .with_updated_at(at(0));
        let after = Message::user("m", "one two three")
            .unwrap()
            .with_updated_at(at(1));
        assert_eq!(counter.message(&before), 2 + MESSAGE_OVERHEAD);
        assert_eq!(counter.message(&after), 3 + MESSAGE_OVERHEAD);
    }

    #[test]
    fn dynamic_text_is_never_cached() {
        let counter = TokenCounter::new(Counting::default());
        let words = Arc::new(AtomicUsize::new(1));
        let source = Arc::clone(&words);
        let message = Message::user("m", "x")
            .unwrap()
            .with_content(crate::primitives::Tokenizable::dynamic(move || {
                "word ".repeat(source.load(Ordering::Relaxed))
            }))
            .unwrap();
        assert_eq!(counter.message(&message), 1 + MESSAGE_OVERHEAD);
        words.store(5, Ordering::Relaxed);
        assert_eq!(counter.message(&message), 5 + MESSAGE_OVERHEAD);
        assert_eq!(counter.cached_records(), 0);
    }
}

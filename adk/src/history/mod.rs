//! Ready history loading: the `turn_input` middleware that puts the recent conversation into
//! the turn, by turns, messages or tokens, with memories and standing instructions.
//!
//! [`LoadHistory`] reads the conversation's newest records through the context's windowed
//! fetches ([`FetchWindow::Last`]), rebuilds them as a [`Transcript`], and keeps whole entries
//! counted back from the newest until the [`HistoryWindow`] is full:
//!
//! - it **never starts inside an answer**: an answer is kept with all its parts or not at all;
//! - it **never splits a tool call from its result**: a call is loaded only with its result
//!   (calls without one — a turn interrupted while its tool ran — are left out, as the chat
//!   protocols require), and a result only inside the answer that made its call;
//! - its cost does not grow with the conversation: it fetches a tail of each collection (the
//!   window's guess, doubling the tails that cut the transcript while the window is not full) and SQLite serves a tail from
//!   its index. Records of one collection must be stored in creation order, as the runner and
//!   executors store them; entries that might have older parts beyond the fetched tail are not
//!   used until a larger tail is read.
//!
//! Reasoning is left out unless [`with_reasoning`](LoadHistory::with_reasoning) asks for it: chat
//! APIs take a past turn's reasoning back only in special cases, and an executor that needs the
//! current turn's has it in the dispatch.
//!
//! ```
//! use adk::history::LoadHistory;
//! use adk::prelude::*;
//! use adk::tokens::TokenCounter;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let runner = TurnRunner::builder()
//!     .storage(adk::sqlite::SqliteStorage::in_memory().await?)
//!     .executor(ScriptedModel::new())
//!     // The conversation's last 4,000 tokens, standing instructions included.
//!     .turn_input(
//!         LoadHistory::within_tokens(4_000, TokenCounter::for_model("gpt-4o"))
//!             .with_standing_instructions(),
//!     )
//!     .build();
//! let first = runner.run(RawTurnContext::new("c-1", "Be brief.").user_message("Hello!")).await?;
//! assert!(first.reply().is_some());
//! let second = runner.run(RawTurnContext::new("c-1", "Be brief.").user_message("Again?")).await?;
//! // The first turn's question and answer, then this turn's question and answer.
//! assert_eq!(second.context.messages.len(), 4);
//! # Ok::<(), BoxError>(())
//! # })?;
//! # Ok::<(), BoxError>(())
//! ```

mod window;

pub use window::HistoryWindow;

use crate::context::TurnContext;
use crate::pipeline::{BoxError, BoxFuture, Middleware, Next, TurnInput};
use crate::primitives::{Memory, Message, StandingInstruction, Thought, Timestamp, ToolCall};
use crate::storage::{FetchWindow, StorageError};
use crate::tokens::TokenCounter;
use crate::transcript::{Call, Entry, Part, Transcript};

/// The `turn_input` middleware that loads the conversation's recent history; see the
/// [module documentation](self).
#[derive(Clone, Debug)]
pub struct LoadHistory {
    window: HistoryWindow,
    counter: Option<TokenCounter>,
    memories: usize,
    standing_instructions: bool,
    reasoning: bool,
}

/// What one load read: the records to add to the turn, and how they were found.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Loaded {
    /// The messages, in transcript order.
    pub messages: Vec<Message>,
    /// The tool calls, each with its result, in transcript order.
    pub tool_calls: Vec<ToolCall>,
    /// The reasoning of the loaded answers (only [`with_reasoning`](LoadHistory::with_reasoning)).
    pub thoughts: Vec<Thought>,
    /// The newest memories asked for.
    pub memories: Vec<Memory>,
    /// The standing instructions, when asked for.
    pub standing_instructions: Vec<StandingInstruction>,
    /// The tokens of everything above, when the loader counts tokens.
    pub tokens: Option<usize>,
    /// Whether the load reached the oldest entry it could have loaded (nothing older was left
    /// out).
    pub reached_start: bool,
    /// How many tails were read (each one fetch per collection).
    pub fetches: u32,
}

impl LoadHistory {
    fn with_window(window: HistoryWindow, counter: Option<TokenCounter>) -> Self {
        Self {
            window,
            counter,
            memories: 0,
            standing_instructions: false,
            reasoning: false,
        }
    }

    /// The last `n` turns ([`HistoryWindow::Turns`]).
    pub fn last_turns(n: usize) -> Self {
        Self::with_window(HistoryWindow::Turns(n), None)
    }

    /// At most `n` chat messages ([`HistoryWindow::Messages`]).
    pub fn last_messages(n: usize) -> Self {
        Self::with_window(HistoryWindow::Messages(n), None)
    }

    /// At most `tokens` tokens as `counter` counts them ([`HistoryWindow::Tokens`]).
    pub fn within_tokens(tokens: usize, counter: TokenCounter) -> Self {
        Self::with_window(HistoryWindow::Tokens(tokens), Some(counter))
    }

    /// Also loads the conversation's newest `n` memories (before the history, in a token
    /// window).
    #[must_use]
    pub fn with_memories(mut self, n: usize) -> Self {
        self.memories = n;
        self
    }

    /// Also loads the conversation's stored standing instructions (after the ones the turn
    /// was given, skipping any it already has).
    #[must_use]
    pub fn with_standing_instructions(mut self) -> Self {
        self.standing_instructions = true;
        self
    }

    /// Also loads the reasoning of the loaded answers (and counts it in a token window).
    #[must_use]
    pub fn with_reasoning(mut self) -> Self {
        self.reasoning = true;
        self
    }

    /// Counts tokens with `counter` even when the window is not a token window
    /// ([`Loaded::tokens`]).
    #[must_use]
    pub fn counting_with(mut self, counter: TokenCounter) -> Self {
        self.counter = Some(counter);
        self
    }

    /// The window.
    pub fn window(&self) -> HistoryWindow {
        self.window
    }

    /// Reads what this loader would add to the turn, without adding it.
    ///
    /// # Errors
    ///
    /// The storage adapter's error from any fetch.
    pub async fn load(&self, ctx: &TurnContext) -> Result<Loaded, StorageError> {
        self.load_from(ctx, None).await
    }

    /// Like [`load`](Self::load), but only entries that start at or after `from`: what a
    /// compaction summary does not already cover. Entries that
    /// start before it count as absent.
    ///
    /// # Errors
    ///
    /// The storage adapter's error from any fetch.
    pub async fn load_from(
        &self,
        ctx: &TurnContext,
        from: Option<Timestamp>,
    ) -> Result<Loaded, StorageError> {
        let mut loaded = Loaded::default();
        if self.standing_instructions {
            for instruction in ctx.refresh_standing_instructions().await? {
                if !ctx.standing_instructions.contains(&instruction)
                    && !loaded.standing_instructions.contains(&instruction)
                {
                    loaded.standing_instructions.push(instruction);
                }
            }
        }
        if self.memories > 0 {
            loaded.memories = ctx
                .fetch_memories_within(FetchWindow::Last(self.memories))
                .await?;
        }
        let spent = self.counter.as_ref().map_or(0, |counter| {
            loaded
                .standing_instructions
                .iter()
                .map(|instruction| counter.standing_instruction(instruction))
                .sum::<usize>()
                + loaded
                    .memories
                    .iter()
                    .map(|memory| counter.memory(memory))
                    .sum::<usize>()
        });

        // One tail per collection: messages, tool calls, thoughts. Calls and reasoning are
        // usually fewer than messages, so their first tails are smaller; a later round grows
        // (and reads again) only the collections whose tail cut the transcript.
        let first = self.window.first_fetch();
        let mut tails = [first, (first / 4).max(16), (first / 4).max(16)];
        let mut read = [true, true, self.reasoning];
        let (mut messages, mut tool_calls, mut thoughts) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            loaded.fetches += 1;
            if read[0] {
                messages = ctx
                    .fetch_messages_within(FetchWindow::Last(tails[0]))
                    .await?;
            }
            if read[1] {
                tool_calls = ctx
                    .fetch_tool_calls_within(FetchWindow::Last(tails[1]))
                    .await?;
            }
            if read[2] {
                thoughts = ctx
                    .fetch_thoughts_within(FetchWindow::Last(tails[2]))
                    .await?;
            }
            // For each collection whose tail was full, the time before which it may hold
            // records this tail did not read; entries starting at or before the newest such
            // time may be missing parts.
            let cuts = [
                (messages.len() >= tails[0])
                    .then(|| messages.first().map(Message::created_at))
                    .flatten(),
                (tool_calls.len() >= tails[1])
                    .then(|| tool_calls.first().map(ToolCall::created_at))
                    .flatten(),
                (self.reasoning && thoughts.len() >= tails[2])
                    .then(|| thoughts.first().map(Thought::created_at))
                    .flatten(),
            ];
            let cut = cuts.iter().flatten().max().copied();
            let transcript = Transcript::new(&messages, &thoughts, &tool_calls);
            let entries = transcript.entries();
            let first = entries
                .iter()
                .position(|entry| {
                    let start = window::entry_start(entry);
                    cut.is_none_or(|cut| start.is_some_and(|start| start > cut))
                        && from.is_none_or(|from| start.is_some_and(|start| start >= from))
                })
                .unwrap_or(entries.len());
            let selection =
                self.window
                    .select(entries, first, self.counter.as_ref(), self.reasoning, spent);
            // Everything older than the tail is summarised or absent when `from` is at or
            // after the cut.
            let older_unread = cut.is_some_and(|cut| from.is_none_or(|from| from <= cut));
            if selection.filled || !older_unread {
                loaded.reached_start = !selection.filled;
                if self.counter.is_some() {
                    loaded.tokens = Some(selection.tokens);
                }
                self.collect(&entries[selection.start..], &mut loaded);
                return Ok(loaded);
            }
            // Grow the tails that cut the transcript where it was cut.
            for (index, collection_cut) in cuts.iter().enumerate() {
                read[index] = *collection_cut == cut;
                if read[index] {
                    tails[index] = tails[index].saturating_mul(2);
                }
            }
        }
    }

    fn collect(&self, entries: &[Entry<'_>], loaded: &mut Loaded) {
        collect(entries, self.reasoning, loaded);
    }

    /// Loads into the turn: what [`load`](Self::load) read is added to its collections.
    ///
    /// # Errors
    ///
    /// The storage adapter's error from any fetch.
    pub async fn load_into(&self, ctx: &mut TurnContext) -> Result<Loaded, StorageError> {
        let loaded = self.load(ctx).await?;
        add_to_turn(ctx, &loaded);
        Ok(loaded)
    }
}

fn collect(entries: &[Entry<'_>], reasoning: bool, loaded: &mut Loaded) {
    for entry in entries {
        match entry {
            Entry::User(message) => loaded.messages.push((*message).clone()),
            Entry::Answer(answer) => {
                for part in answer.parts() {
                    match part {
                        Part::Reasoning(thought) if reasoning => {
                            loaded.thoughts.push((*thought).clone());
                        }
                        Part::Reasoning(_) | Part::Call(Call::Unanswered(_)) => {}
                        Part::Text(message) => loaded.messages.push((*message).clone()),
                        Part::Call(Call::Answered(call)) => {
                            loaded.tool_calls.push(call.call().clone());
                        }
                    }
                }
            }
        }
    }
}

impl Loaded {
    /// What a loader keeps of these whole entries: user messages, answer texts and answered
    /// calls (no reasoning, no call without its result), their tokens counted by `counter`.
    pub fn from_entries(entries: &[Entry<'_>], counter: Option<&TokenCounter>) -> Self {
        let mut loaded = Self {
            tokens: counter.map(|counter| {
                entries
                    .iter()
                    .map(|entry| counter.entry(entry, false))
                    .sum()
            }),
            ..Self::default()
        };
        collect(entries, false, &mut loaded);
        loaded
    }
}

/// Adds loaded records to a turn's collections (a record the turn already holds is replaced
/// where it stands).
pub fn add_to_turn(ctx: &mut TurnContext, loaded: &Loaded) {
    ctx.standing_instructions
        .extend(loaded.standing_instructions.iter().cloned());
    ctx.memories.extend(loaded.memories.iter().cloned());
    ctx.messages.extend(loaded.messages.iter().cloned());
    ctx.thoughts.extend(loaded.thoughts.iter().cloned());
    ctx.tool_calls.extend(loaded.tool_calls.iter().cloned());
}

impl Middleware<TurnInput> for LoadHistory {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        next: Next<'a, TurnContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.load_into(ctx).await?;
            // Nothing to undo afterwards: loading changed nothing in storage.
            let _ = next.run(ctx).await;
            Ok(())
        })
    }
}

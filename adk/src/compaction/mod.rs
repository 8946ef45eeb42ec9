//! Ready compaction: past a token threshold, older turns are summarised into a persisted
//! summary that later turns load instead of the raw history.
//!
//! [`Compaction`] is a `turn_input` middleware that loads the history itself (use it instead
//! of [`LoadHistory`], not with it). Each turn it:
//!
//! 1. reads the thread's [`CompactionState`] (persistent, thread-scoped middleware state) and
//!    loads every entry not yet summarised — those starting at or after
//!    [`CompactionState::from`] — counting their tokens with its [`TokenCounter`];
//! 2. when the summary plus that history pass the [threshold](Compaction::threshold), keeps
//!    the newest whole turns (each from its user message) within
//!    [`keep_recent`](Compaction::keep_recent) tokens (the turn's own question always) and has the [`Summarizer`] summarise the older ones,
//!    continuing the previous summary; the new summary, the start of the first kept entry, the
//!    last record summarised and the [`Trigger`] are written to the state, which the turn
//!    commits with the rest of its state when it completes;
//! 3. adds the summary to the turn as a standing instruction (after the turn's own) and the
//!    unsummarised entries to its collections.
//!
//! Entries are whole transcript entries (see [`crate::history`]), so a tool call and its
//! result are never split: both are summarised or both are kept, and a call without a result
//! is never loaded. The raw records stay in storage — compaction changes what is loaded, not
//! what is kept — unless [`with_hard_retention`](Compaction::with_hard_retention) asks to delete
//! the summarised messages and tool calls. A fork copies the thread's state as it is at the
//! fork: a fork made before a compaction loads the raw history, and compacts on its own.
//!
//! Between compactions a turn reads only the unsummarised entries, which the threshold bounds,
//! so a turn's cost does not grow with the session.
//!
//! ```
//! use std::sync::Arc;
//!
//! use adk::compaction::{Compaction, ExecutorSummarizer};
//! use adk::dispatch::{Executor, ScriptedModel};
//! use adk::prelude::*;
//! use adk::tokens::TokenCounter;
//!
//! let model: Arc<dyn Executor> = Arc::new(ScriptedModel::new());
//! let compaction = Compaction::new(
//!     ExecutorSummarizer::new(Arc::clone(&model)), // the runner's own executor
//!     TokenCounter::for_model("gpt-4o"),
//! )
//! .threshold(8_000)
//! .keep_recent(2_000);
//! let runner = TurnRunner::builder()
//!     .storage(NoopStorage::new())
//!     // `CompactionState` is persistent: without a store, `build` refuses the runner.
//!     .session_store(adk::state::InMemorySessionStore::new())
//!     .executor(model)
//!     .turn_input(compaction)
//!     .build();
//! # let _ = runner;
//! ```

mod state;
mod summary;

pub use state::{CompactionState, Trigger};
pub use summary::{ExecutorSummarizer, NoSummary, SUMMARY_INSTRUCTIONS, Summarizer, render};

use std::sync::Arc;

use crate::context::TurnContext;
use crate::history::{LoadHistory, Loaded};
use crate::pipeline::{BoxError, BoxFuture, Middleware, Next, StateWrites, TurnInput};
use crate::primitives::{StandingInstruction, Timestamp};
use crate::tokens::{MESSAGE_OVERHEAD, TokenCounter};
use crate::transcript::{Entry, Part, Transcript};

/// What the summary standing instruction starts with.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n";

/// The `turn_input` middleware that loads history and compacts it past a threshold; see the
/// [module documentation](self).
#[derive(Clone)]
pub struct Compaction {
    summarizer: Arc<dyn Summarizer>,
    counter: TokenCounter,
    threshold: usize,
    keep_recent: usize,
    hard_retention: bool,
}

impl std::fmt::Debug for Compaction {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Compaction")
            .field("counter", &self.counter)
            .field("threshold", &self.threshold)
            .field("keep_recent", &self.keep_recent)
            .field("hard_retention", &self.hard_retention)
            .finish_non_exhaustive()
    }
}

/// What one turn's compaction step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Compacted {
    /// Whether a compaction ran this turn.
    pub ran: bool,
    /// The entries it summarised this turn.
    pub summarised_entries: usize,
    /// The tokens loaded into the turn: the summary and the unsummarised entries.
    pub loaded_tokens: usize,
}

impl Compaction {
    /// Compacts with `summarizer`, counting with `counter`; threshold 8,000 tokens, keeping the
    /// newest 2,000 raw.
    pub fn new(summarizer: impl Summarizer, counter: TokenCounter) -> Self {
        Self {
            summarizer: Arc::new(summarizer),
            counter,
            threshold: 8_000,
            keep_recent: 2_000,
            hard_retention: false,
        }
    }

    /// Compacts when the summary and the unsummarised history pass `tokens`.
    #[must_use]
    pub fn threshold(mut self, tokens: usize) -> Self {
        self.threshold = tokens;
        self
    }

    /// Keeps the newest whole entries within `tokens` raw when it compacts (at least the
    /// newest entry, the turn's question).
    #[must_use]
    pub fn keep_recent(mut self, tokens: usize) -> Self {
        self.keep_recent = tokens;
        self
    }

    /// Deletes the summarised messages and tool calls from storage after a compaction (hard
    /// retention); by default they are kept.
    #[must_use]
    pub fn with_hard_retention(mut self) -> Self {
        self.hard_retention = true;
        self
    }

    /// Loads the summary and the unsummarised history into the turn, compacting first when
    /// they pass the threshold.
    ///
    /// # Errors
    ///
    /// A storage error, the summariser's error, or a [`CompactionState`] that cannot be
    /// written (a stored record of another version).
    pub async fn run(&self, ctx: &mut TurnContext) -> Result<Compacted, BoxError> {
        let state = ctx
            .middleware_state::<CompactionState>()
            .cloned()
            .unwrap_or_default();
        let everything = LoadHistory::within_tokens(usize::MAX, self.counter.clone());
        let loaded = everything.load_from(ctx, state.from).await?;
        let history_tokens = loaded.tokens.unwrap_or(0);
        let summary_tokens = |summary: Option<&str>| {
            summary.map_or(0, |summary| {
                MESSAGE_OVERHEAD + self.counter.text(SUMMARY_PREFIX) + self.counter.text(summary)
            })
        };
        let total = history_tokens + summary_tokens(state.summary.as_deref());
        let transcript = Transcript::new(&loaded.messages, &loaded.thoughts, &loaded.tool_calls);
        let entries = transcript.entries();
        let keep_from = self.keep_from(entries);
        if total <= self.threshold || keep_from == 0 {
            add(ctx, state.summary.as_deref(), &loaded);
            return Ok(Compacted {
                loaded_tokens: total,
                ..Compacted::default()
            });
        }

        let older = &entries[..keep_from];
        let summary = self
            .summarizer
            .summarize(state.summary.as_deref(), &render(older))
            .await?;
        let kept = Loaded::from_entries(&entries[keep_from..], Some(&self.counter));
        let through_record = older.last().and_then(last_record_id);
        let next = CompactionState {
            summary: Some(summary),
            from: entry_start(&entries[keep_from]),
            through_record,
            summarised_entries: state.summarised_entries
                + u64::try_from(older.len()).unwrap_or(u64::MAX),
            compactions: state.compactions.saturating_add(1),
            trigger: Some(Trigger {
                tokens: total,
                threshold: self.threshold,
                at: Timestamp::now(),
            }),
        };
        let doomed = self
            .hard_retention
            .then(|| Loaded::from_entries(older, None));
        let loaded_tokens = kept.tokens.unwrap_or(0) + summary_tokens(next.summary.as_deref());
        let summarised_entries = older.len();
        ctx.update_middleware_state::<CompactionState>(|state| *state = next.clone())?;
        if let Some(doomed) = doomed {
            for message in &doomed.messages {
                ctx.delete_message(message.id()).await?;
            }
            for call in &doomed.tool_calls {
                ctx.delete_tool_call(call.id()).await?;
            }
        }
        add(ctx, next.summary.as_deref(), &kept);
        Ok(Compacted {
            ran: true,
            summarised_entries,
            loaded_tokens,
        })
    }

    /// The first entry kept raw: the newest whole turns within `keep_recent` tokens, at least
    /// the newest entry.
    fn keep_from(&self, entries: &[Entry<'_>]) -> usize {
        let mut start = entries.len();
        let mut used = 0;
        while start > 0 {
            let tokens = self.counter.entry(&entries[start - 1], false);
            if start < entries.len() && used + tokens > self.keep_recent {
                break;
            }
            used += tokens;
            start -= 1;
        }
        // Whole turns: the kept history starts with a user message, not with an answer whose
        // question was summarised.
        while start < entries.len().saturating_sub(1) && !matches!(entries[start], Entry::User(_)) {
            start += 1;
        }
        start
    }
}

/// When an entry starts: its earliest record's creation time.
fn entry_start(entry: &Entry<'_>) -> Option<Timestamp> {
    match entry {
        Entry::User(message) => Some(message.created_at()),
        Entry::Answer(answer) => answer.parts().iter().map(part_created_at).min(),
    }
}

fn part_created_at(part: &Part<'_>) -> Timestamp {
    match part {
        Part::Reasoning(thought) => thought.created_at(),
        Part::Text(message) => message.created_at(),
        Part::Call(call) => call.tool_call().created_at(),
    }
}

fn last_record_id(entry: &Entry<'_>) -> Option<String> {
    match entry {
        Entry::User(message) => Some(message.id().to_owned()),
        Entry::Answer(answer) => answer.parts().last().map(|part| match part {
            Part::Reasoning(thought) => thought.id().to_owned(),
            Part::Text(message) => message.id().to_owned(),
            Part::Call(call) => call.tool_call().id().to_owned(),
        }),
    }
}

/// Adds the summary (as a standing instruction) and the loaded records to the turn.
fn add(ctx: &mut TurnContext, summary: Option<&str>, loaded: &Loaded) {
    if let Some(summary) = summary
        && let Ok(instruction) = StandingInstruction::new(format!("{SUMMARY_PREFIX}{summary}"))
    {
        ctx.standing_instructions.push(instruction);
    }
    crate::history::add_to_turn(ctx, loaded);
}

impl Middleware<TurnInput> for Compaction {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut TurnContext,
        next: Next<'a, TurnContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.run(ctx).await?;
            let _ = next.run(ctx).await;
            Ok(())
        })
    }

    /// [`CompactionState`] is persistent: a runner without a session store is refused when
    /// built, rather than on the first turn that compacts.
    fn state_writes(&self, writes: &mut StateWrites) {
        use crate::middleware_state::{MiddlewareState, Persistence};
        writes.middleware_state(
            std::any::type_name::<CompactionState>(),
            CompactionState::KEY,
            matches!(CompactionState::PERSISTENCE, Persistence::Persistent(_)),
        );
    }
}

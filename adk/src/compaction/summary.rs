//! Summarisers: what turns older entries into a summary.

use std::fmt::Write as _;

use crate::context::RawTurnContext;
use crate::dispatch::Executor;
use crate::pipeline::{BoxError, BoxFuture};
use crate::primitives::ToolCallResults;
use crate::runner::TurnRunner;
use crate::storage::NoopStorage;
use crate::transcript::{Call, Entry, Part};

/// The instructions a model summarising a conversation is given.
pub const SUMMARY_INSTRUCTIONS: &str = "You summarise conversations between a user and an \
assistant. Keep every fact, decision, open question, name, number and tool result the rest of \
the conversation may need; leave out small talk. Write the summary only, in the third person.";

/// Writes the summary of older conversation entries.
pub trait Summarizer: Send + Sync + 'static {
    /// The summary of `transcript` (the entries rendered as text, oldest first), continuing
    /// `previous` (the summary of what came before them), if any.
    fn summarize<'a>(
        &'a self,
        previous: Option<&'a str>,
        transcript: &'a str,
    ) -> BoxFuture<'a, Result<String, BoxError>>;
}

/// Summarises through an executor: the runner's own (pass a clone of its `Arc<dyn Executor>`)
/// or a second, cheaper one. Each summary is one turn of a runner of its own, with storage that
/// keeps nothing, [`SUMMARY_INSTRUCTIONS`] as system prompt and the text to summarise as the
/// user message; the reply is the summary.
pub struct ExecutorSummarizer {
    runner: TurnRunner,
}

impl std::fmt::Debug for ExecutorSummarizer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ExecutorSummarizer")
            .finish_non_exhaustive()
    }
}

impl ExecutorSummarizer {
    /// Summarises with `executor`.
    pub fn new(executor: impl Executor) -> Self {
        Self {
            runner: TurnRunner::builder()
                .storage(NoopStorage::new())
                .executor(executor)
                .build(),
        }
    }
}

/// The model answered the summary request with no text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the summarising model gave no answer ({status})")]
pub struct NoSummary {
    /// How the summarising turn ended.
    pub status: String,
}

impl Summarizer for ExecutorSummarizer {
    fn summarize<'a>(
        &'a self,
        previous: Option<&'a str>,
        transcript: &'a str,
    ) -> BoxFuture<'a, Result<String, BoxError>> {
        Box::pin(async move {
            let mut request = String::new();
            if let Some(previous) = previous {
                let _ = writeln!(
                    request,
                    "The summary of the conversation so far:\n{previous}\n"
                );
            }
            let _ = write!(
                request,
                "Summarise this part of the conversation{}:\n{transcript}",
                if previous.is_some() {
                    ", continuing the summary above"
                } else {
                    ""
                }
            );
            let raw =
                RawTurnContext::new("adk-compaction", SUMMARY_INSTRUCTIONS).user_message(request);
            let outcome = self.runner.run(raw).await?.into_result()?;
            match outcome.reply().and_then(|reply| reply.content()) {
                Some(text) => Ok(text.render()),
                None => Err(NoSummary {
                    status: format!("{:?}", outcome.status),
                }
                .into()),
            }
        })
    }
}

/// Transcript entries as the text a summariser reads: one line per message, tool call and
/// result.
pub fn render(entries: &[Entry<'_>]) -> String {
    let mut text = String::new();
    for entry in entries {
        match entry {
            Entry::User(message) => {
                let content = message.content().map(|c| c.render()).unwrap_or_default();
                let _ = writeln!(text, "User: {content}");
            }
            Entry::Answer(answer) => {
                for part in answer.parts() {
                    match part {
                        Part::Reasoning(_) | Part::Call(Call::Unanswered(_)) => {}
                        Part::Text(message) => {
                            let content = message.content().map(|c| c.render()).unwrap_or_default();
                            let _ = writeln!(text, "Assistant: {content}");
                        }
                        Part::Call(Call::Answered(call)) => {
                            let call = call.call();
                            let arguments = serde_json::to_string(call.args()).unwrap_or_default();
                            let result = match call.results() {
                                Some(ToolCallResults::Text(text)) => text.render(),
                                Some(other) => serde_json::to_string(other).unwrap_or_default(),
                                None => String::new(),
                            };
                            let outcome = if call.is_error() {
                                "failed"
                            } else {
                                "returned"
                            };
                            let _ = writeln!(
                                text,
                                "Tool {}({arguments}) {outcome}: {result}",
                                call.tool()
                            );
                        }
                    }
                }
            }
        }
    }
    text
}

//! The observability bus: one [`Event`] enum, delivered synchronously and in order to the
//! listeners registered on the runner, and mirrored as `tracing` spans and events.
//!
//! Errors that happen inside a turn are never thrown past `run`: they arrive here as
//! [`Event::Error`], each with its [`ErrorCode`] and the source error.

mod content;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use crate::error::ErrorCode;
pub use crate::error::TurnError;
pub use content::{
    GenerationStats, LogLevel, LogRecord, StreamedContent, StreamedText, ToolCallContent,
};

use crate::ids::TurnId;

/// Something that happened during a turn.
///
/// Events of one turn arrive in the order they happened: `TurnStart` first, `TurnEnd` last,
/// `DispatchStart` < `IterationStart` < … < `DispatchEnd` in between.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Event {
    /// The turn began (after its raw context was validated).
    TurnStart {
        /// The turn.
        turn_id: TurnId,
        /// When it began.
        started_at: SystemTime,
    },
    /// The turn ended; always emitted once `TurnStart` was.
    TurnEnd {
        /// The turn.
        turn_id: TurnId,
        /// When it began.
        started_at: SystemTime,
        /// When it ended.
        ended_at: SystemTime,
        /// How long it took.
        duration: Duration,
    },
    /// The dispatch loop began.
    DispatchStart {
        /// The turn it belongs to.
        turn_id: TurnId,
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// When it began.
        started_at: SystemTime,
    },
    /// The dispatch loop ended.
    DispatchEnd {
        /// The turn it belongs to.
        turn_id: TurnId,
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// How it ended.
        status: DispatchStatus,
        /// The error that ended it, for a nack.
        error: Option<TurnError>,
        /// How many iterations ran: every iteration that emitted
        /// [`IterationStart`](Event::IterationStart), including the one that ended the
        /// dispatch (acked, nacked, failed or aborted) — the count of `IterationStart` events,
        /// not of `IterationEnd`s. A dispatch whose executor acks on its first call reports 1;
        /// one that hit the iteration bound before starting another reports the bound.
        iterations: u32,
        /// When it began.
        started_at: SystemTime,
        /// When it ended.
        ended_at: SystemTime,
        /// How long it took.
        duration: Duration,
    },
    /// An iteration of the dispatch loop began.
    IterationStart {
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// The iteration, counted from zero.
        iteration: u32,
        /// When it began.
        started_at: SystemTime,
    },
    /// An iteration completed: its output pipeline ran and its writes were flushed.
    IterationEnd {
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// The iteration, counted from zero.
        iteration: u32,
        /// When it began.
        started_at: SystemTime,
        /// When it ended.
        ended_at: SystemTime,
        /// How long it took.
        duration: Duration,
    },
    /// A tool's handler is about to run with validated arguments.
    ToolExecutionStart {
        /// The turn.
        turn_id: TurnId,
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// The tool.
        tool_name: String,
        /// The tool call's id (`ToolCall::id`), as the handler sees it in
        /// `ToolInvocation::call_id`.
        tool_call_id: String,
        /// The call's checksum (SHA-256 of the canonical tool and arguments): identical calls
        /// share it, which is how repeated calls are counted.
        checksum: String,
        /// The arguments after validation.
        args: serde_json::Value,
        /// When the handler started.
        started_at: SystemTime,
    },
    /// A tool's handler finished.
    ToolExecutionEnd {
        /// The turn.
        turn_id: TurnId,
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// The tool.
        tool_name: String,
        /// The tool call's id (`ToolCall::id`), as the handler sees it in
        /// `ToolInvocation::call_id`.
        tool_call_id: String,
        /// The call's checksum (SHA-256 of the canonical tool and arguments): identical calls
        /// share it, which is how repeated calls are counted.
        checksum: String,
        /// When the handler started.
        started_at: SystemTime,
        /// When it finished.
        ended_at: SystemTime,
        /// How long it took.
        duration: Duration,
        /// Whether it returned an error or panicked.
        is_error: bool,
    },
    /// A gate opened; answer it through the handle.
    TurnGateOpen {
        /// The answering side of the gate.
        gate: crate::gate::GateHandle,
    },
    /// A gate was settled.
    TurnGateClosed {
        /// The turn.
        turn_id: TurnId,
        /// The gate.
        gate_id: String,
        /// How it was settled.
        result: crate::gate::GateResult,
        /// When.
        settled_at: SystemTime,
    },
    /// A chunk of a streamed message was reported.
    Message(StreamedContent),
    /// A chunk of a streamed thought was reported.
    Thought(StreamedContent),
    /// A tool call was announced or updated.
    ToolCall(ToolCallContent),
    /// A structured log record.
    Log(LogRecord),
    /// Statistics of a model call.
    GenerationStats {
        /// The dispatch.
        dispatch_id: Arc<str>,
        /// The iteration.
        iteration: u32,
        /// When they were reported.
        emitted_at: SystemTime,
        /// The statistics.
        stats: GenerationStats,
    },
    /// A stored middleware state record could not be read as its type when the turn started
    /// (another version without `migrate`, JSON of another shape, or a refused migration). The
    /// record is kept; the state starts from its default only with `default_on_mismatch`.
    MiddlewareStateMismatch {
        /// The turn.
        turn_id: TurnId,
        /// The type, the stored and current versions, and why.
        mismatch: crate::middleware_state::Mismatch,
    },
    /// A stored middleware state record that no persistent type of this program reads. It is
    /// kept in the store; each key is reported once per runner.
    MiddlewareStateUnknown {
        /// The turn that loaded it.
        turn_id: TurnId,
        /// The record's key, scope and version.
        record: crate::middleware_state::UnknownRecord,
    },
    /// Something failed. The turn goes on or ends as the lifecycle says; `run` still returns.
    Error {
        /// The turn.
        turn_id: TurnId,
        /// What failed, with its code and source.
        error: TurnError,
    },
}

impl Event {
    /// The event's name as the original spells it (`turnStart`, `dispatchEnd`, `error`, …), for
    /// logs and for asserting event sequences.
    pub fn name(&self) -> &'static str {
        match self {
            Self::TurnStart { .. } => "turnStart",
            Self::TurnEnd { .. } => "turnEnd",
            Self::DispatchStart { .. } => "dispatchStart",
            Self::DispatchEnd { .. } => "dispatchEnd",
            Self::IterationStart { .. } => "iterationStart",
            Self::IterationEnd { .. } => "iterationEnd",
            Self::ToolExecutionStart { .. } => "toolExecutionStart",
            Self::ToolExecutionEnd { .. } => "toolExecutionEnd",
            Self::TurnGateOpen { .. } => "turnGateOpen",
            Self::TurnGateClosed { .. } => "turnGateClosed",
            Self::Message(_) => "message",
            Self::Thought(_) => "thought",
            Self::ToolCall(_) => "toolCall",
            Self::Log(_) => "log",
            Self::GenerationStats { .. } => "generationStats",
            Self::MiddlewareStateMismatch { .. } => "middlewareStateMismatch",
            Self::MiddlewareStateUnknown { .. } => "middlewareStateUnknown",
            Self::Error { .. } => "error",
        }
    }
}

/// How a dispatch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DispatchStatus {
    /// The executor or a dispatch middleware acknowledged: the turn's output pipeline runs.
    Ack,
    /// The dispatch failed or was nacked; the turn's output pipeline is skipped.
    Nack,
    /// The dispatch (or the whole turn) was aborted.
    Aborted,
}

impl DispatchStatus {
    /// `"ack"`, `"nack"` or `"aborted"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Nack => "nack",
            Self::Aborted => "aborted",
        }
    }
}

/// A listener on the observability bus.
pub type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

/// Where a turn's events go: the runner's listeners and `tracing`.
///
/// Cheap to clone; the contexts hold one so middleware-level failures are reported where they
/// are caught.
#[derive(Clone, Default)]
pub struct EventSink {
    listeners: Arc<[Listener]>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EventSink")
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl EventSink {
    pub(crate) fn new(listeners: Arc<[Listener]>) -> Self {
        Self { listeners }
    }

    /// Whether a lifecycle event (turn, dispatch and iteration start and end, mirrored to
    /// `tracing` at debug level) would reach anyone: a listener, or a `tracing` subscriber
    /// that takes `adk::events` at debug level. When not, the runner skips reading the clock and
    /// building those events.
    pub(crate) fn observes_lifecycle(&self) -> bool {
        !self.listeners.is_empty()
            || tracing::enabled!(target: "adk::events", tracing::Level::DEBUG)
    }

    /// `make()` when lifecycle events are observed (see `observes_lifecycle`), else `None`.
    pub(crate) fn then_observed<T>(&self, make: impl FnOnce() -> T) -> Option<T> {
        self.observes_lifecycle().then(make)
    }

    /// Delivers `event` to every listener, in registration order, then to `tracing`.
    ///
    /// A panicking listener is contained: the remaining listeners still receive the event and
    /// the turn goes on.
    pub fn emit(&self, event: Event) {
        mirror_to_tracing(&event);
        self.deliver(&event);
    }

    /// Emits the `Event::Error` of an error the turn reported. Its `tracing` line is at debug
    /// level when the error is the turn's outcome (`is_outcome`): the caller receives it as
    /// `TurnStatus::Failed` and reports it, so a warning would print the same failure twice.
    /// An error after the first reaches the caller only here, so it stays a warning.
    pub(crate) fn emit_reported_error(&self, turn_id: TurnId, error: TurnError, is_outcome: bool) {
        let code = error.code().as_str();
        let text = logged_text(&error);
        if is_outcome {
            tracing::debug!(target: "adk::events", code, "the turn failed: {text}");
        } else {
            tracing::warn!(
                target: "adk::events",
                code,
                "a further error after the turn's first: {text}"
            );
        }
        self.deliver(&Event::Error { turn_id, error });
    }

    /// Delivers `event` to every listener, in registration order, containing panics.
    fn deliver(&self, event: &Event) {
        for listener in self.listeners.iter() {
            let delivered =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(event)));
            if delivered.is_err() {
                tracing::error!(event = event.name(), "an adk event listener panicked");
            }
        }
    }
}

/// A `TurnError` as a log line's text: its message and causes, each once (`{:#}`), without the
/// code, which the line carries as its `code` field.
fn logged_text(error: &TurnError) -> String {
    let report = format!("{error:#}");
    match report
        .strip_prefix(error.code().as_str())
        .and_then(|text| text.strip_prefix(": "))
    {
        Some(text) => text.to_owned(),
        None => report,
    }
}

/// Every event as a `tracing` event of target `adk::events`. The turn's id is not repeated here:
/// these events fire inside the runner's `adk.turn` span, which carries `turn_id`, so
/// `RUST_LOG=adk=debug` shows each line once under its turn.
fn mirror_to_tracing(event: &Event) {
    match event {
        Event::TurnStart { .. } => {
            tracing::debug!(target: "adk::events", "turn started");
        }
        Event::TurnEnd { duration, .. } => {
            tracing::debug!(target: "adk::events", ?duration, "turn ended");
        }
        Event::DispatchStart { dispatch_id, .. } => {
            tracing::debug!(target: "adk::events", %dispatch_id, "dispatch started");
        }
        Event::DispatchEnd {
            dispatch_id,
            status,
            iterations,
            ..
        } => {
            tracing::debug!(
                target: "adk::events",
                %dispatch_id,
                status = status.as_str(),
                iterations,
                "dispatch ended"
            );
        }
        Event::IterationStart { iteration, .. } => {
            tracing::trace!(target: "adk::events", iteration, "iteration started");
        }
        Event::IterationEnd { iteration, .. } => {
            tracing::trace!(target: "adk::events", iteration, "iteration ended");
        }
        Event::ToolExecutionStart {
            tool_name,
            tool_call_id,
            checksum,
            ..
        } => {
            tracing::debug!(target: "adk::events", tool_name, tool_call_id, checksum, "tool started");
        }
        Event::ToolExecutionEnd {
            tool_name,
            tool_call_id,
            checksum,
            duration,
            is_error,
            ..
        } => {
            tracing::debug!(target: "adk::events", tool_name, tool_call_id, checksum, ?duration, is_error, "tool ended");
        }
        Event::TurnGateOpen { gate } => {
            tracing::info!(target: "adk::events", gate_id = gate.id(), reason = gate.reason(), "turn gate opened");
        }
        Event::TurnGateClosed {
            gate_id, result, ..
        } => {
            tracing::info!(target: "adk::events", gate_id, result = result.as_str(), "turn gate closed");
        }
        Event::Message(content) | Event::Thought(content) => {
            tracing::trace!(target: "adk::events", id = content.id, is_complete = content.is_complete, "content chunk");
        }
        Event::ToolCall(content) => {
            tracing::trace!(target: "adk::events", id = content.id, tool = content.tool, "tool call update");
        }
        Event::Log(record) => match record.level {
            LogLevel::Trace => {
                tracing::trace!(target: "adk::events", kind = record.kind, "{}", record.message)
            }
            LogLevel::Debug => {
                tracing::debug!(target: "adk::events", kind = record.kind, "{}", record.message)
            }
            LogLevel::Info => {
                tracing::info!(target: "adk::events", kind = record.kind, "{}", record.message)
            }
            LogLevel::Warn => {
                tracing::warn!(target: "adk::events", kind = record.kind, "{}", record.message)
            }
            LogLevel::Error => {
                tracing::error!(target: "adk::events", kind = record.kind, "{}", record.message)
            }
        },
        Event::GenerationStats { stats, .. } => {
            tracing::debug!(target: "adk::events", ?stats, "generation stats");
        }
        Event::MiddlewareStateMismatch { mismatch, .. } => {
            tracing::warn!(target: "adk::events", key = %mismatch.key, "{mismatch}");
        }
        Event::MiddlewareStateUnknown { record, .. } => {
            tracing::warn!(
                target: "adk::events",
                key = %record.key,
                version = record.version,
                "a stored middleware state record has no persistent type in this program; it is kept"
            );
        }
        Event::Error { error, .. } => {
            tracing::warn!(
                target: "adk::events",
                code = error.code().as_str(),
                "{}",
                logged_text(error)
            );
        }
    }
}

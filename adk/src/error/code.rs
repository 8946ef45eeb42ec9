//! Error codes: the original's `E_*` names, as an enum.

use std::fmt;

/// The code of an error reported on the observability bus or returned by `run`.
///
/// Codes keep the TypeScript original's names so logs and alerts carry over; `as_str` gives the
/// `E_*` form.
///
/// ```
/// use adk::events::ErrorCode;
///
/// assert_eq!(ErrorCode::InputPipelineError.as_str(), "E_INPUT_PIPELINE_ERROR");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The raw turn context handed to `run` was invalid; nothing ran.
    InvalidTurnContext,
    /// A `turn_input` middleware returned an error or panicked.
    InputPipelineError,
    /// A `turn_output` middleware returned an error or panicked.
    OutputPipelineError,
    /// A `dispatch_input` or `dispatch_output` middleware returned an error or panicked.
    DispatchPipelineError,
    /// A pipeline ended without reaching its end and without an abort.
    PipelineShortCircuited,
    /// The executor returned an error or panicked.
    ExecutorError,
    /// `ack` or `nack` was called on a dispatch that was already signalled.
    AlreadySignalled,
    /// The dispatch was nacked; the nack's own error is the source.
    Nacked,
    /// The dispatch loop ran past its iteration bound.
    IterationLimitExceeded,
    /// Two tools share a name.
    ToolAlreadyRegistered,
    /// Tool arguments failed the tool's input schema.
    InvalidToolArgs,
    /// A tool handler returned an error or panicked.
    ToolDownstreamError,
    /// A tool was called that the dispatch does not offer (absent or hidden).
    UnknownTool,
    /// A `tool_execution` middleware returned an error or panicked; the call failed.
    ToolPipelineError,
    /// A `tool_execution` middleware refused the call; its handler did not run.
    ToolRefused,
    /// The dispatch or turn was aborted before the call's handler ran.
    ToolCallAborted,
    /// A turn gate timed out.
    TurnGateTimeout,
    /// A turn gate was aborted.
    TurnGateAborted,
    /// A turn gate was rejected by whoever answered it.
    TurnGateRejected,
    /// A turn gate resolution did not match the awaited type.
    InvalidTurnGateResolution,
    /// A storage callback failed.
    StorageFailed,
    /// The instructions name a required state key (`{key}`) that the turn's state lacks.
    StateTemplateKeyMissing,
    /// The session store could not load the turn's state; the turn did not run.
    StateLoadFailed,
    /// The session store could not commit the turn's state; nothing of it was stored.
    StateCommitFailed,
    /// The turn's state commit would overwrite keys another turn changed after this turn
    /// loaded them; nothing of it was stored.
    StaleState,
    /// A middleware state could not be encoded for the turn's commit; nothing of the commit was
    /// stored.
    MiddlewareStateSaveFailed,
    /// A completed turn wrote state that outlives it (a key outside `temp:`, persistent
    /// middleware state) on a runner built without a session store, which would lose it when
    /// the turn ends: the turn fails instead; build the runner with `.session_store(..)`.
    NoSessionStore,
}

impl ErrorCode {
    /// The `E_*` name of this code.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidTurnContext => "E_INVALID_TURN_CONTEXT",
            Self::InputPipelineError => "E_INPUT_PIPELINE_ERROR",
            Self::OutputPipelineError => "E_OUTPUT_PIPELINE_ERROR",
            Self::DispatchPipelineError => "E_DISPATCH_PIPELINE_ERROR",
            Self::PipelineShortCircuited => "E_PIPELINE_SHORT_CIRCUITED",
            Self::ExecutorError => "E_LLM_EXECUTION_EXECUTOR_ERROR",
            Self::AlreadySignalled => "E_LLM_EXECUTION_ALREADY_SIGNALLED",
            Self::Nacked => "E_LLM_EXECUTION_NACKED",
            Self::IterationLimitExceeded => "E_DISPATCH_ITERATION_LIMIT_EXCEEDED",
            Self::ToolAlreadyRegistered => "E_TOOL_ALREADY_REGISTERED",
            Self::InvalidToolArgs => "E_INVALID_TOOL_ARGS",
            Self::ToolDownstreamError => "E_TOOL_DOWNSTREAM_ERROR",
            Self::ToolPipelineError => "E_TOOL_PIPELINE_ERROR",
            Self::ToolRefused => "E_TOOL_REFUSED",
            Self::ToolCallAborted => "E_TOOL_CALL_ABORTED",
            Self::UnknownTool => "E_UNKNOWN_TOOL",
            Self::TurnGateTimeout => "E_TURN_GATE_TIMEOUT",
            Self::TurnGateAborted => "E_TURN_GATE_ABORTED",
            Self::TurnGateRejected => "E_TURN_GATE_REJECTED",
            Self::InvalidTurnGateResolution => "E_INVALID_TURN_GATE_RESOLUTION",
            Self::StorageFailed => "E_STORAGE_ERROR",
            Self::StateTemplateKeyMissing => "E_STATE_TEMPLATE_KEY_MISSING",
            Self::StateLoadFailed => "E_STATE_LOAD_FAILED",
            Self::StateCommitFailed => "E_STATE_COMMIT_FAILED",
            Self::StaleState => "E_STATE_STALE",
            Self::MiddlewareStateSaveFailed => "E_MIDDLEWARE_STATE_SAVE_FAILED",
            Self::NoSessionStore => "E_STATE_NO_SESSION_STORE",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

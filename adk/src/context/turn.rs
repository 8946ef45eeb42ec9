//! The turn context. PROVISIONAL: fields arrive with the stash and storage merges.

use crate::pipeline::{BoxError, MiddlewareFailure, PipelineContext};

use super::{AbortReason, Aborted};

/// What turn-scoped middleware (`turn_input`, `turn_output`) receive.
#[derive(Debug, Default)]
pub struct TurnContext {
    /// The turn's scratchpad.
    pub stash: crate::Registry,
    abort_reason: Option<AbortReason>,
    failures: Vec<MiddlewareFailure>,
}

impl TurnContext {
    /// Aborts the turn: remaining middleware bodies are skipped and no error is reported.
    pub fn abort(&mut self, reason: impl Into<String>) {
        if self.abort_reason.is_none() {
            self.abort_reason = Some(AbortReason::Requested(reason.into()));
        }
    }

    /// Whether the turn was aborted.
    pub fn is_aborted(&self) -> bool {
        self.abort_reason.is_some()
    }
}

impl PipelineContext for TurnContext {
    fn is_aborted(&self) -> bool {
        TurnContext::is_aborted(self)
    }

    fn report_failure(&mut self, failure: MiddlewareFailure) {
        self.failures.push(failure);
    }

    fn absorb_abort(&mut self, error: BoxError) -> Result<(), BoxError> {
        let aborted = error.downcast::<Aborted>()?;
        self.abort(aborted.reason().to_owned());
        Ok(())
    }
}

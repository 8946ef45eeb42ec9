//! The dispatch context. PROVISIONAL: fields arrive with the stash and storage merges.

use crate::pipeline::{BoxError, MiddlewareFailure, PipelineContext};

use super::{AbortReason, Aborted};

/// What dispatch-scoped middleware and the executor receive.
#[derive(Debug, Default)]
pub struct DispatchContext {
    /// The turn's scratchpad.
    pub stash: crate::Registry,
    abort_reason: Option<AbortReason>,
    failures: Vec<MiddlewareFailure>,
}

impl DispatchContext {
    /// Aborts the dispatch: remaining middleware bodies are skipped and no error is reported.
    pub fn abort(&mut self, reason: impl Into<String>) {
        if self.abort_reason.is_none() {
            self.abort_reason = Some(AbortReason::Requested(reason.into()));
        }
    }

    /// Whether the dispatch was aborted.
    pub fn is_aborted(&self) -> bool {
        self.abort_reason.is_some()
    }
}

impl PipelineContext for DispatchContext {
    fn is_aborted(&self) -> bool {
        DispatchContext::is_aborted(self)
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

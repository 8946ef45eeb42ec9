//! The contexts middleware and executors receive: [`TurnContext`] for the turn-scoped pipelines,
//! [`DispatchContext`] for the dispatch-scoped ones and the executor, and what builds them.

mod abort;
mod collection;
mod dispatch;
mod gate;
mod middleware_state_methods;
mod pipelines;
mod raw;
mod records;
mod reply;
mod storage_methods;
mod streams;
mod tool;
mod tool_state;
mod turn;
pub(crate) mod write_queue;

pub use crate::primitives::Record;
pub use abort::{AbortReason, Aborted};
pub use collection::{Collection, CollectionIter};
pub use dispatch::{AckSubscription, DispatchContext};
pub(crate) use raw::HeldUserMessage;
pub use raw::{InvalidTurnContext, RawTurnContext, UserMessage};
pub use reply::{Reply, ReplyError};
pub use tool::{ToolCallOutcome, ToolContext};
pub use turn::TurnContext;

/// The cancellation token a caller hands to `RawTurnContext::cancellation` (re-exported from
/// `tokio-util` so you need no extra dependency).
pub use tokio_util::sync::CancellationToken;

pub(crate) use abort::caused_by_abort;
pub(crate) use dispatch::Signal;
pub(crate) use storage_methods::auto_spool;
pub(crate) use tool::GateLink;
pub(crate) use tool_state::StateLink;
pub(crate) use turn::{ResumePoint, TurnEnv, watch_turn};

/// The code of a gate whose error failed the middleware (`?` on `wait_for`): the turn ends with
/// the gate's code (`E_TURN_GATE_TIMEOUT`, ...) rather than the pipeline's, as `docs/gates.md`
/// promises.
fn gate_code(failure: &crate::pipeline::MiddlewareFailure) -> Option<crate::error::ErrorCode> {
    match &failure.cause {
        crate::pipeline::FailureCause::Error(error) => {
            crate::gate::GateError::in_chain(error.as_ref()).map(crate::gate::GateError::code)
        }
        crate::pipeline::FailureCause::Panic(_) => None,
    }
}

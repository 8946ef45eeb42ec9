//! The contexts middleware and executors receive: [`TurnContext`] for the turn-scoped pipelines,
//! [`DispatchContext`] for the dispatch-scoped ones and the executor, and what builds them.

mod abort;
mod collection;
mod dispatch;
mod middleware_state_methods;
mod raw;
mod storage_methods;
mod turn;
pub(crate) mod write_queue;

pub use abort::{AbortReason, Aborted};
pub use collection::{Collection, CollectionIter, Record};
pub use dispatch::{AckSubscription, DispatchContext};
pub use raw::{InvalidTurnContext, RawTurnContext, UserMessage};
pub use turn::TurnContext;

/// The cancellation token a caller hands to `RawTurnContext::cancellation` (re-exported from
/// `tokio-util` so you need no extra dependency).
pub use tokio_util::sync::CancellationToken;

pub(crate) use abort::watch_turn;
pub(crate) use dispatch::Signal;
pub(crate) use storage_methods::auto_spool;

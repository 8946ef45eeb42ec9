//! The contexts middleware and executors receive: `TurnContext` for the turn-scoped pipelines,
//! `DispatchContext` for the dispatch-scoped ones and the executor.

mod abort;
mod dispatch;
mod turn;

pub use abort::{AbortReason, Aborted};
pub use dispatch::DispatchContext;
pub use turn::TurnContext;

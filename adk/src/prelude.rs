//! What most programs using adk import: `use adk::prelude::*;`.
//!
//! The runner and its input and outcome, the two contexts, middleware's `Next` and `BoxError`,
//! the records a turn works with, tools, storage to start with, and the scripted model.
//!
//! ```
//! use adk::prelude::*;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let runner = TurnRunner::builder()
//!     .storage(NoopStorage::new())
//!     .executor(ScriptedModel::new())
//!     .build();
//! let outcome = runner
//!     .run(RawTurnContext::new("conversation-1", "You are friendly.").user_message("Hello!"))
//!     .await?
//!     .into_result()?;
//! assert!(outcome.reply().is_some());
//! # Ok::<(), BoxError>(())
//! # })?;
//! # Ok::<(), BoxError>(())
//! ```

pub use crate::agent::Agent;
pub use crate::context::{DispatchContext, RawTurnContext, ToolContext, TurnContext};
pub use crate::dispatch::{Executor, ScriptedModel};
pub use crate::events::{Event, TurnError};
pub use crate::pipeline::{BoxError, Next};
pub use crate::primitives::{Message, Role, Tool, ToolCall, ToolError};
pub use crate::runner::{TurnOutcome, TurnRunner, TurnStatus};
pub use crate::stash::StashKey;
pub use crate::storage::{NoopStorage, SharedStorage, StorageContext};
pub use crate::{middleware, stash_key, stash_keys, storage_adapter};

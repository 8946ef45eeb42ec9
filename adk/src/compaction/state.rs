//! [`CompactionState`]: what was summarised, up to where, and why, per thread.

use serde::{Deserialize, Serialize};

use crate::middleware_state::MiddlewareState;
use crate::primitives::Timestamp;

/// The compaction of one thread: persistent, thread-scoped middleware state (HPD's
/// `CompactionStateData`), so it survives a restart with the session store and a fork copies it
/// as it is at the fork, after which each thread compacts on its own.
#[derive(MiddlewareState, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[middleware_state(persistent, key = "adk.compaction")]
pub struct CompactionState {
    /// The summary of everything before [`from`](Self::from), loaded instead of it.
    pub summary: Option<String>,
    /// Where the raw history that is still loaded starts: the creation time of the first entry
    /// not summarised. `None` before the first compaction.
    pub from: Option<Timestamp>,
    /// The id of the last record the summary covers.
    pub through_record: Option<String>,
    /// How many transcript entries (user messages and answers) the summary covers, over every
    /// compaction of the thread.
    pub summarised_entries: u64,
    /// How many compactions made the summary.
    pub compactions: u32,
    /// Why the last compaction ran.
    pub trigger: Option<Trigger>,
}

/// What set off a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    /// The tokens of the unsummarised history (and the summary before it) when it ran.
    pub tokens: usize,
    /// The threshold it passed.
    pub threshold: usize,
    /// When it ran.
    pub at: Timestamp,
}

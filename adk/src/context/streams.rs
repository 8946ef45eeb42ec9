//! What a dispatch remembers of the streams its executor reports (`report_message`,
//! `report_thought`, `report_tool_call`, in `adk::dispatch`): kept on the dispatch context, so a
//! stream's state survives iterations.

use std::collections::HashMap;

use crate::events::{StreamedContent, ToolCallContent};

use crate::lean::Lean;

/// Per-dispatch accumulators: a stream's state survives iterations, so a message streamed in
/// iteration 0 cannot be reopened in iteration 1.
///
/// The maps are made when the executor first reports a stream: a dispatch whose executor
/// reports none (a mocked model, one that stores its answer whole) made three maps, each reading
/// the thread's hash keys, and dropped them, every dispatch.
///
/// Boxed, being rare: inline the three maps (144 bytes) sat in every dispatch context, which
/// must stay small enough for the allocator's fast path.
///
/// [`Lean`]: the glue of the plain `Option` was an out-of-line call of 9 instructions, every
/// dispatch.
#[derive(Debug, Default)]
pub(crate) struct Streams(Lean<Option<Box<StreamMaps>>>);

/// The accumulators themselves, by stream id.
#[derive(Debug, Default)]
pub(crate) struct StreamMaps {
    pub(crate) messages: HashMap<String, StreamedContent>,
    pub(crate) thoughts: HashMap<String, StreamedContent>,
    pub(crate) tool_calls: HashMap<String, ToolCallContent>,
}

impl Streams {
    /// The accumulators, made on first use.
    pub(crate) fn maps(&mut self) -> &mut StreamMaps {
        self.0.get_or_insert_default()
    }
}

//! What a dispatch remembers of the streams its executor reports (`report_message`,
//! `report_thought`, `report_tool_call`, in `adk::dispatch`): kept on the dispatch context, so a
//! stream's state survives iterations.

use std::collections::HashMap;

use crate::events::{StreamedContent, ToolCallContent};

/// Per-dispatch accumulators: a stream's state survives iterations, so a message streamed in
/// iteration 0 cannot be reopened in iteration 1.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    pub(crate) messages: HashMap<String, StreamedContent>,
    pub(crate) thoughts: HashMap<String, StreamedContent>,
    pub(crate) tool_calls: HashMap<String, ToolCallContent>,
}

//! Executor helpers: streamed message and thought reporting, tool-call reporting, structured
//! logs and generation statistics. They report; they never persist — the executor stores
//! records itself through `ctx.store_message`, `ctx.store_tool_call`, ….

use std::collections::HashMap;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::context::DispatchContext;
use crate::events::{
    Event, GenerationStats, LogLevel, LogRecord, StreamedContent, StreamedText, ToolCallContent,
};
use crate::primitives::tool_call_checksum;

/// A report the helpers refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A chunk arrived for a stream that was already complete.
    #[error(
        "stream `{id}` is already complete; further chunks are not accepted (a provider that \
         reuses ids per response needs ids made unique per turn)"
    )]
    StreamComplete {
        /// The stream's id.
        id: String,
    },
    /// An update arrived for a tool call that was already complete.
    #[error(
        "tool call `{id}` is already complete; further updates are not accepted (a provider that \
         reuses ids per response needs ids made unique per turn)"
    )]
    ToolCallComplete {
        /// The tool call's id.
        id: String,
    },
}

/// What one tool-call report changes; fields left `None` keep their previous value.
///
/// ```
/// use adk::dispatch::ToolCallUpdate;
///
/// let announce = ToolCallUpdate::new()
///     .tool("forecast")
///     .args(serde_json::json!({"city": "Oslo"}));
/// let finish = ToolCallUpdate::new().results(serde_json::json!("sunny")).complete();
/// # let _ = (announce, finish);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCallUpdate {
    tool: Option<String>,
    args: Option<Value>,
    results: Option<Value>,
    is_error: Option<bool>,
    is_complete: Option<bool>,
}

impl ToolCallUpdate {
    /// An update that changes nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the tool's name.
    pub fn tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Sets the arguments.
    pub fn args(mut self, args: Value) -> Self {
        self.args = Some(args);
        self
    }

    /// Sets the results.
    pub fn results(mut self, results: Value) -> Self {
        self.results = Some(results);
        self
    }

    /// Marks the call as failed.
    pub fn error(mut self) -> Self {
        self.is_error = Some(true);
        self
    }

    /// Marks the call as complete: later updates are refused.
    pub fn complete(mut self) -> Self {
        self.is_complete = Some(true);
        self
    }
}

fn checksum_of(tool: &str, args: &Value) -> String {
    if tool.is_empty() {
        return String::new();
    }
    match args {
        Value::Object(map) => tool_call_checksum(tool, map),
        Value::Null => String::new(),
        other => {
            let mut wrapped = Map::new();
            wrapped.insert("value".to_owned(), other.clone());
            tool_call_checksum(tool, &wrapped)
        }
    }
}

impl DispatchContext {
    /// Reports a chunk of a streamed assistant message; emits [`Event::Message`] with the text
    /// accumulated so far. `is_complete` closes the stream: a later chunk for the same id is
    /// refused with [`ReportError::StreamComplete`].
    pub fn report_message(
        &mut self,
        id: &str,
        delta: &str,
        is_complete: bool,
    ) -> Result<StreamedContent, ReportError> {
        let content = accumulate(&mut self.streams.maps().messages, id, delta, is_complete)?;
        self.emit(Event::Message(content.clone()));
        Ok(content)
    }

    /// Reports a chunk of a streamed thought; see [`DispatchContext::report_message`].
    pub fn report_thought(
        &mut self,
        id: &str,
        delta: &str,
        is_complete: bool,
    ) -> Result<StreamedContent, ReportError> {
        let content = accumulate(&mut self.streams.maps().thoughts, id, delta, is_complete)?;
        self.emit(Event::Thought(content.clone()));
        Ok(content)
    }

    /// Announces or updates a tool call; emits [`Event::ToolCall`]. The checksum is computed
    /// once both tool and arguments are known, and recomputed when either changes.
    pub fn report_tool_call(
        &mut self,
        id: &str,
        update: ToolCallUpdate,
    ) -> Result<ToolCallContent, ReportError> {
        let now = SystemTime::now();
        let entry = self
            .streams
            .maps()
            .tool_calls
            .entry(id.to_owned())
            .or_insert_with(|| ToolCallContent {
                id: id.to_owned(),
                tool: String::new(),
                args: Value::Null,
                checksum: String::new(),
                created_at: now,
                updated_at: now,
                is_complete: false,
                is_error: false,
                results: None,
                completed_at: None,
            });
        if entry.is_complete {
            return Err(ReportError::ToolCallComplete { id: id.to_owned() });
        }
        let identity_changed = update.tool.is_some() || update.args.is_some();
        if let Some(tool) = update.tool {
            entry.tool = tool;
        }
        if let Some(args) = update.args {
            entry.args = args;
        }
        if identity_changed {
            entry.checksum = checksum_of(&entry.tool, &entry.args);
        }
        if let Some(results) = update.results {
            entry.results = Some(results);
        }
        if let Some(is_error) = update.is_error {
            entry.is_error = is_error;
        }
        entry.updated_at = now;
        if update.is_complete == Some(true) {
            entry.is_complete = true;
            entry.completed_at = Some(now);
        }
        let content = entry.clone();
        self.emit(Event::ToolCall(content.clone()));
        Ok(content)
    }

    /// Closes every stream of this dispatch that is still open: each unfinished message and
    /// thought gets a last event with `is_complete` and `is_interrupted` set, and each
    /// unfinished tool call a last update marking it failed with `reason` as its results.
    ///
    /// An executor calls it on the way out of a failed or cancelled model call, so a listener
    /// that waits for `is_complete` (a UI showing the message) is never left waiting. Streams
    /// close in the order they were opened; closed streams are untouched.
    ///
    /// ```
    /// use adk::context::DispatchContext;
    ///
    /// fn give_up(ctx: &mut DispatchContext) {
    ///     ctx.interrupt_open_streams("the model call failed");
    /// }
    /// # let _ = give_up;
    /// ```
    pub fn interrupt_open_streams(&mut self, reason: &str) {
        let now = SystemTime::now();
        let mut closed: Vec<Event> = Vec::new();
        let maps = self.streams.maps();
        for (streams, as_event) in [
            (
                &mut maps.thoughts,
                Event::Thought as fn(StreamedContent) -> Event,
            ),
            (&mut maps.messages, Event::Message),
        ] {
            let mut open: Vec<&mut StreamedContent> = streams
                .values_mut()
                .filter(|content| !content.is_complete)
                .collect();
            open.sort_by_key(|content| content.created_at);
            for content in open {
                content.delta.clear();
                content.updated_at = now;
                content.is_complete = true;
                content.is_interrupted = true;
                content.completed_at = Some(now);
                closed.push(as_event(content.clone()));
            }
        }
        let mut open: Vec<&mut ToolCallContent> = maps
            .tool_calls
            .values_mut()
            .filter(|call| !call.is_complete)
            .collect();
        open.sort_by_key(|call| call.created_at);
        for call in open {
            call.updated_at = now;
            call.is_complete = true;
            call.is_error = true;
            call.results = Some(Value::String(reason.to_owned()));
            call.completed_at = Some(now);
            closed.push(Event::ToolCall(call.clone()));
        }
        for event in closed {
            self.emit(event);
        }
    }

    /// Emits a structured [`Event::Log`] record, tagged with the dispatch and iteration.
    pub fn log(
        &self,
        level: LogLevel,
        kind: impl Into<String>,
        message: impl Into<String>,
        payload: Option<Value>,
    ) {
        self.emit(Event::Log(LogRecord {
            dispatch_id: self.shared_id(),
            iteration: self.iteration(),
            emitted_at: SystemTime::now(),
            level,
            kind: kind.into(),
            message: message.into(),
            payload,
        }));
    }

    /// Reports the statistics of a model call as [`Event::GenerationStats`], and keeps them for
    /// this iteration's [`generation_stats`](DispatchContext::generation_stats).
    pub fn report_generation_stats(&self, stats: GenerationStats) {
        self.keep_generation_stats(stats.clone());
        self.emit(Event::GenerationStats {
            dispatch_id: self.shared_id(),
            iteration: self.iteration(),
            emitted_at: SystemTime::now(),
            stats,
        });
    }
}

fn accumulate(
    streams: &mut HashMap<String, StreamedContent>,
    id: &str,
    delta: &str,
    is_complete: bool,
) -> Result<StreamedContent, ReportError> {
    let now = SystemTime::now();
    let entry = streams
        .entry(id.to_owned())
        .or_insert_with(|| StreamedContent {
            id: id.to_owned(),
            created_at: now,
            updated_at: now,
            full: StreamedText::new(),
            delta: String::new(),
            is_complete: false,
            completed_at: None,
            is_interrupted: false,
        });
    if entry.is_complete {
        return Err(ReportError::StreamComplete { id: id.to_owned() });
    }
    entry.full.push_str(delta);
    delta.clone_into(&mut entry.delta);
    entry.updated_at = now;
    if is_complete {
        entry.is_complete = true;
        entry.completed_at = Some(now);
    }
    Ok(entry.clone())
}

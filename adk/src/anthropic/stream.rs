//! The response side: the Messages API's server-sent events (split by the shared
//! `SseParser`) accumulated into one answer, block by block.
//!
//! Events handled: `message_start` (model, input and cache usage), `content_block_start` /
//! `content_block_delta` / `content_block_stop` for `text` (`text_delta`), `tool_use`
//! (`input_json_delta`), `thinking` (`thinking_delta`, `signature_delta`) and
//! `redacted_thinking`, `message_delta` (`stop_reason`, `stop_sequence`, output and cache
//! usage), `message_stop`, `ping` and `error`. Event types this crate does not know are skipped,
//! as Anthropic's versioning policy asks of clients; content block types it does not know fail
//! the call ([`AnthropicError::UnsupportedBlock`]): such a block could be neither stored nor
//! sent back unchanged. `citations_delta` is skipped (citations are not requested).

use serde_json::{Map, Value};

use crate::provider::{SseEvent, excerpt};

use super::error::{MAX_ERROR_MESSAGE, error_fields};
use super::{AnthropicError, ResponsePart};

/// One content block of the answer, as far as it has arrived.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// Answer text.
    Text(String),
    /// Visible reasoning and the signature that lets it be sent back.
    Thinking {
        thinking: String,
        signature: String,
        /// Whether `signature` came from `signature_delta`s: a signature in the start event
        /// (LiteLLM's proxy sends one, then the same again as a delta) is replaced by them.
        from_deltas: bool,
    },
    /// Reasoning the safety system encrypted: sent back as it came.
    Redacted { data: String },
    /// A tool call: its input arrives as pieces of JSON text.
    ToolUse {
        id: String,
        name: String,
        /// The `input_json_delta` pieces so far.
        json: String,
        /// The `input` of the start event (the whole input when the answer was not streamed).
        initial: Map<String, Value>,
    },
}

impl Block {
    fn kind(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Thinking { .. } => "thinking",
            Self::Redacted { .. } => "redacted_thinking",
            Self::ToolUse { .. } => "tool_use",
        }
    }
}

/// What one event added, for the executor to report as it streams: the block's position in
/// [`Accumulator::blocks`] and the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamDelta {
    /// Answer text.
    Text(usize, String),
    /// Thinking text.
    Thinking(usize, String),
}

/// The whole answer, accumulated event by event, at most `max_answer` bytes of it.
#[derive(Debug)]
pub(crate) struct Accumulator {
    max_answer: usize,
    size: usize,
    /// The blocks in the order of their index, each with its index and whether it was stopped.
    pub(crate) blocks: Vec<(u64, Block, bool)>,
    pub(crate) model: Option<String>,
    /// `message_start`'s usage, updated by each `message_delta`'s.
    pub(crate) usage: Map<String, Value>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) started: bool,
    pub(crate) done: bool,
}

impl Accumulator {
    pub(crate) fn new(max_answer: usize) -> Self {
        Self {
            max_answer,
            size: 0,
            blocks: Vec::new(),
            model: None,
            usage: Map::new(),
            stop_reason: None,
            started: false,
            done: false,
        }
    }

    /// Applies one event.
    pub(crate) fn apply_event(
        &mut self,
        event: &SseEvent,
    ) -> Result<Vec<StreamDelta>, AnthropicError> {
        match event {
            SseEvent::Data(data) => self.apply(data),
            SseEvent::Error(data) => Err(streamed_error(data)),
        }
    }

    /// Applies one event's data.
    pub(crate) fn apply(&mut self, data: &str) -> Result<Vec<StreamDelta>, AnthropicError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|error| malformed(format!("an event is not JSON: {error}"), data))?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                let message = event.get("message").unwrap_or(&Value::Null);
                self.started = true;
                self.model = message
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.merge_usage(message.get("usage"));
                Ok(Vec::new())
            }
            "content_block_start" => {
                let index = index_of(&event, data)?;
                let block = event.get("content_block").unwrap_or(&Value::Null);
                self.start_block(index, block, data)
            }
            "content_block_delta" => {
                let index = index_of(&event, data)?;
                let delta = event.get("delta").unwrap_or(&Value::Null);
                self.apply_delta(index, delta, data)
            }
            "content_block_stop" => {
                let index = index_of(&event, data)?;
                let position = self.open_block(index, data)?;
                self.blocks[position].2 = true;
                Ok(Vec::new())
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                self.merge_usage(event.get("usage"));
                Ok(Vec::new())
            }
            "message_stop" => {
                self.done = true;
                Ok(Vec::new())
            }
            "error" => Err(streamed_error(data)),
            // `ping` keeps the connection alive; unknown events are skipped, as the API's
            // versioning policy asks.
            _ => Ok(Vec::new()),
        }
    }

    /// Applies a whole (unstreamed) Messages response: each content block as a started and
    /// stopped block.
    pub(crate) fn apply_message(&mut self, body: &str) -> Result<Vec<StreamDelta>, AnthropicError> {
        let message: Value = serde_json::from_str(body)
            .map_err(|error| malformed(format!("the answer is not JSON: {error}"), body))?;
        if message.get("type").and_then(Value::as_str) == Some("error") {
            return Err(streamed_error(body));
        }
        let Some(content) = message.get("content").and_then(Value::as_array) else {
            return Err(malformed(
                "the answer has no `content`; is this a Messages API endpoint?".to_owned(),
                body,
            ));
        };
        self.started = true;
        self.model = message
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.merge_usage(message.get("usage"));
        self.stop_reason = message
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut deltas = Vec::new();
        for (index, block) in (0_u64..).zip(content) {
            deltas.extend(self.start_block(index, block, body)?);
            if let Some(last) = self.blocks.last_mut() {
                last.2 = true;
            }
        }
        self.done = true;
        Ok(deltas)
    }

    /// Where the stream stands when it ends: an error unless `message_stop` arrived.
    pub(crate) fn finish(&self) -> Result<(), AnthropicError> {
        if self.done {
            return Ok(());
        }
        let reason = match self.blocks.iter().find(|(_, _, stopped)| !stopped) {
            Some((index, block, _)) => format!(
                "the stream was cut inside content block {index} ({}), before its \
                 content_block_stop",
                block.kind()
            ),
            None if !self.started => "the stream ended before message_start".to_owned(),
            None => "the stream ended before message_stop".to_owned(),
        };
        Err(AnthropicError::Incomplete { reason })
    }

    fn merge_usage(&mut self, usage: Option<&Value>) {
        if let Some(Value::Object(usage)) = usage {
            for (field, value) in usage {
                if !value.is_null() {
                    self.usage.insert(field.clone(), value.clone());
                }
            }
        }
    }

    /// A count from the usage, when the server sent it.
    pub(crate) fn tokens(&self, field: &str) -> Option<u64> {
        self.usage.get(field).and_then(Value::as_u64)
    }

    fn start_block(
        &mut self,
        index: u64,
        block: &Value,
        data: &str,
    ) -> Result<Vec<StreamDelta>, AnthropicError> {
        if self.blocks.iter().any(|(known, _, _)| *known == index) {
            return Err(malformed(
                format!("content block {index} was started twice"),
                data,
            ));
        }
        let text = |field: &str| {
            block
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let position = self.blocks.len();
        let (started, delta) = match kind {
            "text" => {
                let initial = text("text");
                let delta =
                    (!initial.is_empty()).then(|| StreamDelta::Text(position, initial.clone()));
                (Block::Text(initial), delta)
            }
            "thinking" => {
                let thinking = text("thinking");
                let delta = (!thinking.is_empty())
                    .then(|| StreamDelta::Thinking(position, thinking.clone()));
                (
                    Block::Thinking {
                        thinking,
                        signature: text("signature"),
                        from_deltas: false,
                    },
                    delta,
                )
            }
            "redacted_thinking" => (Block::Redacted { data: text("data") }, None),
            "tool_use" => {
                let initial = match block.get("input") {
                    Some(Value::Object(input)) => input.clone(),
                    _ => Map::new(),
                };
                (
                    Block::ToolUse {
                        id: text("id"),
                        name: text("name"),
                        json: String::new(),
                        initial,
                    },
                    None,
                )
            }
            other => {
                return Err(AnthropicError::UnsupportedBlock {
                    block_type: other.to_owned(),
                    index,
                });
            }
        };
        self.grow(&block.to_string())?;
        self.blocks.push((index, started, false));
        Ok(delta.into_iter().collect())
    }

    fn apply_delta(
        &mut self,
        index: u64,
        delta: &Value,
        data: &str,
    ) -> Result<Vec<StreamDelta>, AnthropicError> {
        let position = self.open_block(index, data)?;
        let kind = delta.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "citations_delta" {
            return Ok(Vec::new());
        }
        let field = match kind {
            "text_delta" => "text",
            "input_json_delta" => "partial_json",
            "thinking_delta" => "thinking",
            "signature_delta" => "signature",
            other => {
                return Err(malformed(format!("unknown delta type {other:?}"), data));
            }
        };
        let Some(piece) = delta.get(field).and_then(Value::as_str) else {
            return Err(malformed(format!("a {kind} without `{field}`"), data));
        };
        self.grow(piece)?;
        let block = &mut self.blocks[position].1;
        let block_kind = block.kind();
        match (block, kind) {
            (Block::Text(text), "text_delta") => {
                text.push_str(piece);
                Ok(vec![StreamDelta::Text(position, piece.to_owned())])
            }
            (Block::ToolUse { json, .. }, "input_json_delta") => {
                json.push_str(piece);
                Ok(Vec::new())
            }
            (Block::Thinking { thinking, .. }, "thinking_delta") => {
                thinking.push_str(piece);
                Ok(vec![StreamDelta::Thinking(position, piece.to_owned())])
            }
            (
                Block::Thinking {
                    signature,
                    from_deltas,
                    ..
                },
                "signature_delta",
            ) => {
                if !*from_deltas {
                    signature.clear();
                    *from_deltas = true;
                }
                signature.push_str(piece);
                Ok(Vec::new())
            }
            _ => Err(malformed(
                format!("a {kind} for content block {index}, which is {block_kind}"),
                data,
            )),
        }
    }

    /// The position of the started, not yet stopped block `index`.
    fn open_block(&self, index: u64, data: &str) -> Result<usize, AnthropicError> {
        match self.blocks.iter().position(|(known, _, _)| *known == index) {
            Some(position) if !self.blocks[position].2 => Ok(position),
            Some(_) => Err(malformed(
                format!("content block {index} was already stopped"),
                data,
            )),
            None => Err(malformed(
                format!("content block {index} was never started"),
                data,
            )),
        }
    }

    /// Counts `piece` against the answer's cap.
    fn grow(&mut self, piece: &str) -> Result<(), AnthropicError> {
        self.size = self.size.saturating_add(piece.len());
        if self.size > self.max_answer {
            return Err(AnthropicError::ResponseTooLarge {
                part: ResponsePart::Answer,
                limit: self.max_answer,
                excerpt: excerpt(piece.as_bytes()),
            });
        }
        Ok(())
    }
}

fn index_of(event: &Value, data: &str) -> Result<u64, AnthropicError> {
    event
        .get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| malformed("a content block event without `index`".to_owned(), data))
}

fn malformed(reason: String, data: &str) -> AnthropicError {
    AnthropicError::MalformedStream {
        reason,
        data: excerpt(data.as_bytes()),
    }
}

fn streamed_error(data: &str) -> AnthropicError {
    let value =
        serde_json::from_str::<Value>(data).unwrap_or_else(|_| Value::String(data.to_owned()));
    let (kind, message) = error_fields(&value);
    AnthropicError::StreamedError {
        kind,
        message: message.unwrap_or_else(|| crate::provider::cut(data, MAX_ERROR_MESSAGE)),
        data: excerpt(data.as_bytes()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> Result<Accumulator, AnthropicError> {
        let mut accumulator = Accumulator::new(1 << 20);
        for event in events {
            accumulator.apply(event)?;
        }
        accumulator.finish()?;
        Ok(accumulator)
    }

    const START: &str = r#"{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":10,"cache_read_input_tokens":7,"output_tokens":1}}}"#;
    const STOP: &str = r#"{"type":"message_stop"}"#;

    #[test]
    fn thinking_text_and_a_tool_use_are_assembled_in_block_order() {
        let answer = run(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Oslo, "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"so weather."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking."}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"some_future_event","detail":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}"#,
            STOP,
        ])
        .unwrap();
        assert_eq!(
            answer.blocks[0].1,
            Block::Thinking {
                thinking: "Oslo, so weather.".into(),
                signature: "c2ln".into(),
                from_deltas: true,
            }
        );
        assert_eq!(answer.blocks[1].1, Block::Text("Checking.".into()));
        assert!(
            matches!(&answer.blocks[2].1, Block::ToolUse { id, name, json, .. } if id == "toolu_1" && name == "weather" && json == r#"{"city": "Oslo"}"#)
        );
        assert_eq!(answer.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            (
                answer.tokens("input_tokens"),
                answer.tokens("output_tokens"),
                answer.tokens("cache_read_input_tokens")
            ),
            (Some(10), Some(42), Some(7))
        );
        assert_eq!(answer.model.as_deref(), Some("claude-x"));
    }

    #[test]
    fn a_signature_in_the_start_event_is_replaced_by_the_signature_deltas() {
        // LiteLLM's proxy sends the whole block in its start event, then the signature again.
        let answer = run(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"2 cities.","signature":"sig-2"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-2"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            STOP,
        ])
        .unwrap();
        assert!(
            matches!(&answer.blocks[0].1, Block::Thinking { thinking, signature, .. } if thinking == "2 cities." && signature == "sig-2")
        );
    }

    #[test]
    fn a_stream_cut_inside_a_block_names_the_block() {
        let error = run(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}"#,
        ])
        .unwrap_err();
        assert!(
            matches!(&error, AnthropicError::Incomplete { reason } if reason.contains("block 0 (tool_use)")),
            "{error:?}"
        );
        let error = run(&[START]).unwrap_err();
        assert!(matches!(error, AnthropicError::Incomplete { .. }));
    }

    #[test]
    fn unknown_blocks_fail_typed_and_deltas_must_fit_their_block() {
        let error = run(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search"}}"#,
        ])
        .unwrap_err();
        assert!(
            matches!(&error, AnthropicError::UnsupportedBlock { block_type, index: 0 } if block_type == "server_tool_use"),
            "{error:?}"
        );
        let error = run(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
        ])
        .unwrap_err();
        assert!(
            matches!(error, AnthropicError::MalformedStream { .. }),
            "{error:?}"
        );
        let error = run(&[
            START,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#,
        ])
        .unwrap_err();
        assert!(error.to_string().contains("never started"), "{error}");
    }

    #[test]
    fn an_error_event_carries_its_type_and_message() {
        let mut accumulator = Accumulator::new(1024);
        let error = accumulator
            .apply_event(&SseEvent::Error(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                    .into(),
            ))
            .unwrap_err();
        assert!(
            matches!(&error, AnthropicError::StreamedError { kind: Some(kind), message, .. } if kind == "overloaded_error" && message == "Overloaded"),
            "{error:?}"
        );
    }

    #[test]
    fn the_answer_cap_counts_text_thinking_and_tool_input() {
        let mut accumulator = Accumulator::new(64);
        accumulator.apply(START).unwrap();
        accumulator
            .apply(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#)
            .unwrap();
        let piece = format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{}"}}}}"#,
            "x".repeat(64)
        );
        let error = accumulator.apply(&piece).unwrap_err();
        assert!(
            matches!(
                error,
                AnthropicError::ResponseTooLarge {
                    part: ResponsePart::Answer,
                    limit: 64,
                    ..
                }
            ),
            "{error:?}"
        );
    }

    #[test]
    fn a_whole_message_is_read_block_by_block() {
        let mut accumulator = Accumulator::new(1 << 20);
        let deltas = accumulator
            .apply_message(
                r#"{"type":"message","model":"m","stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4},
                   "content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Hi"},
                              {"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]}"#,
            )
            .unwrap();
        assert_eq!(
            deltas,
            [
                StreamDelta::Thinking(0, "hm".into()),
                StreamDelta::Text(1, "Hi".into())
            ]
        );
        assert!(accumulator.finish().is_ok());
        assert!(
            matches!(&accumulator.blocks[2].1, Block::ToolUse { initial, .. } if initial["a"] == 1)
        );
    }
}

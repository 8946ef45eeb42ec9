//! The response side: server-sent events split into `data` payloads, and the chat-completions
//! chunks in them accumulated into one answer (text, reasoning, tool calls, usage).
//!
//! SSE is parsed here rather than with a crate: the protocol is a handful of line rules, and the
//! parser has to work on raw byte chunks that may split a line (or a UTF-8 character) anywhere.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::OpenAiError;

/// Splits a byte stream into the `data` of its events.
///
/// Linear in its input: bytes already searched for a line end are not searched again when the
/// next chunk arrives, so one long line sent in many small chunks costs its length, not its
/// length squared.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    pending: Vec<u8>,
    /// How many leading bytes of `pending` are known to hold no line end.
    scanned: usize,
    data: Option<String>,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event they completed, in order.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut consumed = 0;
        let mut search_from = self.scanned;
        while let Some(offset) = self.pending[search_from..]
            .iter()
            .position(|&byte| byte == b'\n')
        {
            let end = search_from + offset;
            let line = &self.pending[consumed..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line).into_owned();
            consumed = end + 1;
            search_from = consumed;
            if let Some(data) = self.line(&line) {
                events.push(data);
            }
        }
        self.pending.drain(..consumed);
        self.scanned = self.pending.len();
        events
    }

    /// The data of an event the stream ended inside, if any.
    pub(crate) fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        self.scanned = 0;
        if !rest.is_empty() {
            let line = String::from_utf8_lossy(&rest).into_owned();
            if let Some(data) = self.line(line.trim_end_matches('\r')) {
                return Some(data);
            }
        }
        self.data.take()
    }

    fn line(&mut self, line: &str) -> Option<String> {
        if line.is_empty() {
            return self.data.take();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        // `event`, `id` and `retry` carry nothing the chat-completions protocol uses.
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        None
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<ChoiceDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    /// llama.cpp, vLLM and DeepSeek name it `reasoning_content`; some servers `reasoning`.
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    /// `null` from some servers when there are none.
    #[serde(default, deserialize_with = "null_as_empty")]
    tool_calls: Vec<ToolCallDelta>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ToolCallDelta>, D::Error> {
    Ok(Option::<Vec<ToolCallDelta>>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// What one chunk changed, for the executor to report as it streams.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamDelta {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
}

/// A tool call as assembled from its deltas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssembledToolCall {
    /// The id it is stored under: unique within the turn.
    pub(crate) id: String,
    /// The id the provider gave it, if any.
    pub(crate) provider_id: Option<String>,
    /// The tool's name.
    pub(crate) name: String,
    /// The arguments, as the JSON text the model wrote.
    pub(crate) arguments: String,
}

/// The whole answer, accumulated chunk by chunk.
#[derive(Debug)]
pub(crate) struct Accumulator {
    id_prefix: String,
    pub(crate) text: String,
    pub(crate) reasoning: String,
    tool_calls: BTreeMap<u32, AssembledToolCall>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) usage: Option<Value>,
    pub(crate) done: bool,
}

impl Accumulator {
    /// `id_prefix` makes the provider's tool-call ids unique within the turn: providers may
    /// repeat ids across responses.
    pub(crate) fn new(id_prefix: impl Into<String>) -> Self {
        Self {
            id_prefix: id_prefix.into(),
            text: String::new(),
            reasoning: String::new(),
            tool_calls: BTreeMap::new(),
            finish_reason: None,
            model: None,
            usage: None,
            done: false,
        }
    }

    /// Applies one event's data.
    pub(crate) fn apply(&mut self, data: &str) -> Result<Vec<StreamDelta>, OpenAiError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let malformed = |reason: String| OpenAiError::MalformedStream {
            reason,
            data: data.to_owned(),
        };
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|error| malformed(format!("a chunk is not chat-completions JSON: {error}")))?;
        if let Some(error) = chunk.error {
            return Err(OpenAiError::StreamedError {
                message: error_message(&error).unwrap_or_else(|| error.to_string()),
                data: data.to_owned(),
            });
        }
        Ok(self.apply_chunk(chunk))
    }

    /// Applies a whole (unstreamed) chat completion: its `message` is read as one delta.
    pub(crate) fn apply_completion(&mut self, body: &str) -> Result<Vec<StreamDelta>, OpenAiError> {
        let malformed = |reason: String| OpenAiError::MalformedStream {
            reason,
            data: body.to_owned(),
        };
        let mut value: Value = serde_json::from_str(body)
            .map_err(|error| malformed(format!("the answer is not JSON: {error}")))?;
        if let Some(error) = value.get("error").filter(|error| !error.is_null()) {
            return Err(OpenAiError::StreamedError {
                message: error_message(error).unwrap_or_else(|| error.to_string()),
                data: body.to_owned(),
            });
        }
        let Some(choices) = value.get_mut("choices").and_then(Value::as_array_mut) else {
            return Err(malformed(
                "the answer has no `choices`; is this a chat-completions endpoint?".to_owned(),
            ));
        };
        for choice in choices.iter_mut() {
            let Some(object) = choice.as_object_mut() else {
                continue;
            };
            // A whole message has the shape of one delta carrying everything.
            if let Some(message) = object.remove("message") {
                object.insert("delta".to_owned(), message);
            }
        }
        let chunk: Chunk = serde_json::from_value(value)
            .map_err(|error| malformed(format!("the answer is not a chat completion: {error}")))?;
        let deltas = self.apply_chunk(chunk);
        self.done = true;
        Ok(deltas)
    }

    fn apply_chunk(&mut self, chunk: Chunk) -> Vec<StreamDelta> {
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        if chunk.usage.as_ref().is_some_and(|usage| !usage.is_null()) {
            self.usage = chunk.usage;
        }
        let mut deltas = Vec::new();
        // One answer is asked for (`n` is not sent), so every choice is the same answer.
        for choice in chunk.choices {
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
            let Some(delta) = choice.delta else { continue };
            if let Some(text) = delta.reasoning_content.filter(|text| !text.is_empty()) {
                self.reasoning.push_str(&text);
                deltas.push(StreamDelta::Reasoning(text));
            }
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                self.text.push_str(&text);
                deltas.push(StreamDelta::Text(text));
            }
            for (position, call) in delta.tool_calls.into_iter().enumerate() {
                // Servers that send whole calls at once sometimes omit `index`.
                let index = call
                    .index
                    .unwrap_or_else(|| self.next_index(position, call.id.as_deref()));
                let (name, arguments) = match call.function {
                    Some(function) => (function.name, function.arguments),
                    None => (None, None),
                };
                let id_prefix = &self.id_prefix;
                let entry = self.tool_calls.entry(index).or_insert_with(|| {
                    let id = match call.id.as_deref().filter(|id| !id.is_empty()) {
                        Some(provider_id) => format!("{id_prefix}-{provider_id}"),
                        None => format!("{id_prefix}-call-{index}"),
                    };
                    AssembledToolCall {
                        id,
                        provider_id: None,
                        name: String::new(),
                        arguments: String::new(),
                    }
                });
                if entry.provider_id.is_none() {
                    entry.provider_id = call.id.filter(|id| !id.is_empty());
                }
                if let Some(name) = name {
                    // Most servers send the name whole; a few split it like the arguments.
                    entry.name.push_str(&name);
                }
                if let Some(arguments) = arguments {
                    entry.arguments.push_str(&arguments);
                }
            }
        }
        deltas
    }

    fn next_index(&self, position: usize, id: Option<&str>) -> u32 {
        if let Some(id) = id
            && let Some((index, _)) = self
                .tool_calls
                .iter()
                .find(|(_, call)| call.provider_id.as_deref() == Some(id))
        {
            return *index;
        }
        let next = self
            .tool_calls
            .keys()
            .next_back()
            .map_or(0, |last| last + 1);
        next.max(u32::try_from(position).unwrap_or(u32::MAX))
    }

    /// The tool calls, in the order of their indexes.
    pub(crate) fn tool_calls(&self) -> impl Iterator<Item = &AssembledToolCall> {
        self.tool_calls.values()
    }
}

/// The message of an OpenAI-style error object (`{"message": ..}`), or of a body holding one
/// (`{"error": {"message": ..}}`, `{"error": ".."}`, `{"message": ..}`).
pub(crate) fn error_message(value: &Value) -> Option<String> {
    match value {
        Value::String(message) => Some(message.clone()),
        Value::Object(object) => object
            .get("error")
            .and_then(error_message)
            .or_else(|| object.get("message").and_then(error_message))
            .or_else(|| object.get("detail").and_then(error_message)),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_across_chunks_are_reassembled() {
        let stream = "data: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: first\ndata: second\n\nevent: x\ndata: é\n\n";
        let bytes = stream.as_bytes();
        for split in 0..bytes.len() {
            let mut parser = SseParser::default();
            let mut events = parser.push(&bytes[..split]);
            events.extend(parser.push(&bytes[split..]));
            assert_eq!(
                events,
                ["{\"a\":1}", "first\nsecond", "é"],
                "split at {split}"
            );
            assert_eq!(parser.finish(), None);
        }
    }

    #[test]
    fn an_event_cut_off_by_the_end_of_the_stream_is_still_delivered() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"data: [DONE]").is_empty());
        assert_eq!(parser.finish().as_deref(), Some("[DONE]"));
    }

    #[test]
    fn tool_call_deltas_accumulate_per_index_under_prefixed_ids() {
        let mut accumulator = Accumulator::new("d-0");
        let first = accumulator
            .apply(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"forecast","arguments":""}}]}}]}"#)
            .unwrap();
        assert!(
            first.is_empty(),
            "a call is announced once its arguments are whole"
        );
        for piece in [r#"{\"ci"#, r#"ty\": "#, r#"\"Oslo\"}"#] {
            let data = format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":"{piece}"}}}}]}}}}]}}"#
            );
            assert!(accumulator.apply(&data).unwrap().is_empty());
        }
        accumulator
            .apply(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#)
            .unwrap();
        let calls: Vec<_> = accumulator.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "forecast");
        assert_eq!(calls[0].arguments, r#"{"city": "Oslo"}"#);
        assert_eq!(calls[0].id, "d-0-call_1");
        assert_eq!(accumulator.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn one_long_line_in_small_chunks_is_parsed_in_linear_time() {
        // Quadratic rescanning made this take seconds; linear parsing takes milliseconds. The
        // figure lives in the bench; here the result is checked.
        let line = format!("data: {}\n\n", "x".repeat(1 << 20));
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for piece in line.as_bytes().chunks(64) {
            events.extend(parser.push(piece));
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].len(), 1 << 20);
    }

    #[test]
    fn a_whole_completion_is_read_as_one_delta_with_its_tool_calls() {
        let mut accumulator = Accumulator::new("d-0");
        let deltas = accumulator
            .apply_completion(
                r#"{"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"forecast","arguments":"{}"}}]}}],"usage":{"total_tokens":3}}"#,
            )
            .unwrap();
        assert_eq!(deltas, [StreamDelta::Text("Checking.".into())]);
        assert!(accumulator.done);
        let calls: Vec<_> = accumulator.tool_calls().cloned().collect();
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("d-0-c1", "forecast")
        );
        assert_eq!(accumulator.usage.as_ref().unwrap()["total_tokens"], 3);
        assert!(matches!(
            accumulator.apply_completion(r#"{"object":"list"}"#),
            Err(OpenAiError::MalformedStream { .. })
        ));
    }

    #[test]
    fn an_error_object_in_the_stream_is_reported_with_its_message() {
        let mut accumulator = Accumulator::new("d-0");
        let error = accumulator
            .apply(r#"{"error":{"message":"context length exceeded"}}"#)
            .unwrap_err();
        assert!(
            error.to_string().contains("context length exceeded"),
            "{error}"
        );
        assert!(matches!(
            accumulator.apply("not json"),
            Err(OpenAiError::MalformedStream { .. })
        ));
    }
}

//! The response side: the chat-completions chunks of the server-sent events (split by the
//! shared `SseParser`) accumulated into one answer (text, reasoning, tool calls, usage).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::provider::SseEvent;

use super::error::{MAX_ERROR_MESSAGE, cut, excerpt};
use super::{OpenAiError, ResponsePart};

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<ChoiceDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    /// llama.cpp, vLLM and DeepSeek name it `reasoning_content`; Ollama, OpenRouter, LM Studio
    /// and newer vLLM `reasoning`; vLLM with a reasoning parser sends both, with the same text.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<Value>,
    /// Set instead of `content` when the model declines.
    #[serde(default)]
    refusal: Option<String>,
    /// `null` from some servers when there are none.
    #[serde(default, deserialize_with = "null_as_empty")]
    tool_calls: Vec<ToolCallDelta>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
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
    /// A string of JSON (the protocol), or the JSON object itself (some Ollama models).
    #[serde(default)]
    arguments: Option<Value>,
}

/// Which field the server put its reasoning in: the one it is sent back in under
/// [`ReasoningReplay::Auto`](super::ReasoningReplay::Auto).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReasoningField {
    /// `reasoning_content`.
    ReasoningContent,
    /// `reasoning`.
    Reasoning,
}

impl ReasoningField {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::ReasoningContent => "reasoning_content",
            Self::Reasoning => "reasoning",
        }
    }
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

/// The whole answer, accumulated chunk by chunk, at most `max_answer` bytes of it.
#[derive(Debug)]
pub(crate) struct Accumulator {
    id_prefix: String,
    max_answer: usize,
    /// Bytes of text, reasoning, refusal and tool calls held.
    size: usize,
    pub(crate) text: String,
    pub(crate) reasoning: String,
    pub(crate) reasoning_field: Option<ReasoningField>,
    pub(crate) refusal: String,
    tool_calls: BTreeMap<u32, AssembledToolCall>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) usage: Option<Value>,
    pub(crate) done: bool,
}

impl Accumulator {
    /// `id_prefix` makes the provider's tool-call ids unique within the turn: providers may
    /// repeat ids across responses.
    pub(crate) fn new(id_prefix: impl Into<String>, max_answer: usize) -> Self {
        Self {
            id_prefix: id_prefix.into(),
            max_answer,
            size: 0,
            text: String::new(),
            reasoning: String::new(),
            reasoning_field: None,
            refusal: String::new(),
            tool_calls: BTreeMap::new(),
            finish_reason: None,
            model: None,
            usage: None,
            done: false,
        }
    }

    /// Applies one event.
    pub(crate) fn apply_event(
        &mut self,
        event: &SseEvent,
    ) -> Result<Vec<StreamDelta>, OpenAiError> {
        match event {
            SseEvent::Data(data) => self.apply(data),
            SseEvent::Error(data) => {
                let value = serde_json::from_str::<Value>(data)
                    .unwrap_or_else(|_| Value::String(data.clone()));
                Err(streamed_error(&value, data))
            }
        }
    }

    /// Applies one event's data.
    pub(crate) fn apply(&mut self, data: &str) -> Result<Vec<StreamDelta>, OpenAiError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|error| {
            malformed(
                format!("a chunk is not chat-completions JSON: {error}"),
                data,
            )
        })?;
        if let Some(error) = chunk.error.as_ref().filter(|error| !error.is_null()) {
            return Err(streamed_error(error, data));
        }
        self.apply_chunk(chunk)
    }

    /// Applies a whole (unstreamed) chat completion: its `message` is read as one delta.
    pub(crate) fn apply_completion(&mut self, body: &str) -> Result<Vec<StreamDelta>, OpenAiError> {
        let mut value: Value = serde_json::from_str(body)
            .map_err(|error| malformed(format!("the answer is not JSON: {error}"), body))?;
        if let Some(error) = value.get("error").filter(|error| !error.is_null()) {
            return Err(streamed_error(error, body));
        }
        let Some(choices) = value.get_mut("choices").and_then(Value::as_array_mut) else {
            return Err(malformed(
                "the answer has no `choices`; is this a chat-completions endpoint?".to_owned(),
                body,
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
        let chunk: Chunk = serde_json::from_value(value).map_err(|error| {
            malformed(
                format!("the answer is not a chat completion: {error}"),
                body,
            )
        })?;
        let deltas = self.apply_chunk(chunk)?;
        self.done = true;
        Ok(deltas)
    }

    fn apply_chunk(&mut self, chunk: Chunk) -> Result<Vec<StreamDelta>, OpenAiError> {
        if chunk.model.is_some() {
            self.model = chunk.model;
        }
        if chunk.usage.as_ref().is_some_and(|usage| !usage.is_null()) {
            self.usage = chunk.usage;
        }
        let mut deltas = Vec::new();
        for choice in chunk.choices {
            // `n` is not sent, so a second choice means someone asked for several answers.
            if let Some(index) = choice.index.filter(|index| *index > 0) {
                return Err(OpenAiError::MultipleChoices { index });
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
            let Some(delta) = choice.delta else { continue };
            if let Some((field, text)) = reasoning_of(&delta) {
                self.grow(text.len(), &text)?;
                self.reasoning_field = Some(field);
                self.reasoning.push_str(&text);
                deltas.push(StreamDelta::Reasoning(text));
            }
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                self.grow(text.len(), &text)?;
                self.text.push_str(&text);
                deltas.push(StreamDelta::Text(text));
            }
            if let Some(refusal) = delta.refusal.filter(|text| !text.is_empty()) {
                self.grow(refusal.len(), &refusal)?;
                self.refusal.push_str(&refusal);
            }
            for (position, call) in delta.tool_calls.into_iter().enumerate() {
                self.apply_tool_call(position, call)?;
            }
        }
        Ok(deltas)
    }

    fn apply_tool_call(&mut self, position: usize, call: ToolCallDelta) -> Result<(), OpenAiError> {
        // Servers that send whole calls at once sometimes omit `index`.
        let index = call
            .index
            .unwrap_or_else(|| self.next_index(position, call.id.as_deref()));
        let (name, arguments) = match call.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        let arguments = match arguments {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text),
            // Some Ollama models send the arguments as the object itself.
            Some(other) => Some(other.to_string()),
        };
        let added =
            name.as_ref().map_or(0, String::len) + arguments.as_ref().map_or(0, String::len);
        self.grow(added, arguments.as_deref().unwrap_or_default())?;
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
        Ok(())
    }

    /// Counts `added` bytes against the answer's cap.
    fn grow(&mut self, added: usize, piece: &str) -> Result<(), OpenAiError> {
        self.size = self.size.saturating_add(added);
        if self.size > self.max_answer {
            let start = if self.text.is_empty() {
                piece
            } else {
                &self.text
            };
            return Err(OpenAiError::ResponseTooLarge {
                part: ResponsePart::Answer,
                limit: self.max_answer,
                excerpt: excerpt(start.as_bytes()),
            });
        }
        Ok(())
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

/// The reasoning of a delta and the field it came in. When a server sends both fields (vLLM
/// with a reasoning parser), they hold the same text: `reasoning_content` is taken, once.
fn reasoning_of(delta: &ChoiceDelta) -> Option<(ReasoningField, String)> {
    if let Some(text) = delta
        .reasoning_content
        .as_ref()
        .filter(|text| !text.is_empty())
    {
        return Some((ReasoningField::ReasoningContent, text.clone()));
    }
    // `reasoning` is a string everywhere but OpenRouter, which may send an object with `text`.
    let text = match delta.reasoning.as_ref()? {
        Value::String(text) => text.clone(),
        Value::Object(object) => object.get("text")?.as_str()?.to_owned(),
        _ => return None,
    };
    (!text.is_empty()).then_some((ReasoningField::Reasoning, text))
}

fn malformed(reason: String, data: &str) -> OpenAiError {
    OpenAiError::MalformedStream {
        reason,
        data: excerpt(data.as_bytes()),
    }
}

fn streamed_error(error: &Value, data: &str) -> OpenAiError {
    let details = ErrorDetails::of(error);
    OpenAiError::StreamedError {
        message: details
            .message
            .unwrap_or_else(|| cut(&error.to_string(), MAX_ERROR_MESSAGE)),
        kind: details.kind,
        code: details.code,
        param: details.param,
        data: excerpt(data.as_bytes()),
    }
}

/// The parts of an OpenAI-style error object, read from the object (`{"message": ..}`) or from
/// a body holding one (`{"error": {..}}`, `{"error": ".."}`, `{"detail": ..}`). The message is
/// cut at [`MAX_ERROR_MESSAGE`] bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorDetails {
    pub(crate) message: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) param: Option<String>,
}

impl ErrorDetails {
    pub(crate) fn of(value: &Value) -> Self {
        let text = |value: Option<&Value>| match value? {
            Value::String(text) if !text.is_empty() => Some(cut(text, MAX_ERROR_MESSAGE)),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        };
        match value {
            Value::String(message) => Self {
                message: Some(cut(message, MAX_ERROR_MESSAGE)),
                ..Self::default()
            },
            Value::Object(object) => {
                if let Some(inner) = object.get("error").filter(|inner| !inner.is_null()) {
                    return Self::of(inner);
                }
                let message = match object.get("message").or_else(|| object.get("detail")) {
                    Some(Value::String(message)) => Some(cut(message, MAX_ERROR_MESSAGE)),
                    Some(other @ Value::Object(_)) => Self::of(other).message,
                    Some(other) if !other.is_null() => {
                        Some(cut(&other.to_string(), MAX_ERROR_MESSAGE))
                    }
                    _ => None,
                };
                Self {
                    message,
                    kind: text(object.get("type")),
                    code: text(object.get("code")),
                    param: text(object.get("param")),
                }
            }
            _ => Self::default(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::provider::SseParser;

    #[test]
    fn tool_call_deltas_accumulate_per_index_under_prefixed_ids() {
        let mut accumulator = Accumulator::new("d-0", 1 << 20);
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
    fn a_whole_completion_is_read_as_one_delta_with_its_tool_calls() {
        let mut accumulator = Accumulator::new("d-0", 1 << 20);
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
        let mut accumulator = Accumulator::new("d-0", 1 << 20);
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

    #[test]
    fn errors_outside_chunks_are_events_of_their_own() {
        let mut parser = SseParser::new(1024);
        let events = parser
            .push(b"error: {\"code\":500,\"message\":\"boom\"}\n\nevent: error\ndata: {\"message\":\"late\"}\n\ndata: [DONE]\n\n")
            .unwrap();
        assert_eq!(
            events,
            [
                SseEvent::Error(r#"{"code":500,"message":"boom"}"#.into()),
                SseEvent::Error(r#"{"message":"late"}"#.into()),
                SseEvent::Data("[DONE]".into()),
            ]
        );
        let error = Accumulator::new("d", 1024)
            .apply_event(&events[0])
            .unwrap_err();
        assert!(
            matches!(&error, OpenAiError::StreamedError { message, code: Some(code), .. } if message == "boom" && code == "500"),
            "{error:?}"
        );
    }

    #[test]
    fn reasoning_in_either_field_or_both_is_taken_once() {
        let mut accumulator = Accumulator::new("d", 1024);
        let both = accumulator
            .apply(
                r#"{"choices":[{"index":0,"delta":{"reasoning":"Hm","reasoning_content":"Hm"}}]}"#,
            )
            .unwrap();
        assert_eq!(both, [StreamDelta::Reasoning("Hm".into())]);
        assert_eq!(
            accumulator.reasoning_field,
            Some(ReasoningField::ReasoningContent)
        );
        accumulator
            .apply(r#"{"choices":[{"index":0,"delta":{"reasoning":"m."}}]}"#)
            .unwrap();
        assert_eq!(accumulator.reasoning, "Hmm.");
        assert_eq!(accumulator.reasoning_field, Some(ReasoningField::Reasoning));
    }

    #[test]
    fn the_answer_cap_counts_text_reasoning_and_arguments() {
        let mut accumulator = Accumulator::new("d", 10);
        accumulator
            .apply(r#"{"choices":[{"delta":{"content":"12345"}}]}"#)
            .unwrap();
        let error = accumulator
            .apply(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}"#)
            .unwrap_err();
        assert!(
            matches!(&error, OpenAiError::ResponseTooLarge { part: ResponsePart::Answer, limit: 10, excerpt } if excerpt == "12345"),
            "{error:?}"
        );
    }

    #[test]
    fn error_details_are_read_from_any_common_shape() {
        let details = ErrorDetails::of(&serde_json::json!({"error": {
            "message": "You exceeded your current quota", "type": "insufficient_quota",
            "param": null, "code": "insufficient_quota"}}));
        assert_eq!(details.code.as_deref(), Some("insufficient_quota"));
        assert_eq!(details.kind.as_deref(), Some("insufficient_quota"));
        assert_eq!(details.param, None);
        let long = ErrorDetails::of(&serde_json::json!({"detail": "y".repeat(10_000)}));
        assert!(long.message.unwrap().len() <= MAX_ERROR_MESSAGE + '…'.len_utf8());
        assert_eq!(
            ErrorDetails::of(&serde_json::json!({"error": "plain"}))
                .message
                .as_deref(),
            Some("plain")
        );
    }
}

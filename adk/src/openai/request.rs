//! The request side: a dispatch context mapped to a `/chat/completions` body.
//!
//! Order of `messages`: the system prompt, then each standing instruction (both as `system`
//! messages), then the conversation as it happened: the context's messages and tool calls merged
//! by creation time. Consecutive finished tool calls become one assistant message with
//! `tool_calls` (joined to the assistant text just before them, if any), each followed by its
//! `tool` result. Pending tool calls are left out: the protocol requires a result for every call.
//! Tool-call ids are renumbered per request (`call_1`, `call_2`, …): the stored ids are long and
//! made unique per turn, while the protocol only needs them to pair calls with results.
//!
//! Media become content parts: a user message's attachments follow its text in one `content`
//! array; a tool's media results are named in its `tool` message and sent as parts of one
//! `user` message after the group's results (the protocol takes text only in `tool` messages).
//! See [`media_part`] for which media become which part.

use std::collections::HashMap;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::context::{Collection, DispatchContext};
use crate::primitives::{
    Media, MediaKind, Message, Role, SpooledArtifact, ToolCall, ToolCallResults,
};

use super::OpenAiConfig;

/// One request as it will be sent: the body and the headers added to the configured ones.
///
/// A [request hook](super::OpenAiExecutor::with_request_hook) receives it before every
/// iteration's call and may change anything in it.
///
/// ```
/// use adk::openai::ChatRequest;
///
/// fn force_json(request: &mut ChatRequest) {
///     request.body.insert(
///         "response_format".to_owned(),
///         serde_json::json!({"type": "json_object"}),
///     );
/// }
/// # let _ = force_json;
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The JSON body: `model`, `messages`, `tools`, `stream`…, and the configured extra fields.
    pub body: Map<String, Value>,
    /// Headers for this request only; they replace configured headers of the same name.
    pub headers: HeaderMap,
}

/// The request for this iteration of `ctx`, media read from their readers.
pub(crate) async fn chat_request(ctx: &DispatchContext, config: &OpenAiConfig) -> ChatRequest {
    let mut messages = Vec::new();
    let system_prompt = ctx.system_prompt().render();
    if !system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": system_prompt}));
    }
    for instruction in &ctx.standing_instructions {
        let text = instruction.render();
        if !text.is_empty() {
            messages.push(json!({"role": "system", "content": text}));
        }
    }
    let contents = Contents::read(&ctx.messages, &ctx.tool_calls).await;
    conversation(&ctx.messages, &ctx.tool_calls, &contents, &mut messages);

    let mut body = Map::new();
    body.insert("model".to_owned(), Value::String(config.model.clone()));
    body.insert("messages".to_owned(), Value::Array(messages));
    let tools: Vec<Value> = ctx
        .tools
        .visible()
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name(),
                    "description": tool.description(),
                    "parameters": tool.input_schema(),
                },
            })
        })
        .collect();
    // Some servers reject an empty `tools` array.
    if !tools.is_empty() {
        body.insert("tools".to_owned(), Value::Array(tools));
    }
    body.insert("stream".to_owned(), Value::Bool(config.stream));
    if config.stream && config.include_usage {
        body.insert("stream_options".to_owned(), json!({"include_usage": true}));
    }
    for (field, value) in &config.extra_body {
        if !body.contains_key(field) {
            body.insert(field.clone(), value.clone());
        }
    }
    ChatRequest {
        body,
        headers: HeaderMap::new(),
    }
}

/// What the media and artifacts of a request read as, gathered before the body is built (reading
/// is async; building is not). Keyed by media id, and by artifact reader id.
#[derive(Debug, Default)]
struct Contents {
    media: HashMap<String, Value>,
    artifacts: HashMap<String, String>,
}

impl Contents {
    async fn read(messages: &Collection<Message>, tool_calls: &Collection<ToolCall>) -> Self {
        let mut contents = Self::default();
        for message in messages
            .iter()
            .filter(|message| message.role() == Role::User)
        {
            for media in message.attachments() {
                contents.add_media(media).await;
            }
        }
        for call in tool_calls.iter().filter(|call| call.is_complete()) {
            match call.results() {
                Some(ToolCallResults::Media(media)) => contents.add_media(media).await,
                Some(ToolCallResults::MediaList(list)) => {
                    for media in list {
                        contents.add_media(media).await;
                    }
                }
                Some(ToolCallResults::Artifact(artifact)) => contents.add_artifact(artifact).await,
                Some(ToolCallResults::Artifacts(list)) => {
                    for artifact in list {
                        contents.add_artifact(artifact).await;
                    }
                }
                Some(ToolCallResults::Text(_)) | None => {}
            }
        }
        contents
    }

    async fn add_media(&mut self, media: &Media) {
        if !self.media.contains_key(media.id()) {
            let part = media_part(media).await;
            self.media.insert(media.id().to_owned(), part);
        }
    }

    async fn add_artifact(&mut self, artifact: &SpooledArtifact) {
        let id = artifact.reader().id().to_owned();
        if self.artifacts.contains_key(&id) {
            return;
        }
        let text = match artifact.reader().read_all().await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) => format!("[artifact {id} could not be read: {error}]"),
        };
        self.artifacts.insert(id, text);
    }

    fn media(&self, media: &Media) -> Value {
        self.media
            .get(media.id())
            .cloned()
            .unwrap_or_else(|| text_part(format!("[{} was not read]", describe(media))))
    }

    fn artifact(&self, artifact: &SpooledArtifact) -> String {
        self.artifacts
            .get(artifact.reader().id())
            .cloned()
            .unwrap_or_default()
    }
}

fn text_part(text: String) -> Value {
    json!({"type": "text", "text": text})
}

fn describe(media: &Media) -> String {
    format!("{} ({})", media.filename(), media.mime_type())
}

/// The content part for `media`:
/// - an image whose source is an `http(s)` URL is sent as that URL (`image_url`), any other
///   image as a `data:` URL of its bytes;
/// - text documents (`text/*`, JSON, XML, YAML) as a `text` part holding the file name and text;
/// - WAV and MP3 audio as `input_audio`, PDF as a `file` part with a data URL;
/// - anything else as a `text` part saying what was left out and why.
///
/// Bytes that cannot be read become a `text` part naming the media and the error, so the model
/// learns that something was attached.
pub(crate) async fn media_part(media: &Media) -> Value {
    let mime = media.mime_type().to_ascii_lowercase();
    if media.kind() == MediaKind::Image
        && let Some(url) = media.source().filter(|source| is_http_url(source))
    {
        return json!({"type": "image_url", "image_url": {"url": url}});
    }
    let unreadable = |error: std::io::Error| {
        text_part(format!("[{} could not be read: {error}]", describe(media)))
    };
    let is_text = mime.starts_with("text/")
        || ["application/json", "application/xml", "application/yaml"]
            .iter()
            .any(|kind| mime.starts_with(kind));
    if is_text {
        return match media.as_bytes().await {
            Ok(bytes) => text_part(format!(
                "{}:\n{}",
                media.filename(),
                String::from_utf8_lossy(&bytes)
            )),
            Err(error) => unreadable(error),
        };
    }
    let audio_format = match mime.as_str() {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    };
    let sendable =
        media.kind() == MediaKind::Image || audio_format.is_some() || mime == "application/pdf";
    if !sendable {
        return text_part(format!(
            "[{} not sent: the chat-completions protocol takes images, WAV/MP3 audio, PDF and \
             text]",
            describe(media)
        ));
    }
    let base64 = match media.as_base64().await {
        Ok(base64) => base64,
        Err(error) => return unreadable(error),
    };
    match audio_format {
        Some(format) => {
            json!({"type": "input_audio", "input_audio": {"data": base64, "format": format}})
        }
        None if mime == "application/pdf" => json!({"type": "file", "file": {
            "filename": media.filename(),
            "file_data": format!("data:{mime};base64,{base64}"),
        }}),
        None => {
            json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{base64}")}})
        }
    }
}

fn is_http_url(source: &str) -> bool {
    reqwest::Url::parse(source).is_ok_and(|url| matches!(url.scheme(), "http" | "https"))
}

enum Entry<'a> {
    Message(&'a Message),
    ToolCall(&'a ToolCall),
}

fn conversation(
    messages: &Collection<Message>,
    tool_calls: &Collection<ToolCall>,
    contents: &Contents,
    out: &mut Vec<Value>,
) {
    // A merge, not a sort: each collection keeps its own order, and on equal times the message
    // goes first (an assistant's text comes before the calls it made in the same answer).
    let mut entries = Vec::with_capacity(messages.len() + tool_calls.len());
    let mut messages = messages.iter().peekable();
    let mut tool_calls = tool_calls.iter().peekable();
    loop {
        let take_message = match (messages.peek(), tool_calls.peek()) {
            (Some(message), Some(call)) => message.created_at() <= call.created_at(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_message {
            entries.extend(messages.next().map(Entry::Message));
        } else {
            entries.extend(tool_calls.next().map(Entry::ToolCall));
        }
    }

    let mut next_call_id = 1;
    let mut group: Vec<&ToolCall> = Vec::new();
    for entry in entries {
        match entry {
            Entry::ToolCall(call) if call.is_complete() => group.push(call),
            Entry::ToolCall(_) => {}
            Entry::Message(message) => {
                flush_group(&mut group, &mut next_call_id, contents, out);
                if let Some(content) = message_content(message, contents) {
                    out.push(json!({"role": message.role().as_str(), "content": content}));
                }
            }
        }
    }
    flush_group(&mut group, &mut next_call_id, contents, out);
}

/// A message's `content`: its text, or an array of parts when a user message has attachments
/// (assistant messages are sent as text: the protocol takes no media from the assistant).
fn message_content(message: &Message, contents: &Contents) -> Option<Value> {
    let text = message.content().map(|content| content.render());
    if message.role() == Role::Assistant || message.attachments().is_empty() {
        return text.map(Value::String);
    }
    let mut parts: Vec<Value> = text.into_iter().map(text_part).collect();
    parts.extend(
        message
            .attachments()
            .iter()
            .map(|media| contents.media(media)),
    );
    Some(Value::Array(parts))
}

fn flush_group(
    group: &mut Vec<&ToolCall>,
    next_call_id: &mut usize,
    contents: &Contents,
    out: &mut Vec<Value>,
) {
    if group.is_empty() {
        return;
    }
    let mut calls = Vec::with_capacity(group.len());
    let mut results = Vec::with_capacity(group.len());
    let mut media_parts = Vec::new();
    for call in group.drain(..) {
        let id = format!("call_{next_call_id}");
        *next_call_id += 1;
        calls.push(json!({
            "id": id,
            "type": "function",
            "function": {
                "name": call.tool(),
                "arguments": Value::Object(call.args().clone()).to_string(),
            },
        }));
        let media: &[Media] = match call.results() {
            Some(ToolCallResults::Media(media)) => std::slice::from_ref(media),
            Some(ToolCallResults::MediaList(list)) => list,
            _ => &[],
        };
        if !media.is_empty() {
            media_parts.push(text_part(format!(
                "Media returned by tool call {id} ({}):",
                call.tool()
            )));
            media_parts.extend(media.iter().map(|media| contents.media(media)));
        }
        results.push(json!({
            "role": "tool",
            "tool_call_id": id,
            "content": result_text(call, &id, contents),
        }));
    }
    let joins_previous = out
        .last()
        .is_some_and(|last| last["role"] == "assistant" && last.get("tool_calls").is_none());
    match out.last_mut() {
        Some(Value::Object(last)) if joins_previous => {
            last.insert("tool_calls".to_owned(), Value::Array(calls));
        }
        _ => out.push(json!({"role": "assistant", "content": null, "tool_calls": calls})),
    }
    out.extend(results);
    if !media_parts.is_empty() {
        out.push(json!({"role": "user", "content": media_parts}));
    }
}

fn result_text(call: &ToolCall, id: &str, contents: &Contents) -> String {
    let text = match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        Some(ToolCallResults::Artifact(artifact)) => contents.artifact(artifact),
        Some(ToolCallResults::Artifacts(list)) => list
            .iter()
            .map(|artifact| contents.artifact(artifact))
            .collect::<Vec<_>>()
            .join("\n\n"),
        Some(ToolCallResults::Media(media)) => {
            format!(
                "Returned {}; attached in the next message, after tool call {id}.",
                describe(media)
            )
        }
        Some(ToolCallResults::MediaList(list)) => format!(
            "Returned {}; attached in the next message, after tool call {id}.",
            list.iter().map(describe).collect::<Vec<_>>().join(", ")
        ),
        None => String::new(),
    };
    if call.is_error() {
        format!("Error: {text}")
    } else {
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::primitives::Timestamp;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    #[test]
    fn calls_join_the_assistant_text_before_them_and_pending_calls_are_left_out() {
        let messages = [
            Message::user("m-1", "Oslo?")
                .unwrap()
                .with_created_at(at(0)),
            Message::assistant("m-2", "Checking.")
                .unwrap()
                .with_created_at(at(1)),
            Message::assistant("m-3", "Done.")
                .unwrap()
                .with_created_at(at(5)),
        ];
        let tool_calls = [
            ToolCall::new("t-1", "forecast", json!({"city": "Oslo"}))
                .unwrap()
                .with_created_at(at(1))
                .complete("sunny"),
            ToolCall::new("t-2", "forecast", json!({"city": "Mars"}))
                .unwrap()
                .with_created_at(at(2))
                .fail("unknown city"),
            ToolCall::new("t-3", "forecast", json!({"city": "Bergen"}))
                .unwrap()
                .with_created_at(at(3)),
        ];
        let mut out = Vec::new();
        conversation(
            &messages.into_iter().collect(),
            &tool_calls.into_iter().collect(),
            &Contents::default(),
            &mut out,
        );
        let call = |id: &str, city: &str| {
            json!({"id": id, "type": "function", "function": {
                "name": "forecast", "arguments": json!({"city": city}).to_string()}})
        };
        assert_eq!(
            Value::Array(out),
            json!([
                {"role": "user", "content": "Oslo?"},
                {"role": "assistant", "content": "Checking.",
                 "tool_calls": [call("call_1", "Oslo"), call("call_2", "Mars")]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: unknown city"},
                {"role": "assistant", "content": "Done."},
            ])
        );
    }
}

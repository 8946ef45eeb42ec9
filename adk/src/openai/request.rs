//! The request side: a dispatch context mapped to a `/chat/completions` body.
//!
//! Order of `messages`: the system prompt, then each standing instruction (both as `system`
//! messages), then the conversation in the order of its [`Transcript`] — the same for a live
//! dispatch and for history loaded from storage, since both are read from the records' answer
//! links, not from when each record was written:
//! - a user message becomes a `user` message;
//! - a model answer becomes one `assistant` message with its text as `content` (`null` when it
//!   had none; several texts joined by a blank line) and its answered tool calls as
//!   `tool_calls`, followed by one `tool` message per call with its result, in the order the
//!   model made the calls. Calls without a result (an interrupted turn) are left out: the
//!   protocol requires a result for every call. An answer that had only reasoning, or only
//!   unanswered calls, sends nothing. The answers of the current turn (after the last user
//!   message) carry their reasoning when [`ReasoningReplay`](super::ReasoningReplay) says to.
//!
//! Records written without an answer link (before links existed) are grouped by creation time,
//! as described in [`crate::transcript`]: calls join the assistant text written just before them.
//! Tool-call ids follow [`ToolCallIds`](super::ToolCallIds): the provider's own when they are
//! safe to send back (the default), renumbered, or in Mistral's nine-character shape.
//!
//! Media become content parts: a user message's attachments follow its text in one `content`
//! array; a tool's media results are named in its `tool` message and sent as parts of one
//! `user` message after the group's results (the protocol takes text only in `tool` messages).
//! See [`media_part`] for which media become which part.

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::context::DispatchContext;
use crate::primitives::{Media, MediaKind, Message, Role, ToolCallResults};
use crate::transcript::{Answer, AnsweredCall, Entry, Transcript};

use crate::provider::{Contents, describe_media as describe, text_part};

use super::OpenAiConfig;
use super::ids::WireIds;

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

/// The request for this iteration of `ctx`, media read from their readers; the current turn's
/// reasoning sent in the field `reasoning` names, if any.
pub(crate) async fn chat_request(
    ctx: &DispatchContext,
    config: &OpenAiConfig,
    reasoning: Option<&str>,
) -> ChatRequest {
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
    let contents = Contents::read(&ctx.messages, &ctx.tool_calls, media_part).await;
    let mut ids = WireIds::new(config.tool_call_ids);
    conversation(
        &Transcript::of_dispatch(ctx),
        &contents,
        &mut ids,
        reasoning,
        &mut messages,
    );

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
    config.options.apply(&mut body);
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

/// The conversation as chat-completions messages, from the [`Transcript`]: a user message as
/// `user`; an answer as one `assistant` message holding its text (several texts joined by a
/// blank line) and its answered calls as `tool_calls`, then one `tool` message per call, then
/// the calls' media in one `user` message. Unanswered calls are left out; an answer left with
/// neither text nor answered calls (reasoning only) sends nothing. With `reasoning` (the field
/// to send it in), the answers after the last user message carry their reasoning: the current
/// turn's chain of thought between tool calls, not the previous turns'.
fn conversation(
    transcript: &Transcript<'_>,
    contents: &Contents,
    ids: &mut WireIds,
    reasoning: Option<&str>,
    out: &mut Vec<Value>,
) {
    let last_user = transcript
        .iter()
        .rposition(|entry| matches!(entry, Entry::User(_)));
    for (index, entry) in transcript.iter().enumerate() {
        let reasoning = reasoning.filter(|_| last_user.is_none_or(|last| index > last));
        match entry {
            Entry::User(message) => {
                if let Some(content) = message_content(message, contents) {
                    out.push(json!({"role": "user", "content": content}));
                }
            }
            Entry::Answer(answer) => answer_messages(answer, ids, reasoning, contents, out),
        }
    }
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

fn answer_messages(
    answer: &Answer<'_>,
    ids: &mut WireIds,
    reasoning: Option<&str>,
    contents: &Contents,
    out: &mut Vec<Value>,
) {
    let texts: Vec<String> = answer
        .texts()
        .filter_map(|message| message.content().map(|content| content.render()))
        .collect();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    let mut media_parts = Vec::new();
    for answered in answer.answered_calls() {
        let call = answered.call();
        let id = ids.assign(call.id());
        calls.push(json!({
            "id": id,
            "type": "function",
            "function": {
                "name": call.tool(),
                "arguments": Value::Object(call.args().clone()).to_string(),
            },
        }));
        let media: &[Media] = match answered.results() {
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
            "content": result_text(answered, &id, contents),
        }));
    }
    if texts.is_empty() && calls.is_empty() {
        return;
    }
    let content = if texts.is_empty() {
        Value::Null
    } else {
        Value::String(texts.join("\n\n"))
    };
    let mut assistant = json!({"role": "assistant", "content": content});
    if let Value::Object(fields) = &mut assistant {
        let thoughts: Vec<String> = answer
            .reasoning()
            .map(|thought| thought.content().render())
            .filter(|text| !text.is_empty())
            .collect();
        if let Some(field) = reasoning
            && !thoughts.is_empty()
        {
            fields.insert(field.to_owned(), Value::String(thoughts.join("\n\n")));
        }
        if !calls.is_empty() {
            fields.insert("tool_calls".to_owned(), Value::Array(calls));
        }
    }
    out.push(assistant);
    out.extend(results);
    if !media_parts.is_empty() {
        out.push(json!({"role": "user", "content": media_parts}));
    }
}

fn result_text(call: &AnsweredCall<'_>, id: &str, contents: &Contents) -> String {
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
    use crate::primitives::{AnswerLink, Timestamp, ToolCall};

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    fn sent(messages: &[Message], tool_calls: &[ToolCall]) -> Value {
        let mut out = Vec::new();
        conversation(
            &Transcript::new(messages, [], tool_calls),
            &Contents::default(),
            &mut WireIds::new(crate::openai::ToolCallIds::Renumber),
            None,
            &mut out,
        );
        Value::Array(out)
    }

    fn call(id: &str, city: &str) -> Value {
        json!({"id": id, "type": "function", "function": {
            "name": "forecast", "arguments": json!({"city": city}).to_string()}})
    }

    #[test]
    fn an_answer_sends_its_text_and_calls_together_then_the_results() {
        let link = |position| AnswerLink::new("a-1", position);
        // As the executor writes them: the calls while the answer streams, the text at its end.
        let messages = [
            Message::user("m-1", "Oslo?")
                .unwrap()
                .with_created_at(at(0)),
            Message::assistant("m-2", "Let me check.")
                .unwrap()
                .with_answer(link(0))
                .unwrap()
                .with_created_at(at(3)),
            Message::assistant("m-3", "Sunny.")
                .unwrap()
                .with_answer(AnswerLink::new("a-2", 0))
                .unwrap()
                .with_created_at(at(5)),
        ];
        let tool_calls = [
            ToolCall::new("t-1", "forecast", json!({"city": "Oslo"}))
                .unwrap()
                .with_answer(link(1))
                .unwrap()
                .with_created_at(at(1))
                .complete("sunny"),
            ToolCall::new("t-2", "forecast", json!({"city": "Bergen"}))
                .unwrap()
                .with_answer(link(2))
                .unwrap()
                .with_created_at(at(2)),
        ];
        assert_eq!(
            sent(&messages, &tool_calls),
            json!([
                {"role": "user", "content": "Oslo?"},
                {"role": "assistant", "content": "Let me check.",
                 "tool_calls": [call("call_1", "Oslo")]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                {"role": "assistant", "content": "Sunny."},
            ])
        );
    }

    #[test]
    fn unlinked_calls_join_the_assistant_text_before_them_and_pending_calls_are_left_out() {
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
            // Both ran after the answer was written: their results came at 4.
            ToolCall::new("t-1", "forecast", json!({"city": "Oslo"}))
                .unwrap()
                .with_created_at(at(1))
                .complete("sunny")
                .with_completed_at(Some(at(4))),
            ToolCall::new("t-2", "forecast", json!({"city": "Mars"}))
                .unwrap()
                .with_created_at(at(2))
                .fail("unknown city")
                .with_completed_at(Some(at(4))),
            ToolCall::new("t-3", "forecast", json!({"city": "Bergen"}))
                .unwrap()
                .with_created_at(at(3)),
        ];
        assert_eq!(
            sent(&messages, &tool_calls),
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

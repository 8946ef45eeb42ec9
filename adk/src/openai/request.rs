//! The request side: a dispatch context mapped to a streaming `/chat/completions` body.
//!
//! Order of `messages`: the system prompt, then each standing instruction (both as `system`
//! messages), then the conversation as it happened: the context's messages and tool calls merged
//! by creation time. Consecutive finished tool calls become one assistant message with
//! `tool_calls` (joined to the assistant text just before them, if any), each followed by its
//! `tool` result. Pending tool calls are left out: the protocol requires a result for every call.
//! Tool-call ids are renumbered per request (`call_1`, `call_2`, …): the stored ids are long and
//! made unique per turn, while the protocol only needs them to pair calls with results.

use serde_json::{Map, Value, json};

use crate::context::{Collection, DispatchContext};
use crate::primitives::{Message, Role, ToolCall, ToolCallResults};

use super::OpenAiConfig;

/// The request body for this iteration of `ctx`.
pub(crate) fn chat_request(ctx: &DispatchContext, config: &OpenAiConfig) -> Value {
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
    conversation(&ctx.messages, &ctx.tool_calls, &mut messages);

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
    body.insert("stream".to_owned(), Value::Bool(true));
    if config.include_usage {
        body.insert("stream_options".to_owned(), json!({"include_usage": true}));
    }
    for (field, value) in &config.extra_body {
        if !body.contains_key(field) {
            body.insert(field.clone(), value.clone());
        }
    }
    Value::Object(body)
}

enum Entry<'a> {
    Message(&'a Message),
    ToolCall(&'a ToolCall),
}

fn conversation(
    messages: &Collection<Message>,
    tool_calls: &Collection<ToolCall>,
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
                flush_group(&mut group, &mut next_call_id, out);
                if let Some(content) = message.content().map(|content| content.render()) {
                    let role = match message.role() {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    };
                    out.push(json!({"role": role, "content": content}));
                }
            }
        }
    }
    flush_group(&mut group, &mut next_call_id, out);
}

fn flush_group(group: &mut Vec<&ToolCall>, next_call_id: &mut usize, out: &mut Vec<Value>) {
    if group.is_empty() {
        return;
    }
    let mut calls = Vec::with_capacity(group.len());
    let mut results = Vec::with_capacity(group.len());
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
        results.push(json!({"role": "tool", "tool_call_id": id, "content": result_text(call)}));
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
}

fn result_text(call: &ToolCall) -> String {
    let text = match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        Some(other) => serde_json::to_string(other).unwrap_or_default(),
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
        conversation(&messages, &tool_calls, &mut out);
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

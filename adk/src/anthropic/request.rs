//! The request side: a dispatch context mapped to a `/v1/messages` body.
//!
//! - `system`: the system prompt, then each standing instruction, as text blocks.
//! - `messages`: the conversation in the order of its [`Transcript`], turns alternating (two
//!   turns of one role in a row are merged into one):
//!   - a user message becomes a `user` turn: its text, then its attachments as blocks (see
//!     `media_block`);
//!   - a model answer becomes one `assistant` turn holding its parts in the order the model
//!     produced them: thinking blocks (stored as [`Thought`]s with this executor's
//!     [`REPLAY_TAG`]) exactly as they came, signature included; text blocks;
//!     `tool_use` blocks for the answered calls. Then a `user` turn with one `tool_result` per
//!     call (`is_error` for a failed one; media results as image or document blocks in it).
//!     Calls without a result are left out (the protocol requires a result for every call);
//!     thoughts of other providers are left out (the API accepts only its own signed
//!     thinking); an answer left with only thinking sends nothing.
//!   - the conversation starts at its first user turn: a history window that begins inside an
//!     answer leaves that answer out, and the results at the start of the user turn whose calls
//!     it held.
//! - `tools`: the visible tools, `input_schema` their input schemas; `tool_choice`,
//!   `max_tokens`, `thinking`, `temperature`, `stop_sequences`, `metadata` from the
//!   configuration; `stream: true`.
//! - `cache_control` breakpoints as [`CachePolicy`] says.
//!
//! Tool-use ids go back as the API issued them (`toolu_…`): the stored id is
//! `{dispatch}-{iteration}-{id}`. An id that is not `[A-Za-z0-9_-]+`, or is already used in the
//! request, is sent as `toolu_adk_{n}` instead, with its result under the same id.

use std::collections::HashSet;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use crate::context::DispatchContext;
use crate::primitives::{Media, Thought, ToolCallResults};
use crate::transcript::{AnsweredCall, Call, Entry, Part, Transcript};

use super::media::{Contents, describe, media_block, text_block};
use super::{AnthropicConfig, CachePolicy, REPLAY_TAG};

/// One request as it will be sent: the body and the headers added to the configured ones.
///
/// A [request hook](super::AnthropicExecutor::with_request_hook) receives it before every
/// iteration's call and may change anything in it.
///
/// ```
/// use adk::anthropic::MessagesRequest;
///
/// fn more_room(request: &mut MessagesRequest) {
///     request.body.insert("max_tokens".to_owned(), serde_json::json!(8192));
/// }
/// # let _ = more_room;
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct MessagesRequest {
    /// The JSON body: `model`, `system`, `messages`, `tools`, `max_tokens`, `stream`…
    pub body: Map<String, Value>,
    /// Headers for this request only; they replace configured headers of the same name.
    pub headers: HeaderMap,
}

/// The request for this iteration of `ctx`, media read from their readers.
pub(crate) async fn messages_request(
    ctx: &DispatchContext,
    config: &AnthropicConfig,
) -> MessagesRequest {
    let mut system = Vec::new();
    let prompt = ctx.system_prompt().render();
    if !prompt.is_empty() {
        system.push(text_block(prompt));
    }
    for instruction in &ctx.standing_instructions {
        let text = instruction.render();
        if !text.is_empty() {
            system.push(text_block(text));
        }
    }
    let contents = Contents::read(&ctx.messages, &ctx.tool_calls, media_block).await;
    let mut messages = conversation(&Transcript::of_dispatch(ctx), &contents);
    let mut tools: Vec<Value> = ctx
        .tools
        .visible()
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name(),
                "description": tool.description(),
                "input_schema": tool.input_schema(),
            })
        })
        .collect();
    if config.cache == CachePolicy::Auto {
        place_breakpoints(&mut tools, &mut system, &mut messages);
    }

    let mut body = Map::new();
    body.insert("model".to_owned(), Value::String(config.model.clone()));
    body.insert("max_tokens".to_owned(), json!(config.max_tokens));
    if !system.is_empty() {
        body.insert("system".to_owned(), Value::Array(system));
    }
    body.insert("messages".to_owned(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert("tools".to_owned(), Value::Array(tools));
    }
    if let Some(budget) = config.thinking_budget {
        body.insert(
            "thinking".to_owned(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    body.insert("stream".to_owned(), Value::Bool(true));
    config.options.apply(&mut body);
    for (field, value) in &config.extra_body {
        if !body.contains_key(field) {
            body.insert(field.clone(), value.clone());
        }
    }
    MessagesRequest {
        body,
        headers: HeaderMap::new(),
    }
}

/// The breakpoints of [`CachePolicy::Auto`]: the last tool, the last system block, the last
/// block of the last message and of the third-last message.
fn place_breakpoints(tools: &mut [Value], system: &mut [Value], messages: &mut [Value]) {
    let mark = |block: &mut Value| {
        if let Value::Object(fields) = block {
            fields.insert("cache_control".to_owned(), json!({"type": "ephemeral"}));
        }
    };
    if let Some(tool) = tools.last_mut() {
        mark(tool);
    }
    if let Some(block) = system.last_mut() {
        mark(block);
    }
    let count = messages.len();
    for position in [count.checked_sub(1), count.checked_sub(3)]
        .into_iter()
        .flatten()
    {
        let Some(Value::Array(blocks)) = messages[position].get_mut("content") else {
            continue;
        };
        // Thinking blocks cannot carry a breakpoint.
        if let Some(block) = blocks.iter_mut().rev().find(|block| {
            !matches!(
                block.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        }) {
            mark(block);
        }
    }
}

/// The conversation as Messages API turns (see the module documentation).
pub(crate) fn conversation(transcript: &Transcript<'_>, contents: &Contents) -> Vec<Value> {
    let mut turns = Vec::new();
    let mut ids = WireIds::default();
    for entry in transcript.iter() {
        match entry {
            Entry::User(message) => {
                let mut blocks = Vec::new();
                if let Some(text) = message
                    .content()
                    .map(|content| content.render())
                    .filter(|text| !text.is_empty())
                {
                    blocks.push(text_block(text));
                }
                blocks.extend(
                    message
                        .attachments()
                        .iter()
                        .map(|media| contents.media(media)),
                );
                push_turn(&mut turns, "user", blocks);
            }
            Entry::Answer(answer) => {
                let mut blocks = Vec::new();
                let mut results = Vec::new();
                for part in answer.parts() {
                    match part {
                        Part::Reasoning(thought) => blocks.extend(thinking_block(thought)),
                        Part::Text(message) => {
                            if let Some(text) = message
                                .content()
                                .map(|content| content.render())
                                .filter(|text| !text.is_empty())
                            {
                                blocks.push(text_block(text));
                            }
                        }
                        Part::Call(Call::Answered(answered)) => {
                            let call = answered.call();
                            let id = ids.assign(call.id());
                            blocks.push(json!({
                                "type": "tool_use",
                                "id": id,
                                "name": call.tool(),
                                "input": Value::Object(call.args().clone()),
                            }));
                            results.push(tool_result(answered, &id, contents));
                        }
                        Part::Call(Call::Unanswered(_)) => {}
                    }
                }
                let only_thinking = blocks.iter().all(|block| {
                    matches!(
                        block.get("type").and_then(Value::as_str),
                        Some("thinking" | "redacted_thinking")
                    )
                });
                if only_thinking {
                    continue;
                }
                push_turn(&mut turns, "assistant", blocks);
                push_turn(&mut turns, "user", results);
            }
        }
    }
    start_at_a_user_turn(&mut turns);
    turns
}

/// The API takes a conversation that starts with a user turn, and a `tool_result` only right
/// after the `tool_use` it answers. A history window can start inside an answer: the turns
/// before the first user turn are left out, and so are the results at its start, whose calls
/// were cut off with them.
fn start_at_a_user_turn(turns: &mut Vec<Value>) {
    let mut dropped = 0;
    for turn in turns.iter_mut() {
        if turn.get("role").and_then(Value::as_str) == Some("user")
            && let Some(Value::Array(blocks)) = turn.get_mut("content")
        {
            blocks.retain(|block| block.get("type").and_then(Value::as_str) != Some("tool_result"));
            if !blocks.is_empty() {
                break;
            }
        }
        dropped += 1;
    }
    turns.drain(..dropped);
}

/// Appends a turn, merged into the last one when it has the same role.
fn push_turn(turns: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = turns.last_mut()
        && last.get("role").and_then(Value::as_str) == Some(role)
        && let Some(Value::Array(content)) = last.get_mut("content")
    {
        content.extend(blocks);
        return;
    }
    turns.push(json!({"role": role, "content": blocks}));
}

/// The block a stored thought goes back as: its payload, unchanged, when this executor stored
/// it; nothing otherwise.
fn thinking_block(thought: &Thought) -> Option<Value> {
    if thought.replay_compatibility() != Some(REPLAY_TAG) {
        return None;
    }
    let payload = thought.payload()?;
    matches!(
        payload.get("type").and_then(Value::as_str),
        Some("thinking" | "redacted_thinking")
    )
    .then(|| payload.clone())
}

fn tool_result(call: &AnsweredCall<'_>, id: &str, contents: &Contents) -> Value {
    let mut blocks = Vec::new();
    let media: &[Media] = match call.results() {
        Some(ToolCallResults::Text(text)) => {
            blocks.push(text_block(text.render()));
            &[]
        }
        Some(ToolCallResults::Artifact(artifact)) => {
            blocks.push(text_block(contents.artifact(artifact)));
            &[]
        }
        Some(ToolCallResults::Artifacts(list)) => {
            blocks.extend(
                list.iter()
                    .map(|artifact| text_block(contents.artifact(artifact))),
            );
            &[]
        }
        Some(ToolCallResults::Media(media)) => std::slice::from_ref(media),
        Some(ToolCallResults::MediaList(list)) => list,
        None => &[],
    };
    for medium in media {
        blocks.push(text_block(format!("Returned {}:", describe(medium))));
        blocks.push(contents.media(medium));
    }
    // The API refuses empty text blocks.
    blocks.retain(|block| block.get("text").and_then(Value::as_str) != Some(""));
    let mut result = json!({"type": "tool_result", "tool_use_id": id});
    if let Value::Object(fields) = &mut result {
        if !blocks.is_empty() {
            fields.insert("content".to_owned(), Value::Array(blocks));
        }
        if call.is_error() {
            fields.insert("is_error".to_owned(), Value::Bool(true));
        }
    }
    result
}

/// The tool-use ids of one request, assigned in the order its calls are written.
#[derive(Debug, Default)]
struct WireIds {
    used: HashSet<String>,
    next: usize,
}

impl WireIds {
    fn assign(&mut self, stored: &str) -> String {
        let issued = issued_id(stored);
        let safe = !issued.is_empty()
            && issued
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
        let id = if safe && !self.used.contains(issued) {
            issued.to_owned()
        } else {
            loop {
                self.next += 1;
                let id = format!("toolu_adk_{}", self.next);
                if !self.used.contains(&id) {
                    break id;
                }
            }
        };
        self.used.insert(id.clone());
        id
    }
}

/// The id the API issued inside a stored id (`{turn}/dispatch-{iteration}-{id}`), or the stored
/// id itself when it has another shape.
fn issued_id(stored: &str) -> &str {
    let Some((_, tail)) = stored.rsplit_once("/dispatch-") else {
        return stored;
    };
    match tail.split_once('-') {
        Some((iteration, id))
            if !iteration.is_empty() && iteration.bytes().all(|byte| byte.is_ascii_digit()) =>
        {
            id
        }
        _ => stored,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::primitives::{AnswerLink, Message, Timestamp, ToolCall};

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).unwrap()
    }

    #[test]
    fn an_answer_keeps_its_block_order_and_results_follow_in_one_user_turn() {
        let link = |position| AnswerLink::new("a-1", position);
        let thinking = json!({"type": "thinking", "thinking": "Two cities.", "signature": "sig=="});
        let thought = Thought::new("th", "Two cities.")
            .unwrap()
            .with_payload(thinking.clone(), REPLAY_TAG)
            .unwrap()
            .with_answer(link(0))
            .unwrap()
            .with_created_at(at(1));
        let foreign = Thought::new("th-2", "from another model")
            .unwrap()
            .with_answer(link(1))
            .unwrap()
            .with_created_at(at(1));
        let messages = [
            Message::user("m-1", "Oslo and Mars?")
                .unwrap()
                .with_created_at(at(0)),
            Message::assistant("m-2", "Checking both.")
                .unwrap()
                .with_answer(link(2))
                .unwrap()
                .with_created_at(at(4)),
        ];
        let calls = [
            ToolCall::new("t/dispatch-0-toolu_A", "weather", json!({"city": "Oslo"}))
                .unwrap()
                .with_answer(link(3))
                .unwrap()
                .with_created_at(at(2))
                .complete("sunny"),
            ToolCall::new("t/dispatch-0-toolu A", "weather", json!({"city": "Mars"}))
                .unwrap()
                .with_answer(link(4))
                .unwrap()
                .with_created_at(at(3))
                .fail("unknown city"),
            ToolCall::new("t/dispatch-0-toolu_C", "weather", json!({"city": "Bergen"}))
                .unwrap()
                .with_answer(link(5))
                .unwrap()
                .with_created_at(at(3)),
        ];
        let turns = conversation(
            &Transcript::new(&messages, [&thought, &foreign], &calls),
            &Contents::default(),
        );
        assert_eq!(
            Value::Array(turns),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Oslo and Mars?"}]},
                {"role": "assistant", "content": [
                    thinking,
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "toolu_A", "name": "weather", "input": {"city": "Oslo"}},
                    {"type": "tool_use", "id": "toolu_adk_1", "name": "weather", "input": {"city": "Mars"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_A",
                     "content": [{"type": "text", "text": "sunny"}]},
                    {"type": "tool_result", "tool_use_id": "toolu_adk_1", "is_error": true,
                     "content": [{"type": "text", "text": "unknown city"}]},
                ]},
            ])
        );
    }

    #[test]
    fn a_history_window_starting_inside_an_answer_is_sent_from_the_first_user_turn() {
        let link = |position| AnswerLink::new("a-0", position);
        let messages = [
            Message::assistant("m-0", "Checking.")
                .unwrap()
                .with_answer(link(0))
                .unwrap()
                .with_created_at(at(0)),
            Message::user("m-1", "And Bergen?")
                .unwrap()
                .with_created_at(at(3)),
        ];
        let calls = [
            ToolCall::new("t/dispatch-0-toolu_A", "weather", json!({"city": "Oslo"}))
                .unwrap()
                .with_answer(link(1))
                .unwrap()
                .with_created_at(at(1))
                .complete("sunny"),
        ];
        let turns = conversation(
            &Transcript::new(&messages, [], &calls),
            &Contents::default(),
        );
        assert_eq!(
            Value::Array(turns),
            json!([{"role": "user", "content": [{"type": "text", "text": "And Bergen?"}]}])
        );
    }

    #[test]
    fn auto_breakpoints_go_on_tools_system_and_the_last_and_third_last_turns() {
        let mut tools = vec![json!({"name": "a"}), json!({"name": "b"})];
        let mut system = vec![text_block("You are terse.".into())];
        let mut messages = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "q"}]}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "x"},
                {"type": "thinking", "thinking": "t", "signature": "s"}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}),
        ];
        place_breakpoints(&mut tools, &mut system, &mut messages);
        let marked = json!({"type": "ephemeral"});
        assert_eq!(tools[1]["cache_control"], marked);
        assert!(tools[0].get("cache_control").is_none());
        assert_eq!(system[0]["cache_control"], marked);
        assert_eq!(messages[2]["content"][0]["cache_control"], marked);
        assert_eq!(messages[0]["content"][0]["cache_control"], marked);
        assert!(messages[1]["content"][1].get("cache_control").is_none());
    }
}

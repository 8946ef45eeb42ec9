//! The session events a completed turn appends (Google ADK's events): the user's message, each
//! model answer, each tool call and its result, the turn's state delta on the last of them.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use crate::context::TurnContext;
use crate::primitives::{Message, ToolCall, ToolCallResults};
use crate::state::{
    EventContent, EventPart, Scope, SessionEvent, StateChange, StateWrite, TurnCommit,
};

/// The events of the turn `ctx` completed, oldest first. `answers` are the assistant messages
/// the turn added (the dispatch's, or the reply a `turn_input` middleware completed with);
/// `author` names the agent. The commit's state delta rides on the last event, or on an event
/// of its own when the turn produced none.
pub(super) fn turn_events(
    ctx: &TurnContext,
    answers: &[&Message],
    author: &str,
    commit: &TurnCommit,
) -> Vec<SessionEvent> {
    let turn = ctx.turn_id().to_string();
    let event = |author: &str, at: Timestamp, content: EventContent| {
        SessionEvent::new(turn.clone(), author, at).with_content(content)
    };
    let mut events = Vec::new();
    if let Some(message) = ctx.user_message() {
        events.push(event(
            "user",
            message.created_at(),
            EventContent::user_text(text_of(message)),
        ));
    }
    // The turn's answers, calls and results in the order they happened; at one instant a text
    // comes before the call it announces, and a call before its result.
    let mut later: Vec<(Timestamp, u8, SessionEvent)> = Vec::new();
    for message in answers {
        later.push((
            message.created_at(),
            0,
            event(
                author,
                message.created_at(),
                EventContent::model_text(text_of(message)),
            ),
        ));
    }
    for call in ctx.tool_calls_this_turn() {
        let content = EventContent {
            role: "model".to_owned(),
            parts: vec![EventPart::FunctionCall {
                id: Some(call.id().to_owned()),
                name: call.tool().to_owned(),
                args: call.args().clone(),
            }],
        };
        later.push((
            call.created_at(),
            1,
            event(author, call.created_at(), content),
        ));
        if let Some(results) = call.results() {
            let at = call.completed_at().unwrap_or_else(|| call.updated_at());
            let content = EventContent {
                role: "user".to_owned(),
                parts: vec![EventPart::FunctionResponse {
                    id: Some(call.id().to_owned()),
                    name: call.tool().to_owned(),
                    response: response_of(call, results),
                }],
            };
            later.push((at, 2, event(author, at, content)));
        }
    }
    later.sort_by_key(|(at, rank, _)| (*at, *rank));
    events.extend(later.into_iter().map(|(_, _, event)| event));
    let delta = state_delta(commit);
    if !delta.is_empty() {
        match events.last_mut() {
            Some(last) => last.state_delta = delta,
            None => {
                let mut carrier = SessionEvent::new(turn, author, Timestamp::now());
                carrier.state_delta = delta;
                events.push(carrier);
            }
        }
    }
    strictly_increasing_micros(&mut events);
    events
}

fn text_of(message: &Message) -> String {
    message
        .content()
        .map(|content| content.render())
        .unwrap_or_default()
}

/// A tool's result as Google ADK's function response: `{"result": ...}`, or `{"error": ...}`
/// for a failed call; text as a string, artifacts and media as their JSON.
fn response_of(call: &ToolCall, results: &ToolCallResults) -> Map<String, Value> {
    let value = match results {
        ToolCallResults::Text(text) => Value::String(text.render()),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    };
    let field = if call.is_error() { "error" } else { "result" };
    let mut response = Map::new();
    response.insert(field.to_owned(), value);
    response
}

/// The commit's state writes as one delta of prefixed keys; a deletion is recorded as `null`.
fn state_delta(commit: &TurnCommit) -> Map<String, Value> {
    let mut delta = Map::new();
    for (scope, writes) in [
        (Scope::Session, &commit.session),
        (Scope::User, &commit.user),
        (Scope::App, &commit.app),
    ] {
        for StateWrite { name, change, .. } in writes {
            let value = match change {
                StateChange::Set(value) => value.clone(),
                // The value the turn saw: the store applies the merge to the value it holds.
                StateChange::Merge(merge) => merge.preview().clone(),
                StateChange::Delete => json!(null),
            };
            delta.insert(scope.key(name), value);
        }
    }
    delta
}

/// Microsecond timestamps (what every store keeps), each after the one before, so the events
/// read back equal and in this order from any store.
fn strictly_increasing_micros(events: &mut [SessionEvent]) {
    let mut previous: Option<Timestamp> = None;
    for event in events {
        let mut at = Timestamp::from_microsecond(event.timestamp.as_microsecond())
            .unwrap_or(event.timestamp);
        if let Some(previous) = previous
            && at <= previous
        {
            at = previous + SignedDuration::from_micros(1);
        }
        event.timestamp = at;
        previous = Some(at);
    }
}

//! [`SessionEvent`]: what happened in a session, turn by turn, as Google ADK's session events
//! (the user's message, each model answer, each tool call and result, with the state delta each
//! carried), and [`GetSessionConfig`], the window a read asks for.

use jiff::Timestamp;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use super::SessionStoreError;

/// One event of a session: Google ADK's `Event`, reduced to what adk records. A turn appends
/// its events in the same atomic commit as its state delta.
///
/// ```
/// use adk::state::{EventContent, EventPart, SessionEvent};
///
/// let event = SessionEvent::new("turn-1", "user", jiff::Timestamp::UNIX_EPOCH)
///     .with_content(EventContent::user_text("hello"));
/// assert_eq!(event.text(), "hello");
/// assert!(event.state_delta.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SessionEvent {
    /// The event's id, unique within its session.
    pub id: String,
    /// The turn (Google ADK: invocation) that appended it.
    pub invocation_id: String,
    /// Who produced it: `"user"` for the user's message, otherwise the agent (adk: the app).
    pub author: String,
    /// When it happened.
    pub timestamp: Timestamp,
    /// What was said or done; `None` for an event that only carries state.
    pub content: Option<EventContent>,
    /// The state delta the event carried, keys with their scope prefixes (never `temp:`). A
    /// deleted key is recorded as JSON `null`, as newer Google ADK writes its tombstones.
    pub state_delta: Map<String, Value>,
}

/// An event's content: Google GenAI's `Content`, a role and its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct EventContent {
    /// `"user"` or `"model"` (a tool result is `"user"`, as Google ADK writes it).
    pub role: String,
    /// The parts, in order.
    pub parts: Vec<EventPart>,
}

/// One part of an event's content.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum EventPart {
    /// Text.
    Text(String),
    /// The model calling a tool.
    FunctionCall {
        /// The call's id.
        id: Option<String>,
        /// The tool.
        name: String,
        /// Its arguments.
        args: Map<String, Value>,
    },
    /// A tool's result.
    FunctionResponse {
        /// The id of the call it answers.
        id: Option<String>,
        /// The tool.
        name: String,
        /// The result (adk writes `{"result": ...}`, or `{"error": ...}` for a failed call).
        response: Map<String, Value>,
    },
    /// A part adk does not model (inline data, code execution, …), kept as Google ADK wrote it.
    Other(Value),
}

impl EventContent {
    /// A user message of one text part.
    #[must_use]
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: "user".to_owned(),
            parts: vec![EventPart::Text(text.into())],
        }
    }

    /// A model answer of one text part.
    #[must_use]
    pub fn model_text(text: impl Into<String>) -> Self {
        Self {
            role: "model".to_owned(),
            parts: vec![EventPart::Text(text.into())],
        }
    }
}

impl SessionEvent {
    /// An event of turn `invocation_id` by `author` at `timestamp`, with a fresh id, no content
    /// and no state delta.
    #[must_use]
    pub fn new(
        invocation_id: impl Into<String>,
        author: impl Into<String>,
        timestamp: Timestamp,
    ) -> Self {
        Self {
            id: crate::ids::time_ordered_string(),
            invocation_id: invocation_id.into(),
            author: author.into(),
            timestamp,
            content: None,
            state_delta: Map::new(),
        }
    }

    /// This event with `content`.
    #[must_use]
    pub fn with_content(mut self, content: EventContent) -> Self {
        self.content = Some(content);
        self
    }

    /// The text of its text parts, joined.
    #[must_use]
    pub fn text(&self) -> String {
        self.content
            .iter()
            .flat_map(|content| &content.parts)
            .filter_map(|part| match part {
                EventPart::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The event as Google ADK stores it in `events.event_data`
    /// (`Event.model_dump(exclude_none=True, mode="json")`). For store implementations.
    #[must_use]
    pub fn to_adk_json(&self) -> Value {
        // Serializing into a `Value` fails only for a map key that is not a string, and every
        // key here is one.
        serde_json::to_value(self.adk_json()).unwrap_or(Value::Null)
    }

    /// [`to_adk_json`](Self::to_adk_json) as a view that serializes itself, for a store that
    /// writes the event's text without building a `Value` first (the JSON is the same).
    pub(crate) fn adk_json(&self) -> AdkEventJson<'_> {
        AdkEventJson(self)
    }

    /// Reads an event Google ADK (or adk) stored: `event_data`, with the row's id, invocation
    /// id and timestamp taking precedence over the payload's, as google-adk reads them. For
    /// store implementations.
    ///
    /// # Errors
    ///
    /// [`SessionStoreError::InvalidData`] when `data` is not an event.
    pub fn from_adk_json(
        data: &Value,
        id: &str,
        invocation_id: &str,
        row_timestamp: Timestamp,
    ) -> Result<Self, SessionStoreError> {
        let invalid = |what: &str| {
            SessionStoreError::InvalidData(format!("event `{id}`: {what} in `{data}`"))
        };
        let object = data
            .as_object()
            .ok_or_else(|| invalid("not a JSON object"))?;
        let timestamp = match object.get("timestamp") {
            Some(Value::Number(seconds)) => from_epoch_seconds(
                seconds
                    .as_f64()
                    .ok_or_else(|| invalid("a timestamp out of range"))?,
            )
            .ok_or_else(|| invalid("a timestamp out of range"))?,
            None | Some(Value::Null) => row_timestamp,
            Some(_) => return Err(invalid("a timestamp that is not a number")),
        };
        let content = match object.get("content") {
            None | Some(Value::Null) => None,
            Some(content) => {
                let role = content
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                let parts = match content.get("parts") {
                    Some(Value::Array(parts)) => parts.iter().map(part_from_json).collect(),
                    None | Some(Value::Null) => Vec::new(),
                    Some(_) => return Err(invalid("content parts that are not a list")),
                };
                Some(EventContent { role, parts })
            }
        };
        let state_delta = match object
            .get("actions")
            .and_then(|actions| actions.get("state_delta"))
        {
            Some(Value::Object(delta)) => delta.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(invalid("a state delta that is not an object")),
        };
        Ok(Self {
            id: id.to_owned(),
            invocation_id: invocation_id.to_owned(),
            author: object
                .get("author")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            timestamp,
            content,
            state_delta,
        })
    }
}

/// An event as Google ADK stores it (`SessionEvent::to_adk_json`), serialized field by field
/// from the event itself: keys in the order `model_dump` writes them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdkEventJson<'a>(&'a SessionEvent);

impl Serialize for AdkEventJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let event = self.0;
        let mut map = serializer.serialize_map(None)?;
        if let Some(content) = &event.content {
            map.serialize_entry("content", &ContentJson(content))?;
        }
        map.serialize_entry("invocation_id", &event.invocation_id)?;
        map.serialize_entry("author", &event.author)?;
        map.serialize_entry("actions", &ActionsJson(&event.state_delta))?;
        map.serialize_entry("id", &event.id)?;
        map.serialize_entry("timestamp", &epoch_seconds(event.timestamp))?;
        map.end()
    }
}

/// `{"parts": [..], "role": ..}`.
struct ContentJson<'a>(&'a EventContent);

impl Serialize for ContentJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("parts", &PartsJson(&self.0.parts))?;
        map.serialize_entry("role", &self.0.role)?;
        map.end()
    }
}

struct PartsJson<'a>(&'a [EventPart]);

impl Serialize for PartsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut parts = serializer.serialize_seq(Some(self.0.len()))?;
        for part in self.0 {
            parts.serialize_element(&PartJson(part))?;
        }
        parts.end()
    }
}

/// A part as Google GenAI's `Part` dumps it: `{"text": ..}`, `{"function_call": {..}}`,
/// `{"function_response": {..}}`, or what another part held.
struct PartJson<'a>(&'a EventPart);

impl Serialize for PartJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            EventPart::Text(text) => one_entry(serializer, "text", text),
            EventPart::FunctionCall { id, name, args } => {
                let body = CallBody::Args(args);
                one_entry(serializer, "function_call", &CallJson { id, name, body })
            }
            EventPart::FunctionResponse { id, name, response } => {
                let body = CallBody::Response(response);
                one_entry(
                    serializer,
                    "function_response",
                    &CallJson { id, name, body },
                )
            }
            EventPart::Other(value) => value.serialize(serializer),
        }
    }
}

/// `{key: value}`.
fn one_entry<S: Serializer, V: Serialize + ?Sized>(
    serializer: S,
    key: &str,
    value: &V,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(key, value)?;
    map.end()
}

/// A function call's or response's object: its id when it has one, its name, and its
/// arguments (written before the name) or its response (after it), as `model_dump` orders them.
struct CallJson<'a> {
    id: &'a Option<String>,
    name: &'a str,
    body: CallBody<'a>,
}

enum CallBody<'a> {
    Args(&'a Map<String, Value>),
    Response(&'a Map<String, Value>),
}

impl Serialize for CallJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(id) = self.id {
            map.serialize_entry("id", id)?;
        }
        match self.body {
            CallBody::Args(args) => {
                map.serialize_entry("args", args)?;
                map.serialize_entry("name", self.name)?;
            }
            CallBody::Response(response) => {
                map.serialize_entry("name", self.name)?;
                map.serialize_entry("response", response)?;
            }
        }
        map.end()
    }
}

/// `{"state_delta": .., "artifact_delta": {}, "requested_auth_configs": {},
/// "requested_tool_confirmations": {}}`.
struct ActionsJson<'a>(&'a Map<String, Value>);

impl Serialize for ActionsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let empty = Map::new();
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("state_delta", self.0)?;
        map.serialize_entry("artifact_delta", &empty)?;
        map.serialize_entry("requested_auth_configs", &empty)?;
        map.serialize_entry("requested_tool_confirmations", &empty)?;
        map.end()
    }
}

fn part_from_json(part: &Value) -> EventPart {
    let field = |name: &str| part.get(name).filter(|value| !value.is_null());
    let id = |call: &Value| call.get("id").and_then(Value::as_str).map(str::to_owned);
    let name = |call: &Value| {
        call.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let object = |value: Option<&Value>| value.and_then(Value::as_object).cloned();
    if let Some(Value::String(text)) = field("text")
        && field("thought").is_none()
    {
        return EventPart::Text(text.clone());
    }
    if let Some(call) = field("function_call")
        && let Some(args) = object(call.get("args")).or_else(|| Some(Map::new()))
    {
        return EventPart::FunctionCall {
            id: id(call),
            name: name(call),
            args,
        };
    }
    if let Some(call) = field("function_response")
        && let Some(response) = object(call.get("response")).or_else(|| Some(Map::new()))
    {
        return EventPart::FunctionResponse {
            id: id(call),
            name: name(call),
            response,
        };
    }
    EventPart::Other(part.clone())
}

/// Seconds since the epoch as a float, Google ADK's `Event.timestamp`.
#[must_use]
pub(crate) fn epoch_seconds(time: Timestamp) -> f64 {
    // Microseconds, so the float carries no sub-microsecond noise a TEXT column would drop.
    time.as_microsecond() as f64 / 1_000_000.0
}

/// The instant of a float epoch, rounded to the microsecond; `None` out of range.
#[must_use]
pub(crate) fn from_epoch_seconds(seconds: f64) -> Option<Timestamp> {
    if !seconds.is_finite() {
        return None;
    }
    let micros = (seconds * 1_000_000.0).round();
    if micros.abs() > i64::MAX as f64 {
        return None;
    }
    Timestamp::from_microsecond(micros as i64).ok()
}

/// Which events a read returns (Google ADK's `GetSessionConfig`): all of them by default; with
/// `after_timestamp`, those at or after it; with `num_recent_events`, only the last that many
/// of those (0: none). Events come oldest first.
///
/// ```
/// use adk::state::GetSessionConfig;
///
/// let window = GetSessionConfig::recent(3);
/// assert_eq!(window.num_recent_events, Some(3));
/// assert_eq!(window.after_timestamp, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetSessionConfig {
    /// At most this many events, the most recent.
    pub num_recent_events: Option<usize>,
    /// Only events at or after this instant.
    pub after_timestamp: Option<Timestamp>,
}

impl GetSessionConfig {
    /// The `count` most recent events.
    #[must_use]
    pub fn recent(count: usize) -> Self {
        Self {
            num_recent_events: Some(count),
            after_timestamp: None,
        }
    }

    /// The events at or after `time`.
    #[must_use]
    pub fn after(time: Timestamp) -> Self {
        Self {
            num_recent_events: None,
            after_timestamp: Some(time),
        }
    }

    /// Applies the window to `events` (oldest first): the events at or after
    /// `after_timestamp`, then the last `num_recent_events` of them. For store implementations
    /// that keep events in memory.
    #[must_use]
    pub fn select(&self, events: &[SessionEvent]) -> Vec<SessionEvent> {
        let after: Vec<&SessionEvent> = events
            .iter()
            .filter(|event| {
                self.after_timestamp
                    .is_none_or(|after| event.timestamp >= after)
            })
            .collect();
        let skip = self
            .num_recent_events
            .map_or(0, |count| after.len().saturating_sub(count));
        after.into_iter().skip(skip).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rich_event() -> SessionEvent {
        let object = |value: Value| match value {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let mut event = SessionEvent::new(
            "turn-7",
            "agent",
            Timestamp::from_microsecond(1_700_000_000_123_456).expect("in range"),
        )
        .with_content(EventContent {
            role: "model".to_owned(),
            parts: vec![
                EventPart::Text("looking it up".to_owned()),
                EventPart::FunctionCall {
                    id: Some("call-1".to_owned()),
                    name: "lookup".to_owned(),
                    args: object(json!({"q": "tea", "n": 2})),
                },
                EventPart::FunctionCall {
                    id: None,
                    name: "noop".to_owned(),
                    args: Map::new(),
                },
                EventPart::FunctionResponse {
                    id: Some("call-1".to_owned()),
                    name: "lookup".to_owned(),
                    response: object(json!({"result": [1, 2.5, null]})),
                },
                EventPart::FunctionResponse {
                    id: None,
                    name: "noop".to_owned(),
                    response: object(json!({"error": "no"})),
                },
                EventPart::Other(
                    json!({"inline_data": {"mime_type": "image/png", "data": "AA=="}}),
                ),
            ],
        });
        event.id = "event-1".to_owned();
        event.state_delta = object(json!({"step": 2, "user:name": "ada", "app:gone": null}));
        event
    }

    // What `to_adk_json` wrote when it built the `Value` field by field (google-adk's
    // `model_dump` order), kept byte for byte now that it serializes a view of the event.
    const RICH_EVENT: &str = concat!(
        r#"{"content":{"parts":[{"text":"looking it up"},"#,
        r#"{"function_call":{"id":"call-1","args":{"q":"tea","n":2},"name":"lookup"}},"#,
        r#"{"function_call":{"args":{},"name":"noop"}},"#,
        r#"{"function_response":{"id":"call-1","name":"lookup","response":{"result":[1,2.5,null]}}},"#,
        r#"{"function_response":{"name":"noop","response":{"error":"no"}}},"#,
        r#"{"inline_data":{"mime_type":"image/png","data":"AA=="}}],"role":"model"},"#,
        r#""invocation_id":"turn-7","author":"agent","#,
        r#""actions":{"state_delta":{"step":2,"user:name":"ada","app:gone":null},"#,
        r#""artifact_delta":{},"requested_auth_configs":{},"requested_tool_confirmations":{}},"#,
        r#""id":"event-1","timestamp":1700000000.123456}"#
    );

    #[test]
    fn an_event_serialized_from_its_view_is_the_json_to_adk_json_builds() {
        let event = rich_event();
        assert_eq!(
            serde_json::to_string(&event.adk_json()).expect("serializes"),
            RICH_EVENT
        );
        assert_eq!(
            serde_json::to_string(&event.to_adk_json()).expect("serializes"),
            RICH_EVENT
        );
    }
}

//! [`ToolCall`]: the record of one tool invocation and what it produced.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::answer_link::check_link;
use super::error::{Checker, StoredTimestamp};
use super::{
    AnswerLink, Media, PrimitiveError, PrimitiveKind, SpooledArtifact, Timestamp, Tokenizable,
};

/// What a tool call produced. Lists are homogeneous by construction and must not be empty.
///
/// Serializes as `{"type": "text" | "artifact" | "artifacts" | "media" | "media_list",
/// "value": ..}`; artifacts and media serialize as handles / metadata (see
/// [`SpooledArtifact`] and [`Media`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolCallResults {
    /// Text.
    Text(Tokenizable),
    /// One spooled artifact.
    Artifact(SpooledArtifact),
    /// Several spooled artifacts (at least one).
    Artifacts(Vec<SpooledArtifact>),
    /// One media.
    Media(Media),
    /// Several media (at least one).
    MediaList(Vec<Media>),
}

impl From<&str> for ToolCallResults {
    fn from(text: &str) -> Self {
        Self::Text(Tokenizable::new(text))
    }
}

impl From<String> for ToolCallResults {
    fn from(text: String) -> Self {
        Self::Text(Tokenizable::new(text))
    }
}

impl From<Tokenizable> for ToolCallResults {
    fn from(text: Tokenizable) -> Self {
        Self::Text(text)
    }
}

impl From<SpooledArtifact> for ToolCallResults {
    fn from(artifact: SpooledArtifact) -> Self {
        Self::Artifact(artifact)
    }
}

impl From<Media> for ToolCallResults {
    fn from(media: Media) -> Self {
        Self::Media(media)
    }
}

/// The record of one tool invocation: which tool, with what arguments, and what came back.
///
/// Rules: id, tool name and checksum non-empty; arguments are a JSON object (stored data may
/// hold them as a JSON string of an object); result lists non-empty. A call starts pending
/// (no results, no completion time) and is finished with [`complete`](Self::complete) or
/// [`fail`](Self::fail). Unlike the TypeScript original, `results` and `completed_at` are
/// optional so a pending call needs no placeholder. `inline` defaults to `false`. A call a model
/// made carries an [`AnswerLink`] (non-empty answer id) to the answer that made it; serialization
/// omits `answer` when unlinked.
///
/// The default checksum is [`tool_call_checksum`]: SHA-256 of the canonical JSON of the tool
/// name and arguments, so identical calls share it whatever order the arguments came in.
///
/// ```
/// use adk::primitives::ToolCall;
/// use serde_json::json;
///
/// let pending = ToolCall::new("call-1", "weather", json!({"city": "Oslo"}))?;
/// assert!(!pending.is_complete());
/// let done = pending.complete("4°C, light snow");
/// assert!(done.is_complete() && !done.is_error());
/// assert!(done.completed_at().is_some());
///
/// assert!(ToolCall::new("call-2", "", json!({})).is_err());
/// assert!(ToolCall::new("call-3", "weather", json!([1, 2])).is_err());
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "ToolCallFields")]
pub struct ToolCall {
    id: String,
    tool: String,
    args: Map<String, Value>,
    checksum: String,
    is_complete: bool,
    is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    results: Option<ToolCallResults>,
    from_artifact_tool: bool,
    inline: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<AnswerLink>,
    created_at: Timestamp,
    updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<Timestamp>,
}

impl ToolCall {
    /// A pending call of `tool` with `args` (a JSON object, or a string holding one).
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        args: Value,
    ) -> Result<Self, PrimitiveError> {
        let id = id.into();
        let tool = tool.into();
        let args = object_arguments(&Checker::new(PrimitiveKind::ToolCall, &id), args)?;
        let checksum = default_checksum(&tool, &args);
        let now = Timestamp::now();
        Self {
            id,
            tool,
            args,
            checksum,
            is_complete: false,
            is_error: false,
            results: None,
            from_artifact_tool: false,
            inline: false,
            answer: None,
            created_at: now,
            updated_at: now,
            completed_at: None,
        }
        .validate()
    }

    /// The same call, finished successfully with `results`, completed and updated now.
    pub fn complete(self, results: impl Into<ToolCallResults>) -> Self {
        self.finish(results.into(), false)
    }

    /// The same call, finished with an error described by `results`.
    pub fn fail(self, results: impl Into<ToolCallResults>) -> Self {
        self.finish(results.into(), true)
    }

    fn finish(mut self, results: ToolCallResults, is_error: bool) -> Self {
        let now = Timestamp::now();
        self.results = Some(results);
        self.is_complete = true;
        self.is_error = is_error;
        self.completed_at = Some(now);
        self.updated_at = now;
        self
    }

    /// The same call with `results` (checked: lists must not be empty).
    pub fn with_results(mut self, results: ToolCallResults) -> Result<Self, PrimitiveError> {
        self.results = Some(results);
        self.validate()
    }

    /// The same call with another checksum.
    pub fn with_checksum(mut self, checksum: impl Into<String>) -> Result<Self, PrimitiveError> {
        self.checksum = checksum.into();
        self.validate()
    }

    /// The same call, marked as made through an artifact tool.
    pub fn with_from_artifact_tool(mut self, from_artifact_tool: bool) -> Self {
        self.from_artifact_tool = from_artifact_tool;
        self
    }

    /// The same call, with its results kept inline (`true`) or spoolable (`false`).
    pub fn with_inline(mut self, inline: bool) -> Self {
        self.inline = inline;
        self
    }

    /// The same call as part `link` of the model answer that made it (see [`AnswerLink`]);
    /// refused for an empty answer id. Finishing the call keeps the link.
    ///
    /// ```
    /// use adk::primitives::{AnswerLink, ToolCall};
    /// let call = ToolCall::new("c-1", "weather", serde_json::json!({}))?
    ///     .with_answer(AnswerLink::new("a-1", 1))?
    ///     .complete("sunny");
    /// assert_eq!(call.answer().map(AnswerLink::answer_id), Some("a-1"));
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn with_answer(mut self, link: AnswerLink) -> Result<Self, PrimitiveError> {
        self.answer = Some(link);
        self.validate()
    }

    /// The answer that made this call, when it was written with a link.
    pub fn answer(&self) -> Option<&AnswerLink> {
        self.answer.as_ref()
    }

    /// The same call with another creation time.
    pub fn with_created_at(mut self, created_at: Timestamp) -> Self {
        self.created_at = created_at;
        self
    }

    /// The same call with another update time.
    pub fn with_updated_at(mut self, updated_at: Timestamp) -> Self {
        self.updated_at = updated_at;
        self
    }

    /// The same call with another completion time.
    pub fn with_completed_at(mut self, completed_at: Option<Timestamp>) -> Self {
        self.completed_at = completed_at;
        self
    }

    /// The caller-chosen id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The arguments.
    pub fn args(&self) -> &Map<String, Value> {
        &self.args
    }

    /// The checksum identifying this call's tool and arguments.
    pub fn checksum(&self) -> &str {
        &self.checksum
    }

    /// Whether the call has finished.
    pub fn is_complete(&self) -> bool {
        self.is_complete
    }

    /// Whether the call finished with an error.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// What it produced, once known.
    pub fn results(&self) -> Option<&ToolCallResults> {
        self.results.as_ref()
    }

    /// Whether it was made through an artifact tool.
    pub fn from_artifact_tool(&self) -> bool {
        self.from_artifact_tool
    }

    /// Whether its results must stay with the record.
    pub fn inline(&self) -> bool {
        self.inline
    }

    /// When it was created.
    pub fn created_at(&self) -> Timestamp {
        self.created_at
    }

    /// When it was last changed.
    pub fn updated_at(&self) -> Timestamp {
        self.updated_at
    }

    /// When it finished.
    pub fn completed_at(&self) -> Option<Timestamp> {
        self.completed_at
    }

    fn validate(self) -> Result<Self, PrimitiveError> {
        let check = Checker::new(PrimitiveKind::ToolCall, &self.id);
        check.non_empty("id", &self.id)?;
        check.non_empty("tool", &self.tool)?;
        check.non_empty("checksum", &self.checksum)?;
        check_link(&check, self.answer.as_ref())?;
        match &self.results {
            Some(ToolCallResults::Artifacts(list)) if list.is_empty() => {
                Err(check.fail("results", "must not be an empty list of artifacts"))
            }
            Some(ToolCallResults::MediaList(list)) if list.is_empty() => {
                Err(check.fail("results", "must not be an empty list of media"))
            }
            _ => Ok(self),
        }
    }
}

fn object_arguments(
    check: &Checker<'_>,
    args: Value,
) -> Result<Map<String, Value>, PrimitiveError> {
    match args {
        Value::Object(map) => Ok(map),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(check.fail("args", "must be a JSON object (a string must hold one)")),
        },
        _ => Err(check.fail("args", "must be a JSON object")),
    }
}

fn default_checksum(tool: &str, args: &Map<String, Value>) -> String {
    tool_call_checksum(tool, args)
}

/// The checksum identifying a call of `tool` with `args`: SHA-256 (hex) of the canonical JSON of
/// `{"args": args, "tool": tool}` (object keys sorted, no whitespace).
///
/// Identical calls share it, whatever order the model wrote the arguments in: it is what
/// `DispatchContext::tool_call_count` counts to stop a model repeating itself.
///
/// ```
/// use adk::primitives::tool_call_checksum;
///
/// let one = serde_json::json!({"city": "Oslo", "days": 3});
/// let same = serde_json::json!({"days": 3, "city": "Oslo"});
/// assert_eq!(
///     tool_call_checksum("forecast", one.as_object().unwrap()),
///     tool_call_checksum("forecast", same.as_object().unwrap()),
/// );
/// ```
pub fn tool_call_checksum(tool: &str, args: &Map<String, Value>) -> String {
    use sha2::Digest;
    let mut canonical = String::new();
    canonical.push_str("{\"args\":");
    write_canonical_object(&mut canonical, args);
    canonical.push_str(",\"tool\":");
    canonical.push_str(&Value::String(tool.to_owned()).to_string());
    canonical.push('}');
    hex::encode(sha2::Sha256::digest(canonical.as_bytes()))
}

// JSON values from a model were parsed by serde_json, whose recursion limit (128) bounds the
// depth here too, so plain recursion is safe.
fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => write_canonical_object(out, map),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_canonical_object(out: &mut String, map: &Map<String, Value>) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    // JavaScript sorts keys by UTF-16 code units; for the keys models emit (ASCII) that is the
    // same as Rust's byte order, which is what this uses.
    entries.sort_by(|left, right| left.0.cmp(right.0));
    out.push('{');
    for (index, (key, value)) in entries.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        write_canonical(out, value);
    }
    out.push('}');
}

#[derive(Deserialize)]
struct ToolCallFields {
    id: String,
    tool: String,
    args: Value,
    checksum: String,
    is_complete: bool,
    is_error: bool,
    #[serde(default)]
    results: Option<ToolCallResults>,
    #[serde(default)]
    from_artifact_tool: bool,
    #[serde(default)]
    inline: bool,
    #[serde(default)]
    answer: Option<AnswerLink>,
    created_at: StoredTimestamp,
    updated_at: StoredTimestamp,
    #[serde(default)]
    completed_at: Option<StoredTimestamp>,
}

impl TryFrom<ToolCallFields> for ToolCall {
    type Error = PrimitiveError;

    fn try_from(fields: ToolCallFields) -> Result<Self, Self::Error> {
        let check = Checker::new(PrimitiveKind::ToolCall, &fields.id);
        let args = object_arguments(&check, fields.args)?;
        let created_at = check.timestamp("created_at", fields.created_at)?;
        let updated_at = check.timestamp("updated_at", fields.updated_at)?;
        let completed_at = fields
            .completed_at
            .map(|stored| check.timestamp("completed_at", stored))
            .transpose()?;
        Self {
            id: fields.id,
            tool: fields.tool,
            args,
            checksum: fields.checksum,
            is_complete: fields.is_complete,
            is_error: fields.is_error,
            results: fields.results,
            from_artifact_tool: fields.from_artifact_tool,
            inline: fields.inline,
            answer: fields.answer,
            created_at,
            updated_at,
            completed_at,
        }
        .validate()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_tool_name_is_rejected() {
        let error = ToolCall::new("c", "", json!({})).unwrap_err();
        assert_eq!(error.field(), "tool");
        assert_eq!(error.code(), "E_INVALID_INITIAL_TOOL_CALL_VALUE");
    }

    #[test]
    fn arguments_given_as_a_json_string_are_parsed() {
        let call = ToolCall::new("c", "t", json!("{\"a\": 1}")).unwrap();
        assert_eq!(call.args()["a"], 1);
    }

    #[test]
    fn arguments_that_are_not_an_object_are_rejected() {
        assert_eq!(
            ToolCall::new("c", "t", json!("[1]")).unwrap_err().field(),
            "args"
        );
        assert_eq!(
            ToolCall::new("c", "t", json!(3)).unwrap_err().field(),
            "args"
        );
    }

    #[test]
    fn an_empty_result_list_is_rejected() {
        let call = ToolCall::new("c", "t", json!({})).unwrap();
        let error = call
            .with_results(ToolCallResults::MediaList(Vec::new()))
            .unwrap_err();
        assert_eq!(error.field(), "results");
    }

    #[test]
    fn the_default_checksum_is_stable_and_depends_on_the_arguments() {
        let first = ToolCall::new("a", "t", json!({"x": 1})).unwrap();
        let again = ToolCall::new("b", "t", json!({"x": 1})).unwrap();
        let other = ToolCall::new("c", "t", json!({"x": 2})).unwrap();
        assert_eq!(first.checksum(), again.checksum());
        assert_ne!(first.checksum(), other.checksum());
        assert_eq!(first.checksum().len(), 64);
    }

    #[test]
    fn failing_a_call_marks_it_complete_and_in_error() {
        let call = ToolCall::new("c", "t", json!({})).unwrap().fail("boom");
        assert!(call.is_complete() && call.is_error());
    }
}

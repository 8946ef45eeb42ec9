//! [`ChatOptions`]: the request fields users set most, typed, so a misspelt field or a value of
//! the wrong type is a compile error rather than a field the server ignores.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// Whether the reasoning of earlier answers goes back to the server, and in which field
/// ([`OpenAiConfig::reasoning_replay`](super::OpenAiConfig::reasoning_replay)).
///
/// Only the answers of the current turn (after the last user message) carry it: that is the
/// chain of thought a model such as gpt-oss needs between its tool calls; earlier turns'
/// reasoning is never sent.
///
/// ```
/// use adk::openai::{OpenAiConfig, ReasoningReplay};
///
/// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "gpt-oss-20b")?;
/// assert_eq!(config.reasoning_replay, ReasoningReplay::Auto);
/// // DeepSeek's reasoner refuses `reasoning_content` in requests.
/// let deepseek = config.with_reasoning_replay(ReasoningReplay::Omit);
/// # let _ = deepseek;
/// # Ok::<(), adk::openai::OpenAiError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningReplay {
    /// In the field this executor last received reasoning in (`reasoning_content` or
    /// `reasoning`); nothing until the server has sent some. The default: a server that
    /// streams reasoning gets it back the way it sent it; one that sends none gets none.
    #[default]
    Auto,
    /// Never sent.
    Omit,
    /// Always in `reasoning_content`.
    ReasoningContent,
    /// Always in `reasoning`.
    Reasoning,
}

/// How hard a reasoning model thinks before it answers (`reasoning_effort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningEffort {
    /// `none`: no reasoning (models that allow it).
    None,
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium`: the hosted API's default.
    Medium,
    /// `high`.
    High,
}

impl ReasoningEffort {
    /// The value sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Typed request fields, each sent only when set. They take precedence over
/// [`extra_body`](super::OpenAiConfig::extra_body) fields of the same name; a
/// [request hook](super::OpenAiExecutor::with_request_hook) still sees and may change them.
///
/// ```
/// use adk::openai::{ChatOptions, OpenAiConfig, ReasoningEffort};
///
/// let config = OpenAiConfig::new("https://api.openai.com/v1", "o4-mini")?.with_options(
///     ChatOptions::default()
///         .with_max_completion_tokens(2048)
///         .with_reasoning_effort(ReasoningEffort::Low)
///         .with_seed(7)
///         .with_stop(["\n\nUser:"])
///         .with_parallel_tool_calls(false)
///         .with_user("user-42")
///         .with_strict_tool("forecast"),
/// );
/// assert_eq!(config.options.max_completion_tokens, Some(2048));
/// # Ok::<(), adk::openai::OpenAiError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatOptions {
    /// `max_completion_tokens`: the most tokens the answer (reasoning included) may use.
    pub max_completion_tokens: Option<u32>,
    /// `reasoning_effort`.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `seed`: best-effort repeatable sampling.
    pub seed: Option<i64>,
    /// `stop`: up to four sequences that end the answer (sent when not empty).
    pub stop: Vec<String>,
    /// `parallel_tool_calls`: whether one answer may call several tools.
    pub parallel_tool_calls: Option<bool>,
    /// `user`: a stable id of the end user, for the provider's abuse monitoring.
    pub user: Option<String>,
    /// Tools sent with `strict: true`: the server then holds the model's arguments to the
    /// tool's input schema, which must be in strict mode's subset (see
    /// [`StructuredOutput`](super::StructuredOutput)).
    pub strict_tools: BTreeSet<String>,
}

impl ChatOptions {
    /// The same options with `max_completion_tokens`.
    pub fn with_max_completion_tokens(mut self, tokens: u32) -> Self {
        self.max_completion_tokens = Some(tokens);
        self
    }

    /// The same options with `reasoning_effort`.
    pub fn with_reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.reasoning_effort = Some(effort);
        self
    }

    /// The same options with `seed`.
    pub fn with_seed(mut self, seed: i64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The same options with these `stop` sequences.
    pub fn with_stop<Sequence: Into<String>>(
        mut self,
        stop: impl IntoIterator<Item = Sequence>,
    ) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// The same options with `parallel_tool_calls`.
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// The same options with `user`.
    pub fn with_user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// The same options sending the tool `name` with `strict: true`.
    pub fn with_strict_tool(mut self, name: impl Into<String>) -> Self {
        self.strict_tools.insert(name.into());
        self
    }

    /// Writes the options that are set into `body`, and `strict: true` into the named tools.
    pub(crate) fn apply(&self, body: &mut Map<String, Value>) {
        let mut set = |field: &str, value: Value| {
            body.insert(field.to_owned(), value);
        };
        if let Some(tokens) = self.max_completion_tokens {
            set("max_completion_tokens", json!(tokens));
        }
        if let Some(effort) = self.reasoning_effort {
            set("reasoning_effort", json!(effort.as_str()));
        }
        if let Some(seed) = self.seed {
            set("seed", json!(seed));
        }
        if !self.stop.is_empty() {
            set("stop", json!(self.stop));
        }
        if let Some(parallel) = self.parallel_tool_calls {
            set("parallel_tool_calls", json!(parallel));
        }
        if let Some(user) = &self.user {
            set("user", json!(user));
        }
        if self.strict_tools.is_empty() {
            return;
        }
        let Some(Value::Array(tools)) = body.get_mut("tools") else {
            return;
        };
        for tool in tools {
            let function = &mut tool["function"];
            let strict = function["name"]
                .as_str()
                .is_some_and(|name| self.strict_tools.contains(name));
            if strict && let Value::Object(function) = function {
                function.insert("strict".to_owned(), Value::Bool(true));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_options_are_written_and_strict_reaches_only_the_named_tool() {
        let mut body = Map::new();
        ChatOptions::default().apply(&mut body);
        assert!(body.is_empty());
        body.insert(
            "tools".to_owned(),
            json!([{"type": "function", "function": {"name": "a"}},
                   {"type": "function", "function": {"name": "b"}}]),
        );
        ChatOptions::default()
            .with_seed(-3)
            .with_stop(["END"])
            .with_reasoning_effort(ReasoningEffort::High)
            .with_strict_tool("b")
            .apply(&mut body);
        assert_eq!(body["seed"], -3);
        assert_eq!(body["stop"], json!(["END"]));
        assert_eq!(body["reasoning_effort"], "high");
        assert_eq!(body["tools"][0]["function"].get("strict"), None);
        assert_eq!(body["tools"][1]["function"]["strict"], true);
        assert!(!body.contains_key("user"));
    }
}

//! [`MessagesOptions`], [`ToolChoice`] and [`CachePolicy`]: the request fields users set most,
//! typed.

use serde_json::{Map, Value, json};

/// Where `cache_control` breakpoints go (Anthropic allows four per request).
///
/// [`Auto`](Self::Auto) places up to four `{"type": "ephemeral"}` breakpoints:
/// 1. on the last tool definition (the tools are the start of the cached prefix);
/// 2. on the last system block (the system prompt and standing instructions);
/// 3. on the last block of the last message: this request's whole prefix is written to the
///    cache, for the next request of the tool loop (or the next turn) to read;
/// 4. on the last block of the third-last message: where the previous request of a tool loop
///    put breakpoint 3, so the next request reads what the previous one wrote even when more
///    than 20 blocks were added in between (the API looks back at most 20 blocks from a
///    breakpoint).
///
/// Thinking blocks cannot carry a breakpoint; a message's last other block gets it. A prefix
/// shorter than the model's minimum (1024 tokens for most models) is not cached, which the API
/// reports as zero cache tokens, not as an error. The cache read and write token counts are in
/// [`GenerationStats`](crate::events::GenerationStats).
///
/// ```
/// use adk::anthropic::{AnthropicConfig, CachePolicy};
///
/// let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5")?;
/// assert_eq!(config.cache, CachePolicy::Auto);
/// let uncached = config.with_cache(CachePolicy::Off);
/// # let _ = uncached;
/// # Ok::<(), adk::anthropic::AnthropicError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CachePolicy {
    /// The four breakpoints above.
    #[default]
    Auto,
    /// No `cache_control` anywhere.
    Off,
}

/// How the model may use tools (`tool_choice`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// `auto`: the model decides (the API's default).
    Auto,
    /// `any`: the model must call some tool.
    Any,
    /// `tool`: the model must call this tool.
    Tool(String),
    /// `none`: the model must not call tools.
    None,
}

/// Typed request fields, each sent only when set; they take precedence over
/// [`extra_body`](super::AnthropicConfig::extra_body) fields of the same name, and a
/// [request hook](super::AnthropicExecutor::with_request_hook) still sees and may change them.
///
/// ```
/// use adk::anthropic::{AnthropicConfig, MessagesOptions, ToolChoice};
///
/// let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5")?
///     .with_options(
///         MessagesOptions::default()
///             .with_temperature(0.2)
///             .with_stop_sequences(["\n\nHuman:"])
///             .with_tool_choice(ToolChoice::Any)
///             .with_parallel_tool_use(false)
///             .with_user_id("user-42"),
///     );
/// assert_eq!(config.options.tool_choice, Some(ToolChoice::Any));
/// # Ok::<(), adk::anthropic::AnthropicError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct MessagesOptions {
    /// `temperature` (0 to 1).
    pub temperature: Option<f64>,
    /// `stop_sequences` (sent when not empty).
    pub stop_sequences: Vec<String>,
    /// `tool_choice.type`, sent only when tools are.
    pub tool_choice: Option<ToolChoice>,
    /// `false` sends `tool_choice.disable_parallel_tool_use: true`: one tool call per answer.
    pub parallel_tool_use: Option<bool>,
    /// `metadata.user_id`: an opaque id of the end user, for abuse detection.
    pub user_id: Option<String>,
}

impl MessagesOptions {
    /// The same options with `temperature`.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The same options with these `stop_sequences`.
    pub fn with_stop_sequences<Sequence: Into<String>>(
        mut self,
        stop: impl IntoIterator<Item = Sequence>,
    ) -> Self {
        self.stop_sequences = stop.into_iter().map(Into::into).collect();
        self
    }

    /// The same options with `tool_choice`.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// The same options allowing several tool calls per answer or not.
    pub fn with_parallel_tool_use(mut self, parallel: bool) -> Self {
        self.parallel_tool_use = Some(parallel);
        self
    }

    /// The same options with `metadata.user_id`.
    pub fn with_user_id(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// Writes the options that are set into `body`; `tool_choice` only when it has tools.
    pub(crate) fn apply(&self, body: &mut Map<String, Value>) {
        if let Some(temperature) = self.temperature {
            body.insert("temperature".to_owned(), json!(temperature));
        }
        if !self.stop_sequences.is_empty() {
            body.insert("stop_sequences".to_owned(), json!(self.stop_sequences));
        }
        if let Some(user_id) = &self.user_id {
            body.insert("metadata".to_owned(), json!({"user_id": user_id}));
        }
        if !body.contains_key("tools") {
            return;
        }
        let choice = match (&self.tool_choice, self.parallel_tool_use) {
            (None, None) => return,
            (Some(ToolChoice::Any), _) => json!({"type": "any"}),
            (Some(ToolChoice::Tool(name)), _) => json!({"type": "tool", "name": name}),
            (Some(ToolChoice::None), _) => json!({"type": "none"}),
            (Some(ToolChoice::Auto) | None, _) => json!({"type": "auto"}),
        };
        let mut choice = choice;
        if self.parallel_tool_use == Some(false)
            && !matches!(self.tool_choice, Some(ToolChoice::None))
            && let Value::Object(fields) = &mut choice
        {
            fields.insert("disable_parallel_tool_use".to_owned(), Value::Bool(true));
        }
        body.insert("tool_choice".to_owned(), choice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_options_are_written_and_tool_choice_needs_tools() {
        let mut body = Map::new();
        MessagesOptions::default().apply(&mut body);
        assert!(body.is_empty());
        let options = MessagesOptions::default()
            .with_tool_choice(ToolChoice::Tool("weather".into()))
            .with_parallel_tool_use(false)
            .with_user_id("u-1");
        options.apply(&mut body);
        assert!(!body.contains_key("tool_choice"), "no tools, no choice");
        assert_eq!(body["metadata"], json!({"user_id": "u-1"}));
        body.insert("tools".to_owned(), json!([]));
        options.apply(&mut body);
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "weather", "disable_parallel_tool_use": true})
        );
    }
}

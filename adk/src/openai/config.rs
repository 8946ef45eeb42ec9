//! [`OpenAiConfig`]: where the server is, which model to ask, and how long to wait.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use super::OpenAiError;

/// The model asked when neither [`OpenAiConfig::new`]'s caller nor `ADK_MODEL` names one.
/// Local servers (llama.cpp, vLLM with one model) ignore the name.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// How to reach an OpenAI-compatible chat-completions server.
///
/// `base_url` is the API root the server documents (`https://api.openai.com/v1`,
/// `http://127.0.0.1:8080/v1` for llama.cpp, `http://127.0.0.1:11434/v1` for Ollama); the
/// executor posts to `{base_url}/chat/completions`. `Debug` never prints the API key.
///
/// ```
/// use std::time::Duration;
///
/// use adk::openai::OpenAiConfig;
///
/// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "qwen2.5-7b-instruct")?
///     .with_api_key("sk-local")
///     .with_request_timeout(Duration::from_secs(30));
/// assert_eq!(config.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
/// assert!(!format!("{config:?}").contains("sk-local"));
/// # Ok::<(), adk::openai::OpenAiError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The API root, without `/chat/completions`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// The `model` field of every request.
    pub model: String,
    /// How long to wait for the response's status and headers (connecting included).
    pub request_timeout: Duration,
    /// How long the streamed body may stay silent before the call fails: a stalled server is
    /// reported instead of waited on forever.
    pub stream_idle_timeout: Duration,
    /// Asks for token usage in the last chunk (`stream_options.include_usage`); turn it off for
    /// servers that reject the field.
    pub include_usage: bool,
    /// Fields merged into every request body (`temperature`, `max_tokens`, vendor options…);
    /// they cannot replace `model`, `messages`, `tools` or `stream`.
    pub extra_body: Map<String, Value>,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`, with two-minute request and idle timeouts.
    ///
    /// # Errors
    ///
    /// [`OpenAiError::InvalidConfig`] when `base_url` is not an `http` or `https` URL.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Result<Self, OpenAiError> {
        let base_url = base_url.into();
        validate_base_url("base_url", &base_url)?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: None,
            model: model.into(),
            request_timeout: Duration::from_secs(120),
            stream_idle_timeout: Duration::from_secs(120),
            include_usage: true,
            extra_body: Map::new(),
        })
    }

    /// Reads `ADK_OPENAI_BASE_URL`, `ADK_OPENAI_API_KEY` and `ADK_MODEL` (default
    /// [`DEFAULT_MODEL`]). `Ok(None)` when `ADK_OPENAI_BASE_URL` is unset or empty, so callers
    /// can fall back to another executor.
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// match OpenAiConfig::from_env()? {
    ///     Some(config) => println!("asking {} at {}", config.model, config.base_url),
    ///     None => println!("ADK_OPENAI_BASE_URL is unset; using the scripted model"),
    /// }
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`OpenAiError::InvalidConfig`] naming `ADK_OPENAI_BASE_URL` when it is set but not an
    /// `http` or `https` URL.
    pub fn from_env() -> Result<Option<Self>, OpenAiError> {
        let Some(base_url) = non_empty_var("ADK_OPENAI_BASE_URL") else {
            return Ok(None);
        };
        validate_base_url("ADK_OPENAI_BASE_URL", &base_url)?;
        let model = non_empty_var("ADK_MODEL").unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let mut config = Self::new(base_url, model)?;
        config.api_key = non_empty_var("ADK_OPENAI_API_KEY");
        Ok(Some(config))
    }

    /// The same configuration with an API key.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// The same configuration with another request timeout.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The same configuration with another stream idle timeout.
    pub fn with_stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.stream_idle_timeout = timeout;
        self
    }

    /// The same configuration with `field` set in every request body.
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "local")?
    ///     .with_body_field("temperature", serde_json::json!(0.2));
    /// assert_eq!(config.extra_body["temperature"], 0.2);
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    pub fn with_body_field(mut self, field: impl Into<String>, value: Value) -> Self {
        self.extra_body.insert(field.into(), value);
        self
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("include_usage", &self.include_usage)
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

fn non_empty_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

fn validate_base_url(field: &'static str, value: &str) -> Result<(), OpenAiError> {
    let invalid = |reason: String| OpenAiError::InvalidConfig {
        field,
        value: value.to_owned(),
        reason,
    };
    let url = reqwest::Url::parse(value).map_err(|error| {
        invalid(format!(
            "{error}; give the API root, e.g. `http://127.0.0.1:8080/v1`"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "the scheme is `{}`; use `http` or `https`",
            url.scheme()
        )));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_without_http_scheme_is_refused_with_the_field_named() {
        let error = OpenAiConfig::new("ftp://example.invalid/v1", "m").unwrap_err();
        let message = error.to_string();
        assert!(message.contains("base_url"), "{message}");
        assert!(message.contains("ftp"), "{message}");
        assert!(OpenAiConfig::new("not a url", "m").is_err());
    }

    #[test]
    fn a_trailing_slash_does_not_double_in_the_endpoint() {
        let config = OpenAiConfig::new("http://127.0.0.1:1/v1/", "m").unwrap();
        assert_eq!(config.endpoint(), "http://127.0.0.1:1/v1/chat/completions");
    }
}

//! [`AnthropicConfig`]: where the Messages API is, how to authenticate, which model to ask, the
//! request fields, how long to wait and how often to retry.

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::{AnthropicError, CachePolicy, MessagesOptions, RetryPolicy};

/// The model asked when neither [`AnthropicConfig::new`]'s caller nor `ADK_MODEL` /
/// `ANTHROPIC_MODEL` names one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The hosted API's root, used by [`AnthropicConfig::from_env`] when only a key is set.
pub const ANTHROPIC_API_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent unless configured otherwise.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// The default [`AnthropicConfig::max_tokens`]: the most tokens one answer may use.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The default [`AnthropicConfig::max_line_bytes`]: 4 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 << 20;

/// The default [`AnthropicConfig::max_answer_bytes`]: 8 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 8 << 20;

/// How to reach an Anthropic Messages API server: the hosted API, or a proxy that speaks it
/// (LiteLLM's `/v1/messages`, a gateway).
///
/// `base_url` is the root the Anthropic SDKs take as `ANTHROPIC_BASE_URL`
/// (`https://api.anthropic.com`, `http://127.0.0.1:4000` for a LiteLLM proxy); the executor
/// posts to `{base_url}/v1/messages`. `Debug` never prints the key or token.
///
/// ```
/// use std::time::Duration;
///
/// use adk::anthropic::AnthropicConfig;
///
/// let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5")?
///     .with_api_key("sk-ant-…")
///     .with_max_tokens(2048)
///     .with_thinking(1024)
///     .with_beta("interleaved-thinking-2025-05-14")
///     .with_request_timeout(Duration::from_secs(30));
/// assert_eq!(config.endpoint(), "https://api.anthropic.com/v1/messages");
/// assert!(!format!("{config:?}").contains("sk-ant"));
/// # Ok::<(), adk::anthropic::AnthropicError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The API root, without `/v1/messages`.
    pub base_url: String,
    /// Sent as `x-api-key` when set.
    pub api_key: Option<String>,
    /// Sent as `Authorization: Bearer` when set (a gateway's token; the SDKs'
    /// `ANTHROPIC_AUTH_TOKEN`).
    pub auth_token: Option<String>,
    /// The `anthropic-version` header ([`DEFAULT_VERSION`]).
    pub version: String,
    /// Beta features, sent comma-joined in one `anthropic-beta` header when not empty.
    pub betas: Vec<String>,
    /// Headers sent with every request; they replace the ones above of the same name.
    pub headers: HeaderMap,
    /// The `model` field of every request.
    pub model: String,
    /// `max_tokens`: the most tokens one answer may use, thinking included.
    pub max_tokens: u32,
    /// Extended thinking: `thinking: {"type": "enabled", "budget_tokens": N}` when set (at least
    /// 1024, and less than [`max_tokens`](Self::max_tokens)).
    pub thinking_budget: Option<u32>,
    /// Where `cache_control` breakpoints go ([`CachePolicy::Auto`] by default).
    pub cache: CachePolicy,
    /// `temperature`, `stop_sequences`, `tool_choice`, `metadata.user_id`, sent when set.
    pub options: MessagesOptions,
    /// How long to wait for the response's status and headers, per attempt.
    pub request_timeout: Duration,
    /// How long the stream may stay silent (pings count) before the call fails.
    pub stream_idle_timeout: Duration,
    /// How long one model call may take as a whole, retries included; `None` for no bound.
    pub total_timeout: Option<Duration>,
    /// When and how often a failed request is tried again.
    pub retry: RetryPolicy,
    /// How many tool calls of one answer run at the same time (at least 1).
    pub max_concurrent_tools: usize,
    /// The longest line (or event) of the stream that is read, in bytes; a longer one fails
    /// the call with [`AnthropicError::ResponseTooLarge`] as soon as that many bytes arrived.
    pub max_line_bytes: usize,
    /// The largest answer that is read, in bytes: text, thinking, signatures and tool inputs
    /// together.
    pub max_answer_bytes: usize,
    /// Fields merged into every request body; they cannot replace `model`, `messages`,
    /// `system`, `tools` or `stream`.
    pub extra_body: Map<String, Value>,
}

impl AnthropicConfig {
    /// A configuration for `model` at `base_url`: `anthropic-version` [`DEFAULT_VERSION`],
    /// [`DEFAULT_MAX_TOKENS`], no thinking, [`CachePolicy::Auto`], two-minute request and idle
    /// timeouts, a ten-minute overall bound, [`RetryPolicy::default`], four tools at a time.
    ///
    /// # Errors
    ///
    /// [`AnthropicError::InvalidConfig`] when `base_url` is not an `http` or `https` URL.
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<Self, AnthropicError> {
        let base_url = base_url.into();
        validate_base_url("base_url", &base_url)?;
        Ok(Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: None,
            auth_token: None,
            version: DEFAULT_VERSION.to_owned(),
            betas: Vec::new(),
            headers: HeaderMap::new(),
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            cache: CachePolicy::default(),
            options: MessagesOptions::default(),
            request_timeout: Duration::from_secs(120),
            stream_idle_timeout: Duration::from_secs(120),
            total_timeout: Some(Duration::from_secs(600)),
            retry: RetryPolicy::default(),
            max_concurrent_tools: 4,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            extra_body: Map::new(),
        })
    }

    /// Reads the environment, the `ADK_*` name first, then the Anthropic SDKs' name:
    /// - the key from `ADK_ANTHROPIC_API_KEY`, then `ANTHROPIC_API_KEY` (sent as `x-api-key`);
    /// - a bearer token from `ANTHROPIC_AUTH_TOKEN`;
    /// - the base URL from `ADK_ANTHROPIC_BASE_URL`, then `ANTHROPIC_BASE_URL` (default
    ///   [`ANTHROPIC_API_BASE_URL`]);
    /// - the model from `ADK_MODEL`, then `ANTHROPIC_MODEL` (default [`DEFAULT_MODEL`]);
    /// - `ANTHROPIC_VERSION` for `anthropic-version`, `ANTHROPIC_BETA` (comma-separated) for
    ///   `anthropic-beta`.
    ///
    /// `Ok(None)` when none of a key, a token or a base URL is set, so callers can fall back to
    /// another executor.
    ///
    /// # Errors
    ///
    /// [`AnthropicError::InvalidConfig`] naming the variable when the base URL is not an `http`
    /// or `https` URL.
    pub fn from_env() -> Result<Option<Self>, AnthropicError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any source of variables.
    pub(crate) fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, AnthropicError> {
        let var = |name: &'static str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
                .map(|value| (name, value))
        };
        let base_url = var("ADK_ANTHROPIC_BASE_URL").or_else(|| var("ANTHROPIC_BASE_URL"));
        let api_key = var("ADK_ANTHROPIC_API_KEY").or_else(|| var("ANTHROPIC_API_KEY"));
        let auth_token = var("ANTHROPIC_AUTH_TOKEN");
        if base_url.is_none() && api_key.is_none() && auth_token.is_none() {
            return Ok(None);
        }
        let (field, base_url) =
            base_url.unwrap_or(("ANTHROPIC_BASE_URL", ANTHROPIC_API_BASE_URL.to_owned()));
        validate_base_url(field, &base_url)?;
        let model = var("ADK_MODEL")
            .or_else(|| var("ANTHROPIC_MODEL"))
            .map_or_else(|| DEFAULT_MODEL.to_owned(), |(_, model)| model);
        let mut config = Self::new(base_url, model)?;
        config.api_key = api_key.map(|(_, key)| key);
        config.auth_token = auth_token.map(|(_, token)| token);
        if let Some((_, version)) = var("ANTHROPIC_VERSION") {
            config.version = version;
        }
        if let Some((_, betas)) = var("ANTHROPIC_BETA") {
            config.betas = betas
                .split(',')
                .map(str::trim)
                .filter(|beta| !beta.is_empty())
                .map(str::to_owned)
                .collect();
        }
        Ok(Some(config))
    }

    /// The same configuration with an API key (`x-api-key`).
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// The same configuration with a bearer token (`Authorization: Bearer`).
    pub fn with_auth_token(mut self, token: impl Into<String>) -> Self {
        self.auth_token = Some(token.into());
        self
    }

    /// The same configuration with another `anthropic-version`.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The same configuration with one more `anthropic-beta` feature.
    pub fn with_beta(mut self, beta: impl Into<String>) -> Self {
        self.betas.push(beta.into());
        self
    }

    /// The same configuration with `name: value` sent on every request.
    ///
    /// # Errors
    ///
    /// [`AnthropicError::InvalidConfig`] when the name or value is not a valid HTTP header.
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Self, AnthropicError> {
        let invalid = |reason: String| AnthropicError::InvalidConfig {
            field: "headers",
            value: format!("{name}: {value}"),
            reason,
        };
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| invalid(format!("the name is not a header name ({error})")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|error| invalid(format!("the value is not a header value ({error})")))?;
        value.set_sensitive(true);
        self.headers.insert(header, value);
        Ok(self)
    }

    /// The same configuration with another `max_tokens`.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The same configuration with extended thinking on, `budget_tokens` of it per answer.
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// The same configuration placing cache breakpoints as `policy` says.
    pub fn with_cache(mut self, policy: CachePolicy) -> Self {
        self.cache = policy;
        self
    }

    /// The same configuration with these request fields.
    pub fn with_options(mut self, options: MessagesOptions) -> Self {
        self.options = options;
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

    /// The same configuration with another overall bound per model call (`None`: unbounded).
    pub fn with_total_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.total_timeout = timeout;
        self
    }

    /// The same configuration with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same configuration running at most `limit` tool calls at a time (0 counts as 1).
    pub fn with_max_concurrent_tools(mut self, limit: usize) -> Self {
        self.max_concurrent_tools = limit.max(1);
        self
    }

    /// The same configuration with other caps on one stream line and on a whole answer, in
    /// bytes (each at least 1).
    pub fn with_response_caps(mut self, max_line_bytes: usize, max_answer_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes.max(1);
        self.max_answer_bytes = max_answer_bytes.max(1);
        self
    }

    /// The same configuration with `field` set in every request body.
    pub fn with_body_field(mut self, field: impl Into<String>, value: Value) -> Self {
        self.extra_body.insert(field.into(), value);
        self
    }

    /// The URL requests are posted to: `{base_url}/v1/messages`.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let redacted = |secret: &Option<String>| secret.as_ref().map(|_| "<redacted>");
        formatter
            .debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &redacted(&self.api_key))
            .field("auth_token", &redacted(&self.auth_token))
            .field("version", &self.version)
            .field("betas", &self.betas)
            .field("headers", &self.headers)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("cache", &self.cache)
            .field("options", &self.options)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("retry", &self.retry)
            .field("max_concurrent_tools", &self.max_concurrent_tools)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

fn validate_base_url(field: &'static str, value: &str) -> Result<(), AnthropicError> {
    let invalid = |reason: String| AnthropicError::InvalidConfig {
        field,
        value: value.to_owned(),
        reason,
    };
    let url = reqwest::Url::parse(value).map_err(|error| {
        invalid(format!(
            "{error}; give the API root, e.g. `https://api.anthropic.com`"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "the scheme is `{}`; use `http` or `https`",
            url.scheme()
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            "the URL has a query or fragment; give the API root only".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Option<AnthropicConfig>, AnthropicError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        AnthropicConfig::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn the_sdk_variables_are_read_and_the_adk_names_take_precedence() {
        assert!(from(&[]).unwrap().is_none());
        let hosted = from(&[("ANTHROPIC_API_KEY", "sk-ant-1")]).unwrap().unwrap();
        assert_eq!(hosted.base_url, ANTHROPIC_API_BASE_URL);
        assert_eq!(hosted.api_key.as_deref(), Some("sk-ant-1"));
        assert_eq!(
            (hosted.model.as_str(), hosted.version.as_str()),
            (DEFAULT_MODEL, DEFAULT_VERSION)
        );
        let proxy = from(&[
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000/"),
            ("ADK_ANTHROPIC_BASE_URL", "http://127.0.0.1:5000"),
            ("ANTHROPIC_API_KEY", "sk-a"),
            ("ADK_ANTHROPIC_API_KEY", "sk-adk"),
            ("ANTHROPIC_MODEL", "claude-x"),
            ("ANTHROPIC_VERSION", "2099-01-01"),
            ("ANTHROPIC_BETA", "a-1, b-2,"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(proxy.endpoint(), "http://127.0.0.1:5000/v1/messages");
        assert_eq!(proxy.api_key.as_deref(), Some("sk-adk"));
        assert_eq!(proxy.model, "claude-x");
        assert_eq!(proxy.version, "2099-01-01");
        assert_eq!(proxy.betas, ["a-1", "b-2"]);
        let error = from(&[("ANTHROPIC_BASE_URL", "ftp://x")]).unwrap_err();
        assert!(error.to_string().contains("ANTHROPIC_BASE_URL"), "{error}");
    }

    #[test]
    fn secrets_never_reach_debug_output() {
        let config = AnthropicConfig::new("http://127.0.0.1:1", "m")
            .unwrap()
            .with_api_key("sk-secret")
            .with_auth_token("tok-secret")
            .with_header("x-gateway", "gw-secret")
            .unwrap();
        let printed = format!("{config:?}");
        assert!(!printed.contains("secret"), "{printed}");
    }
}

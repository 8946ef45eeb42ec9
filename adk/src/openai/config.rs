//! [`OpenAiConfig`]: where the server is, how to authenticate, which model to ask, how long to
//! wait and how often to retry.

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::{ChatOptions, OpenAiError, ReasoningReplay, RetryPolicy, ToolCallIds};

/// The model asked when neither [`OpenAiConfig::new`]'s caller nor `ADK_MODEL` / `OPENAI_MODEL`
/// names one. Local servers (llama.cpp, vLLM with one model) ignore the name.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// The hosted OpenAI API's root, used by [`OpenAiConfig::from_env`] when only an API key is set.
pub const OPENAI_API_BASE_URL: &str = "https://api.openai.com/v1";

/// The `User-Agent` of every request unless a header overrides it: the kit's package name and
/// version, e.g. `checked-adk/0.1.0`.
pub const USER_AGENT: &str = concat!(env!("CARGO_PKG_NAME"), "/", env!("CARGO_PKG_VERSION"));

/// The default [`OpenAiConfig::max_line_bytes`]: 4 MiB. A chunk is a few hundred bytes; servers
/// that send a whole tool call in one chunk need room for its arguments.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 << 20;

/// The default [`OpenAiConfig::max_answer_bytes`]: 8 MiB, about sixteen times the longest answer
/// a model with a 128k-token output limit writes.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 8 << 20;

/// How the API key travels.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiKeyHeader {
    /// `Authorization: Bearer <key>`: the hosted API, vLLM, llama.cpp, LiteLLM, OpenRouter.
    Bearer,
    /// `<name>: <key>`: Azure OpenAI's `api-key`, or a gateway's own header.
    Named(HeaderName),
}

/// How to reach an OpenAI-compatible chat-completions server.
///
/// `base_url` is the API root the server documents (`https://api.openai.com/v1`,
/// `http://127.0.0.1:8080/v1` for llama.cpp, `http://127.0.0.1:11434/v1` for Ollama); the
/// executor posts to `{base_url}/chat/completions`, keeping any query string after the path
/// (`…/deployments/gpt-4o?api-version=2024-10-21` posts to
/// `…/deployments/gpt-4o/chat/completions?api-version=2024-10-21`). `Debug` never prints the
/// API key.
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
    /// The API root, without `/chat/completions`; may carry a query string.
    pub base_url: String,
    /// Sent in [`api_key_header`](Self::api_key_header) when set.
    pub api_key: Option<String>,
    /// How the key is sent: `Authorization: Bearer` unless configured otherwise.
    pub api_key_header: ApiKeyHeader,
    /// Headers sent with every request (organisation, project, gateway keys…). A
    /// `User-Agent` here replaces [`USER_AGENT`].
    pub headers: HeaderMap,
    /// The `model` field of every request.
    pub model: String,
    /// How long to wait for the response's status and headers (connecting included), per
    /// attempt.
    pub request_timeout: Duration,
    /// How long the body may stay silent before the call fails: a stalled server is reported
    /// instead of waited on forever.
    pub stream_idle_timeout: Duration,
    /// How long one model call may take as a whole, retries and the full streamed answer
    /// included; `None` for no bound. Ten minutes by default: generous for long answers, yet a
    /// stream that trickles keep-alives forever still ends.
    pub total_timeout: Option<Duration>,
    /// When and how often a failed request is tried again.
    pub retry: RetryPolicy,
    /// Whether to ask for a streamed answer (`stream: true`, the default). Turn it off for
    /// servers or proxies that do not stream; the answer is then reported in one piece.
    pub stream: bool,
    /// Asks for token usage in the last chunk (`stream_options.include_usage`); turn it off for
    /// servers that reject the field.
    pub include_usage: bool,
    /// How many tool calls of one answer run at the same time (at least 1). The results go
    /// back to the model in the order it made the calls, whatever order they finish in.
    pub max_concurrent_tools: usize,
    /// The longest line of the event stream (or event, for data split over lines) that is
    /// read, in bytes ([`DEFAULT_MAX_LINE_BYTES`]). A longer one fails the call with
    /// [`OpenAiError::ResponseTooLarge`] as soon as that many bytes arrived.
    pub max_line_bytes: usize,
    /// The largest answer that is read, in bytes: text, reasoning, refusal, tool names and
    /// arguments together for a streamed answer, the whole body for an unstreamed one
    /// ([`DEFAULT_MAX_ANSWER_BYTES`]). A larger one fails the call with
    /// [`OpenAiError::ResponseTooLarge`].
    pub max_answer_bytes: usize,
    /// Which tool-call ids go back to the server ([`ToolCallIds::Provider`] by default).
    pub tool_call_ids: ToolCallIds,
    /// Whether the current turn's reasoning goes back to the server, and in which field
    /// ([`ReasoningReplay::Auto`] by default: the way the server sent it).
    pub reasoning_replay: ReasoningReplay,
    /// Typed request fields (`max_completion_tokens`, `reasoning_effort`, `seed`, `stop`,
    /// `parallel_tool_calls`, `user`, strict tools), sent when set.
    pub options: ChatOptions,
    /// Fields merged into every request body (vendor options, a fixed `temperature`…); they
    /// cannot replace `model`, `messages`, `tools` or `stream`. For options that change per
    /// iteration (`tool_choice`, `response_format`), use
    /// [`OpenAiExecutor::with_request_hook`](super::OpenAiExecutor::with_request_hook).
    pub extra_body: Map<String, Value>,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`: two-minute request and idle timeouts, a
    /// ten-minute overall bound, [`RetryPolicy::default`], streaming on, four tools at a time.
    ///
    /// # Errors
    ///
    /// [`OpenAiError::InvalidConfig`] when `base_url` is not an `http` or `https` URL.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Result<Self, OpenAiError> {
        let base_url = base_url.into();
        validate_base_url("base_url", &base_url)?;
        Ok(Self {
            base_url: trim_base_url(&base_url),
            api_key: None,
            api_key_header: ApiKeyHeader::Bearer,
            headers: HeaderMap::new(),
            model: model.into(),
            request_timeout: Duration::from_secs(120),
            stream_idle_timeout: Duration::from_secs(120),
            total_timeout: Some(Duration::from_secs(600)),
            retry: RetryPolicy::default(),
            stream: true,
            include_usage: true,
            max_concurrent_tools: 4,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            tool_call_ids: ToolCallIds::default(),
            reasoning_replay: ReasoningReplay::default(),
            options: ChatOptions::default(),
            extra_body: Map::new(),
        })
    }

    /// Azure OpenAI: `endpoint` is the resource (`https://my-resource.openai.azure.com`),
    /// `deployment` the deployment name (which is also sent as `model`), `api_version` the
    /// `api-version` query value. The key travels in the `api-key` header.
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::azure("https://my-resource.openai.azure.com", "gpt-4o", "2024-10-21")?
    ///     .with_api_key("azure-key");
    /// assert_eq!(
    ///     config.endpoint(),
    ///     "https://my-resource.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    /// );
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`OpenAiError::InvalidConfig`] when `endpoint` is not an `http` or `https` URL.
    pub fn azure(
        endpoint: impl AsRef<str>,
        deployment: impl AsRef<str>,
        api_version: impl AsRef<str>,
    ) -> Result<Self, OpenAiError> {
        let endpoint = endpoint.as_ref();
        validate_base_url("endpoint", endpoint)?;
        let mut url =
            reqwest::Url::parse(endpoint).map_err(|error| OpenAiError::InvalidConfig {
                field: "endpoint",
                value: endpoint.to_owned(),
                reason: error.to_string(),
            })?;
        let root = url.path().trim_end_matches('/').to_owned();
        url.path_segments_mut()
            .map_err(|()| OpenAiError::InvalidConfig {
                field: "endpoint",
                value: endpoint.to_owned(),
                reason: "the URL cannot have a path".to_owned(),
            })?
            .clear()
            .extend(root.split('/').filter(|segment| !segment.is_empty()))
            .extend(["openai", "deployments", deployment.as_ref()]);
        url.query_pairs_mut()
            .clear()
            .append_pair("api-version", api_version.as_ref());
        let mut config = Self::new(url.as_str(), deployment.as_ref())?;
        config.api_key_header = ApiKeyHeader::Named(HeaderName::from_static("api-key"));
        Ok(config)
    }

    /// Reads the environment, the `ADK_*` name first, then the OpenAI SDKs' name:
    /// - the base URL from `ADK_OPENAI_BASE_URL`, then `OPENAI_BASE_URL`;
    /// - the key from `ADK_OPENAI_API_KEY`, then `OPENAI_API_KEY`;
    /// - the model from `ADK_MODEL`, then `OPENAI_MODEL` (default [`DEFAULT_MODEL`]);
    /// - `OPENAI_ORG_ID` and `OPENAI_PROJECT_ID`, sent as the `OpenAI-Organization` and
    ///   `OpenAI-Project` headers when set.
    ///
    /// With a key but no base URL, the hosted API ([`OPENAI_API_BASE_URL`]) is used. `Ok(None)`
    /// when neither a base URL nor a key is set, so callers can fall back to another executor.
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// match OpenAiConfig::from_env()? {
    ///     Some(config) => println!("asking {} at {}", config.model, config.base_url),
    ///     None => println!("no OPENAI_API_KEY or OPENAI_BASE_URL; using the scripted model"),
    /// }
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`OpenAiError::InvalidConfig`] naming the variable when the base URL is set but not an
    /// `http` or `https` URL, or an organisation or project id cannot be a header value.
    pub fn from_env() -> Result<Option<Self>, OpenAiError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) over any source of variables.
    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, OpenAiError> {
        let var = |name: &'static str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
                .map(|value| (name, value))
        };
        let base_url = var("ADK_OPENAI_BASE_URL").or_else(|| var("OPENAI_BASE_URL"));
        let api_key = var("ADK_OPENAI_API_KEY").or_else(|| var("OPENAI_API_KEY"));
        let (field, base_url) = match (base_url, &api_key) {
            (Some(base_url), _) => base_url,
            (None, Some(_)) => ("OPENAI_BASE_URL", OPENAI_API_BASE_URL.to_owned()),
            (None, None) => return Ok(None),
        };
        validate_base_url(field, &base_url)?;
        let model = var("ADK_MODEL")
            .or_else(|| var("OPENAI_MODEL"))
            .map_or_else(|| DEFAULT_MODEL.to_owned(), |(_, model)| model);
        let mut config = Self::new(base_url, model)?;
        config.api_key = api_key.map(|(_, key)| key);
        for (variable, header) in [
            ("OPENAI_ORG_ID", "openai-organization"),
            ("OPENAI_PROJECT_ID", "openai-project"),
        ] {
            if let Some((field, value)) = var(variable) {
                let value =
                    HeaderValue::from_str(&value).map_err(|error| OpenAiError::InvalidConfig {
                        field,
                        value: value.clone(),
                        reason: format!("not a header value ({error})"),
                    })?;
                config
                    .headers
                    .insert(HeaderName::from_static(header), value);
            }
        }
        Ok(Some(config))
    }

    /// The same configuration with an API key.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// The same configuration with the key sent in another header.
    pub fn with_api_key_header(mut self, header: ApiKeyHeader) -> Self {
        self.api_key_header = header;
        self
    }

    /// The same configuration with `name: value` sent on every request.
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o-mini")?
    ///     .with_header("OpenAI-Organization", "org-123")?
    ///     .with_header("OpenAI-Project", "proj-456")?;
    /// assert_eq!(config.headers["openai-project"], "proj-456");
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`OpenAiError::InvalidConfig`] when the name or value is not a valid HTTP header.
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Self, OpenAiError> {
        let invalid = |reason: String| OpenAiError::InvalidConfig {
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

    /// The same configuration asking for streamed answers or not.
    pub fn with_streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// The same configuration running at most `limit` tool calls at a time (0 counts as 1).
    pub fn with_max_concurrent_tools(mut self, limit: usize) -> Self {
        self.max_concurrent_tools = limit.max(1);
        self
    }

    /// The same configuration with other caps on one event-stream line and on a whole answer,
    /// in bytes (each at least 1).
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "local")?
    ///     .with_response_caps(1 << 20, 2 << 20);
    /// assert_eq!((config.max_line_bytes, config.max_answer_bytes), (1 << 20, 2 << 20));
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    pub fn with_response_caps(mut self, max_line_bytes: usize, max_answer_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes.max(1);
        self.max_answer_bytes = max_answer_bytes.max(1);
        self
    }

    /// The same configuration sending tool-call ids as `policy` says.
    ///
    /// ```
    /// use adk::openai::{OpenAiConfig, ToolCallIds};
    ///
    /// // Mistral models (on vLLM or llama.cpp) accept only 9-character alphanumeric ids.
    /// let config = OpenAiConfig::new("http://127.0.0.1:8000/v1", "mistral-small")?
    ///     .with_tool_call_ids(ToolCallIds::Alphanumeric9);
    /// assert_eq!(config.tool_call_ids, ToolCallIds::Alphanumeric9);
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    pub fn with_tool_call_ids(mut self, policy: ToolCallIds) -> Self {
        self.tool_call_ids = policy;
        self
    }

    /// The same configuration sending reasoning back as `replay` says.
    pub fn with_reasoning_replay(mut self, replay: ReasoningReplay) -> Self {
        self.reasoning_replay = replay;
        self
    }

    /// The same configuration with these typed request fields.
    pub fn with_options(mut self, options: ChatOptions) -> Self {
        self.options = options;
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

    /// The URL requests are posted to: `/chat/completions` appended to the base URL's path,
    /// its query string kept.
    ///
    /// ```
    /// use adk::openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::new("https://gateway.example/v1?tenant=7", "m")?;
    /// assert_eq!(config.endpoint(), "https://gateway.example/v1/chat/completions?tenant=7");
    /// # Ok::<(), adk::openai::OpenAiError>(())
    /// ```
    pub fn endpoint(&self) -> String {
        let (root, query) = match self.base_url.split_once('?') {
            Some((root, query)) => (root, Some(query)),
            None => (self.base_url.as_str(), None),
        };
        let mut endpoint = format!("{}/chat/completions", root.trim_end_matches('/'));
        if let Some(query) = query.filter(|query| !query.is_empty()) {
            endpoint.push('?');
            endpoint.push_str(query);
        }
        endpoint
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_header", &self.api_key_header)
            // Sensitive values (all set through `with_header`) print as `Sensitive`.
            .field("headers", &self.headers)
            .field("model", &self.model)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .field("include_usage", &self.include_usage)
            .field("max_concurrent_tools", &self.max_concurrent_tools)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("tool_call_ids", &self.tool_call_ids)
            .field("reasoning_replay", &self.reasoning_replay)
            .field("options", &self.options)
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

/// The base URL without trailing slashes on its path (the query, if any, untouched).
fn trim_base_url(base_url: &str) -> String {
    match base_url.split_once('?') {
        Some((root, query)) => format!("{}?{query}", root.trim_end_matches('/')),
        None => base_url.trim_end_matches('/').to_owned(),
    }
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
    if url.fragment().is_some() {
        return Err(invalid(
            "the URL has a `#fragment`, which is never sent; remove it".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use std::collections::HashMap;

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
        let config = OpenAiConfig::new("http://127.0.0.1:1/v1/?a=b", "m").unwrap();
        assert_eq!(
            config.endpoint(),
            "http://127.0.0.1:1/v1/chat/completions?a=b"
        );
    }

    fn from(vars: &[(&str, &str)]) -> Option<OpenAiConfig> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        OpenAiConfig::from_lookup(|name| vars.get(name).cloned()).unwrap()
    }

    #[test]
    fn the_openai_sdk_variables_are_read_and_the_adk_names_take_precedence() {
        assert!(from(&[]).is_none());
        let hosted = from(&[("OPENAI_API_KEY", "sk-1")]).unwrap();
        assert_eq!(
            (hosted.base_url.as_str(), hosted.api_key.as_deref()),
            (OPENAI_API_BASE_URL, Some("sk-1"))
        );
        assert_eq!(hosted.model, DEFAULT_MODEL);
        let local = from(&[
            ("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
            ("OPENAI_MODEL", "llama3.2"),
        ])
        .unwrap();
        assert_eq!(
            (local.base_url.as_str(), local.model.as_str()),
            ("http://127.0.0.1:11434/v1", "llama3.2")
        );
        assert_eq!(local.api_key, None);
        let both = from(&[
            ("OPENAI_BASE_URL", "http://a.invalid/v1"),
            ("ADK_OPENAI_BASE_URL", "http://b.invalid/v1"),
            ("OPENAI_API_KEY", "sk-openai"),
            ("ADK_OPENAI_API_KEY", "sk-adk"),
            ("ADK_MODEL", "m-adk"),
            ("OPENAI_MODEL", "m-openai"),
        ])
        .unwrap();
        assert_eq!(
            (
                both.base_url.as_str(),
                both.api_key.as_deref(),
                both.model.as_str()
            ),
            ("http://b.invalid/v1", Some("sk-adk"), "m-adk")
        );
        let vars: HashMap<&str, &str> = HashMap::from([("OPENAI_BASE_URL", "ftp://x")]);
        let error =
            OpenAiConfig::from_lookup(|name| vars.get(name).map(|v| (*v).to_owned())).unwrap_err();
        assert!(error.to_string().contains("OPENAI_BASE_URL"), "{error}");
    }

    #[test]
    fn the_organisation_and_project_are_read_into_their_headers() {
        let config = from(&[
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_ORG_ID", "org-123"),
            ("OPENAI_PROJECT_ID", "proj_456"),
        ])
        .unwrap();
        assert_eq!(config.headers["OpenAI-Organization"], "org-123");
        assert_eq!(config.headers["OpenAI-Project"], "proj_456");
        assert!(
            from(&[("OPENAI_API_KEY", "sk-1")])
                .unwrap()
                .headers
                .is_empty()
        );
        let vars: HashMap<&str, &str> =
            HashMap::from([("OPENAI_API_KEY", "k"), ("OPENAI_PROJECT_ID", "bad\nid")]);
        let error =
            OpenAiConfig::from_lookup(|name| vars.get(name).map(|v| (*v).to_owned())).unwrap_err();
        assert!(error.to_string().contains("OPENAI_PROJECT_ID"), "{error}");
    }

    #[test]
    fn an_invalid_header_is_refused_naming_it() {
        let config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m").unwrap();
        let error = config.with_header("bad header", "x").unwrap_err();
        assert!(error.to_string().contains("bad header"), "{error}");
    }

    #[test]
    fn debug_output_shows_neither_the_key_nor_a_header_set_with_with_header() {
        let hosted = OpenAiConfig::new("http://127.0.0.1:1/v1", "m")
            .unwrap()
            .with_api_key("sk-secret")
            .with_header("x-gateway-token", "gw-secret")
            .unwrap();
        let azure = OpenAiConfig::azure("http://127.0.0.1:1", "gpt-4o", "2024-10-21")
            .unwrap()
            .with_api_key("azure-secret");
        for config in [hosted, azure] {
            let printed = format!("{config:?}");
            assert!(!printed.contains("secret"), "{printed}");
            assert!(printed.contains("<redacted>"), "{printed}");
        }
    }
}

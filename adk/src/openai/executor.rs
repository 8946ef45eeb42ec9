//! [`OpenAiExecutor`]: one streamed chat-completions call per dispatch iteration.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use serde_json::Value;

use crate::context::{Aborted, DispatchContext};
use crate::dispatch::{Executor, ToolCallUpdate};
use crate::events::{GenerationStats, LogLevel};
use crate::pipeline::{BoxError, BoxFuture};
use crate::primitives::{Message, Thought, ToolCall};
use crate::provider::{
    Post, SseParser, TransportError, WaitPhase, build_client, next_chunk, parse_arguments,
    read_capped, run_tool_calls, send, store_tool_calls,
};
use crate::transcript::AnswerParts;

use super::config::{ApiKeyHeader, USER_AGENT as ADK_USER_AGENT};
use super::error::{MAX_ERROR_MESSAGE, cut, excerpt};
use super::request::{ChatRequest, chat_request};
use super::retry::permanent_error;
use super::stream::{Accumulator, ErrorDetails, ReasoningField, StreamDelta};
use super::structured::StructuredSpec;
use super::{OpenAiConfig, OpenAiError, ReasoningReplay, ResponsePart, TimeoutPhase};
use super::{StructuredOutput, StructuredOutputError};

/// A function that shapes each iteration's request before it is sent.
type RequestHook = Arc<dyn Fn(&DispatchContext, &mut ChatRequest) + Send + Sync>;

/// An [`Executor`] that asks an OpenAI-compatible server (the hosted API, Azure OpenAI,
/// llama.cpp's server, vLLM, Ollama, LiteLLM, OpenRouter…) through the chat-completions
/// protocol.
///
/// Each iteration sends the system prompt, standing instructions, messages (with their
/// attachments as content parts), finished tool calls and visible tools (see the
/// [module documentation](super)), shaped by the [request hook](Self::with_request_hook) if
/// one is set, retried as [`RetryPolicy`](super::RetryPolicy) says while no answer has begun,
/// and reads the answer as it streams. Reports come in the order a reader expects:
/// 1. text through [`report_message`](DispatchContext::report_message) and reasoning
///    (`reasoning_content`) through [`report_thought`](DispatchContext::report_thought), as
///    they arrive; each closed when the answer ends;
/// 2. each tool call through [`report_tool_call`](DispatchContext::report_tool_call), once, with
///    its name and whole arguments;
/// 3. token usage through [`report_generation_stats`](DispatchContext::report_generation_stats).
///
/// Then reasoning is stored as a [`Thought`] and text as an assistant [`Message`], and each is
/// linked, with the answer's tool calls, to one answer ([`AnswerParts::for_model_call`]: reasoning,
/// then text, then the calls in the model's order), so [`crate::transcript`] and the next
/// request see them as one answer whatever order they were written in. When the
/// model called tools, each call is stored, the calls run concurrently (at most
/// [`max_concurrent_tools`](OpenAiConfig::max_concurrent_tools) at a time) with
/// [`execute_tool`](DispatchContext::execute_tool), and each is reported and mutated with its
/// result in the order the model made them (a failed call keeps the error as its result, for
/// the model to read); the iteration ends without an ack, so the next one sends the results
/// back. Otherwise the dispatch is acknowledged.
///
/// A failed or cancelled call closes every stream it opened (`is_interrupted`) before it
/// returns. Stored ids are `{dispatch id}-{iteration}-…`, unique within the turn even when the
/// provider repeats its ids across responses. A cancelled turn or dispatch drops the request at
/// once.
///
/// ```no_run
/// use adk::TurnRunner;
/// use adk::context::RawTurnContext;
/// use adk::openai::{OpenAiConfig, OpenAiExecutor};
/// use adk::storage::NoopStorage;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "qwen2.5-7b-instruct")?;
/// let runner = TurnRunner::builder()
///     .storage(NoopStorage::new())
///     .executor(OpenAiExecutor::new(config)?)
///     .build();
/// let outcome = runner
///     .run(RawTurnContext::new("conversation-1", "You are terse."))
///     .await?;
/// println!("{:?}", outcome.status);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct OpenAiExecutor {
    config: OpenAiConfig,
    client: reqwest::Client,
    hook: Option<RequestHook>,
    structured: Option<StructuredSpec>,
    /// The field the server last sent reasoning in, for [`ReasoningReplay::Auto`]; shared by
    /// clones, which talk to the same server.
    reasoning_seen: Arc<Mutex<Option<ReasoningField>>>,
}

impl fmt::Debug for OpenAiExecutor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiExecutor")
            .field("config", &self.config)
            .field("client", &self.client)
            .field("hook", &self.hook.as_ref().map(|_| "<fn>"))
            .field("structured", &self.structured)
            .finish()
    }
}

impl OpenAiExecutor {
    /// An executor for `config`, with its own connection pool.
    ///
    /// TLS uses rustls with the `ring` provider, installed as the process default unless
    /// another provider was installed first.
    ///
    /// # Errors
    ///
    /// [`OpenAiError::Client`] when the HTTP client cannot be set up.
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        let client = build_client(config.request_timeout)
            .map_err(|source| OpenAiError::Client { source })?;
        Ok(Self::with_client(config, client))
    }

    /// An executor for `config` that sends through `client`: your proxies, TLS roots,
    /// connection pool. Headers, timeouts and retries still come from `config`.
    ///
    /// ```
    /// use adk::openai::{OpenAiConfig, OpenAiExecutor};
    ///
    /// # fn build() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = reqwest::Client::builder()
    ///     .proxy(reqwest::Proxy::https("http://proxy.internal:3128")?)
    ///     .build()?;
    /// let config = OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o-mini")?;
    /// let executor = OpenAiExecutor::with_client(config, client);
    /// # let _ = executor;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_client(config: OpenAiConfig, client: reqwest::Client) -> Self {
        Self {
            config,
            client,
            hook: None,
            structured: None,
            reasoning_seen: Arc::default(),
        }
    }

    /// The same executor calling `hook` before each iteration's request is sent, with the
    /// dispatch context (its iteration, messages, tool calls, stash) and the request to change:
    /// `tool_choice`, `response_format`, sampling options, per-request headers…
    ///
    /// ```
    /// use adk::openai::{OpenAiConfig, OpenAiExecutor};
    /// use serde_json::json;
    ///
    /// # fn build() -> Result<(), adk::openai::OpenAiError> {
    /// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "local")?;
    /// // A tool call first, then a free answer: `required` only on the first iteration.
    /// let executor = OpenAiExecutor::new(config)?.with_request_hook(|ctx, request| {
    ///     if ctx.iteration() == 0 {
    ///         request.body.insert("tool_choice".to_owned(), json!("required"));
    ///     }
    ///     request.body.insert("temperature".to_owned(), json!(0.2));
    /// });
    /// # let _ = executor;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_request_hook(
        mut self,
        hook: impl Fn(&DispatchContext, &mut ChatRequest) + Send + Sync + 'static,
    ) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// The same executor asking for `T` on every iteration (`response_format`, strict mode)
    /// and checking the final answer against it: a reply that does not fit fails the dispatch
    /// with [`OpenAiError::StructuredOutput`] instead of being stored. Read the stored reply
    /// with [`StructuredOutput::from_reply`]. A request hook runs after the format is set and
    /// may change it.
    ///
    /// ```
    /// use adk::openai::{OpenAiConfig, OpenAiExecutor, StructuredOutput};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
    /// struct Verdict {
    ///     approved: bool,
    ///     reason: String,
    /// }
    ///
    /// # fn build() -> Result<(), adk::openai::OpenAiError> {
    /// let config = OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o-mini")?;
    /// let executor = OpenAiExecutor::new(config)?.with_structured_output::<Verdict>();
    /// # let _ = executor;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_structured_output<T: StructuredOutput>(mut self) -> Self {
        self.structured = Some(StructuredSpec::of::<T>());
        self
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    async fn run(&self, ctx: &mut DispatchContext) -> Result<(), BoxError> {
        let cancellation = ctx.cancellation().clone();
        let outcome = tokio::select! {
            biased;
            () = cancellation.cancelled() => Err(Aborted::new(
                "the turn was cancelled while the model was answering",
            )
            .into()),
            answered = self.answer(ctx) => answered,
        };
        // Every exit path closes what it opened: a listener waiting for `is_complete` is never
        // left with a message that never finishes.
        if let Err(error) = &outcome {
            ctx.interrupt_open_streams(&error.to_string());
        }
        outcome
    }

    async fn answer(&self, ctx: &mut DispatchContext) -> Result<(), BoxError> {
        let seen = *self
            .reasoning_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let reasoning = match self.config.reasoning_replay {
            ReasoningReplay::Auto => seen.map(ReasoningField::name),
            ReasoningReplay::ReasoningContent => Some("reasoning_content"),
            ReasoningReplay::Reasoning => Some("reasoning"),
            ReasoningReplay::Omit => None,
        };
        let mut request = chat_request(ctx, &self.config, reasoning).await;
        if let Some(structured) = &self.structured {
            request.body.insert(
                "response_format".to_owned(),
                structured.response_format.clone(),
            );
        }
        if let Some(hook) = &self.hook {
            hook(ctx, &mut request);
        }
        if let Some(n) = request.body.get("n").filter(|n| n.as_u64() != Some(1)) {
            return Err(OpenAiError::InvalidConfig {
                field: "n",
                value: n.to_string(),
                reason: "a dispatch stores one answer, so several choices cannot be read; \
                         remove `n` or set it to 1"
                    .to_owned(),
            }
            .into());
        }
        let prefix = format!("{}-{}", ctx.dispatch_id(), ctx.iteration());
        let count = |field: &str| {
            request
                .body
                .get(field)
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        };
        ctx.log(
            LogLevel::Debug,
            "openai.request",
            format!("asking {} at {}", self.config.model, self.config.endpoint()),
            Some(serde_json::json!({
                "model": self.config.model,
                "messages": count("messages"),
                "tools": count("tools"),
            })),
        );
        let started = Instant::now();
        let answer = match self.config.total_timeout {
            Some(limit) => tokio::time::timeout(limit, self.call_model(ctx, &request, &prefix))
                .await
                .map_err(|_| OpenAiError::Timeout {
                    phase: TimeoutPhase::Total,
                    after: limit,
                })??,
            None => self.call_model(ctx, &request, &prefix).await?,
        };

        if let Some(field) = answer.reasoning_field {
            *self
                .reasoning_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(field);
        }
        if !answer.refusal.is_empty() {
            ctx.log(
                LogLevel::Warn,
                "openai.refusal",
                "the model refused to answer",
                Some(Value::String(answer.refusal.clone())),
            );
            return Err(OpenAiError::Refused {
                refusal: answer.refusal,
            }
            .into());
        }

        // The final answer (no tool calls) is the one that must be the structured output.
        if let Some(structured) = &self.structured
            && answer.tool_calls().next().is_none()
        {
            let checked = if answer.text.is_empty() {
                Err(StructuredOutputError::NoReply)
            } else {
                (structured.check)(&answer.text)
            };
            checked.map_err(|source| OpenAiError::StructuredOutput { source })?;
        }

        let thought_id = format!("{prefix}-thought");
        if !answer.reasoning.is_empty() {
            ctx.report_thought(&thought_id, "", true)?;
        }
        let message_id = format!("{prefix}-message");
        if !answer.text.is_empty() {
            ctx.report_message(&message_id, "", true)?;
        }
        // One answer, linked explicitly: its records are written at different moments, so their
        // creation times cannot say how they belong together (see `crate::transcript`).
        let mut parts = AnswerParts::for_model_call(ctx);
        let thought_link = (!answer.reasoning.is_empty()).then(|| parts.next_link());
        let message_link = (!answer.text.is_empty()).then(|| parts.next_link());
        let calls = assemble_tool_calls(&answer, &mut parts)?;
        for (call, _) in &calls {
            ctx.report_tool_call(
                call.id(),
                ToolCallUpdate::new()
                    .tool(call.tool())
                    .args(Value::Object(call.args().clone())),
            )?;
        }
        self.report_stats(ctx, &answer, started);

        if let Some(link) = thought_link {
            ctx.store_thought(
                Thought::new(thought_id, answer.reasoning.clone())?.with_answer(link)?,
            )
            .await?;
        }
        if let Some(link) = message_link {
            ctx.store_message(
                Message::assistant(message_id, answer.text.clone())?.with_answer(link)?,
            )
            .await?;
        }
        if calls.is_empty() {
            if answer.text.is_empty() {
                ctx.log(
                    LogLevel::Warn,
                    "openai.empty_answer",
                    "the model answered with neither text nor tool calls",
                    answer.finish_reason.clone().map(Value::String),
                );
            }
            ctx.ack()?;
            return Ok(());
        }
        store_tool_calls(ctx, &calls).await?;
        run_tool_calls(ctx, calls, self.config.max_concurrent_tools).await
    }

    /// Sends the request (retrying while no answer has begun) and reads the answer, reporting
    /// text and reasoning as they arrive.
    async fn call_model(
        &self,
        ctx: &mut DispatchContext,
        request: &ChatRequest,
        prefix: &str,
    ) -> Result<Accumulator, BoxError> {
        let response = self.send(ctx, request).await?;
        let message_id = format!("{prefix}-message");
        let thought_id = format!("{prefix}-thought");
        let mut answer = Accumulator::new(prefix, self.config.max_answer_bytes);

        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            // Asked for (`stream: false`), or a server that ignored `stream: true`: one whole
            // answer, or an error reported with a 200 status.
            let limit = self.config.max_answer_bytes;
            let (bytes, truncated) =
                read_capped::<OpenAiError>(response, limit, self.config.stream_idle_timeout)
                    .await?;
            if truncated {
                return Err(OpenAiError::ResponseTooLarge {
                    part: ResponsePart::Answer,
                    limit,
                    excerpt: excerpt(&bytes),
                }
                .into());
            }
            let text = String::from_utf8_lossy(&bytes);
            let deltas = answer.apply_completion(&text)?;
            report(ctx, &message_id, &thought_id, deltas)?;
            return Ok(answer);
        }

        let mut bytes = response.bytes_stream();
        let mut parser = SseParser::new(self.config.max_line_bytes);
        while !answer.done {
            let next =
                next_chunk::<OpenAiError>(&mut bytes, self.config.stream_idle_timeout).await?;
            let events = match next {
                Some(chunk) => parser.push(&chunk).map_err(OpenAiError::from)?,
                None => {
                    if let Some(event) = parser.finish().map_err(OpenAiError::from)? {
                        let deltas = answer.apply_event(&event)?;
                        report(ctx, &message_id, &thought_id, deltas)?;
                    }
                    break;
                }
            };
            for event in events {
                let deltas = answer.apply_event(&event)?;
                report(ctx, &message_id, &thought_id, deltas)?;
                if answer.done {
                    break;
                }
            }
        }
        if !answer.done && answer.finish_reason.is_none() {
            return Err(OpenAiError::MalformedStream {
                reason: "the stream ended before `data: [DONE]` and without a finish_reason"
                    .to_owned(),
                data: String::new(),
            }
            .into());
        }
        Ok(answer)
    }

    /// Posts the request until a success status arrives, a failure is final, or the retries
    /// run out. Nothing of the answer has been read when this returns, so retrying here never
    /// repeats text already reported.
    async fn send(
        &self,
        ctx: &DispatchContext,
        request: &ChatRequest,
    ) -> Result<reqwest::Response, OpenAiError> {
        let url = self.config.endpoint();
        let post = Post {
            client: &self.client,
            url: &url,
            headers: self.headers(request)?,
            body: bytes::Bytes::from(serde_json::to_vec(&request.body).unwrap_or_default()),
            request_timeout: self.config.request_timeout,
            idle_timeout: self.config.stream_idle_timeout,
            retry: self.config.retry,
            log_kind: "openai",
        };
        send(ctx, post, status_error, permanent_error).await
    }

    /// The headers of one request: content negotiation, `User-Agent`, the key, then the
    /// configured headers, then the request's own (each replacing earlier ones of its name).
    fn headers(&self, request: &ChatRequest) -> Result<HeaderMap, OpenAiError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static(if self.config.stream {
                "text/event-stream"
            } else {
                "application/json"
            }),
        );
        headers.insert(USER_AGENT, HeaderValue::from_static(ADK_USER_AGENT));
        if let Some(api_key) = &self.config.api_key {
            let invalid = |_| OpenAiError::InvalidConfig {
                field: "api_key",
                value: "<redacted>".to_owned(),
                reason: "the key holds characters an HTTP header cannot carry".to_owned(),
            };
            let (name, mut value) = match &self.config.api_key_header {
                ApiKeyHeader::Bearer => (
                    AUTHORIZATION,
                    HeaderValue::from_str(&format!("Bearer {api_key}")).map_err(invalid)?,
                ),
                ApiKeyHeader::Named(name) => (
                    name.clone(),
                    HeaderValue::from_str(api_key).map_err(invalid)?,
                ),
            };
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        for source in [&self.config.headers, &request.headers] {
            for name in source.keys() {
                headers.remove(name);
                for value in source.get_all(name) {
                    headers.append(name.clone(), value.clone());
                }
            }
        }
        Ok(headers)
    }

    fn report_stats(&self, ctx: &DispatchContext, answer: &Accumulator, started: Instant) {
        let mut stats = GenerationStats::new();
        let count = |field: &str| {
            answer
                .usage
                .as_ref()
                .and_then(|usage| usage.get(field))
                .and_then(Value::as_u64)
        };
        stats.prompt_tokens = count("prompt_tokens");
        stats.completion_tokens = count("completion_tokens");
        stats.total_tokens = count("total_tokens");
        stats.cache_read_tokens = answer
            .usage
            .as_ref()
            .and_then(|usage| usage.pointer("/prompt_tokens_details/cached_tokens"))
            .and_then(Value::as_u64);
        stats.total_duration_ns = u64::try_from(started.elapsed().as_nanos()).ok();
        stats.finish_reason = answer.finish_reason.clone();
        stats.model = answer
            .model
            .clone()
            .or_else(|| Some(self.config.model.clone()));
        stats.provider = reqwest::Url::parse(&self.config.base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned));
        stats.raw = answer.usage.clone();
        ctx.report_generation_stats(stats);
    }
}

impl Executor for OpenAiExecutor {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(self.run(ctx))
    }
}

/// The error for a non-success response, from its body (read up to
/// [`MAX_ERROR_BODY`](super::MAX_ERROR_BODY)).
fn status_error(
    status: StatusCode,
    _headers: &HeaderMap,
    bytes: &[u8],
    truncated: bool,
) -> OpenAiError {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let details = serde_json::from_str::<Value>(&text)
        .map(|value| ErrorDetails::of(&value))
        .unwrap_or_default();
    let message = details.message.unwrap_or_else(|| match text.trim() {
        "" => status.canonical_reason().unwrap_or("no message").to_owned(),
        trimmed if trimmed.len() > MAX_ERROR_MESSAGE || truncated => {
            format!("{} (truncated)", cut(trimmed, MAX_ERROR_MESSAGE))
        }
        trimmed => trimmed.to_owned(),
    });
    OpenAiError::Status {
        status: status.as_u16(),
        message,
        kind: details.kind,
        code: details.code,
        param: details.param,
        body: text,
        body_truncated: truncated,
    }
}

impl TransportError for OpenAiError {
    fn connect(url: &str, source: reqwest::Error) -> Self {
        Self::Connect {
            url: url.to_owned(),
            source,
        }
    }

    fn timed_out(phase: WaitPhase, after: Duration) -> Self {
        let phase = match phase {
            WaitPhase::Response => TimeoutPhase::Response,
            WaitPhase::Stream => TimeoutPhase::Stream,
        };
        Self::Timeout { phase, after }
    }

    fn broken(source: reqwest::Error) -> Self {
        Self::Stream { source }
    }

    fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn report(
    ctx: &mut DispatchContext,
    message_id: &str,
    thought_id: &str,
    deltas: Vec<StreamDelta>,
) -> Result<(), BoxError> {
    for delta in deltas {
        match delta {
            StreamDelta::Text(text) => {
                ctx.report_message(message_id, &text, false)?;
            }
            StreamDelta::Reasoning(text) => {
                ctx.report_thought(thought_id, &text, false)?;
            }
        }
    }
    Ok(())
}

/// The answer's tool calls as records, each with the problem to report to the model instead of
/// running it (arguments that are not a JSON object).
fn assemble_tool_calls(
    answer: &Accumulator,
    parts: &mut AnswerParts,
) -> Result<Vec<(ToolCall, Option<String>)>, BoxError> {
    let mut calls = Vec::new();
    for assembled in answer.tool_calls() {
        if assembled.name.is_empty() {
            return Err(OpenAiError::MalformedStream {
                reason: format!(
                    "tool call {:?} arrived without a function name",
                    assembled.provider_id.as_deref().unwrap_or(&assembled.id)
                ),
                data: excerpt(assembled.arguments.as_bytes()),
            }
            .into());
        }
        let (args, problem) = parse_arguments(&assembled.name, &assembled.arguments);
        let call = ToolCall::new(
            assembled.id.clone(),
            assembled.name.clone(),
            Value::Object(args),
        )?
        .with_answer(parts.next_link())?;
        calls.push((call, problem));
    }
    Ok(calls)
}

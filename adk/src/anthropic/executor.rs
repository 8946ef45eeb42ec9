//! [`AnthropicExecutor`]: one streamed Messages API call per dispatch iteration.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT,
};
use serde_json::{Value, json};

use crate::context::{Aborted, DispatchContext};
use crate::dispatch::{Executor, ToolCallUpdate};
use crate::events::{GenerationStats, LogLevel};
use crate::pipeline::{BoxError, BoxFuture};
use crate::primitives::{Message, Thought, ToolCall};
use crate::provider::{
    Post, SseParser, build_client, excerpt, next_chunk, parse_arguments, read_capped,
    run_tool_calls, send, store_tool_calls,
};
use crate::transcript::AnswerParts;

use super::error::status_error;
use super::request::{MessagesRequest, messages_request};
use super::stream::{Accumulator, Block, StreamDelta};
use super::{AnthropicConfig, AnthropicError, REPLAY_TAG, ResponsePart, TimeoutPhase};

/// The `User-Agent` of every request unless a header overrides it.
const ADK_USER_AGENT: &str = concat!(env!("CARGO_PKG_NAME"), "/", env!("CARGO_PKG_VERSION"));

/// A function that shapes each iteration's request before it is sent.
type RequestHook = Arc<dyn Fn(&DispatchContext, &mut MessagesRequest) + Send + Sync>;

/// An [`Executor`] that asks a model through Anthropic's Messages API (the hosted API, or a
/// proxy that speaks it).
///
/// Each iteration sends the request described in the [module documentation](super), shaped by
/// the [request hook](Self::with_request_hook) if one is set, retried as
/// [`RetryPolicy`](super::RetryPolicy) says while no answer has begun, and reads the answer as
/// it streams:
/// 1. thinking through [`report_thought`](DispatchContext::report_thought) and text through
///    [`report_message`](DispatchContext::report_message) as they arrive, one stream per content
///    block, each closed when the answer ends;
/// 2. each tool call through [`report_tool_call`](DispatchContext::report_tool_call), once,
///    with its name and whole input;
/// 3. token usage, cache reads and writes included, through
///    [`report_generation_stats`](DispatchContext::report_generation_stats).
///
/// Then each block is stored in the answer's order, linked to one answer
/// ([`AnswerParts::for_model_call`]): a thinking or redacted thinking block as a [`Thought`]
/// whose payload is the block exactly as it came (signature included) tagged
/// [`REPLAY_TAG`], which the next request sends back unchanged; a text block
/// as an assistant [`Message`]; a `tool_use` block as a [`ToolCall`]. When the model called
/// tools, the calls run concurrently (at most
/// [`max_concurrent_tools`](AnthropicConfig::max_concurrent_tools) at a time), each result is
/// recorded in the model's order (a failed call keeps its error, sent back with `is_error`),
/// and the iteration ends without an ack, so the next one sends the results back. Otherwise
/// the dispatch is acknowledged.
///
/// A failed or cancelled call closes every stream it opened (`is_interrupted`) before it
/// returns.
///
/// ```no_run
/// use adk::TurnRunner;
/// use adk::anthropic::{AnthropicConfig, AnthropicExecutor};
/// use adk::context::RawTurnContext;
/// use adk::storage::NoopStorage;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = AnthropicConfig::from_env()?.ok_or("set ANTHROPIC_API_KEY")?;
/// let runner = TurnRunner::builder()
///     .storage(NoopStorage::new())
///     .executor(AnthropicExecutor::new(config)?)
///     .build();
/// let outcome = runner
///     .run(RawTurnContext::new("conversation-1", "You are terse.").user_message("Hi"))
///     .await?;
/// println!("{:?}", outcome.status);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AnthropicExecutor {
    config: AnthropicConfig,
    client: reqwest::Client,
    hook: Option<RequestHook>,
}

impl fmt::Debug for AnthropicExecutor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("AnthropicExecutor")
            .field("config", &self.config)
            .field("client", &self.client)
            .field("hook", &self.hook.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

impl AnthropicExecutor {
    /// An executor for `config`, with its own connection pool (reqwest with rustls on `ring`).
    ///
    /// # Errors
    ///
    /// [`AnthropicError::Client`] when the HTTP client cannot be set up.
    pub fn new(config: AnthropicConfig) -> Result<Self, AnthropicError> {
        let client = build_client(config.request_timeout)
            .map_err(|source| AnthropicError::Client { source })?;
        Ok(Self::with_client(config, client))
    }

    /// An executor for `config` that sends through `client` (your proxies, TLS roots).
    pub fn with_client(config: AnthropicConfig, client: reqwest::Client) -> Self {
        Self {
            config,
            client,
            hook: None,
        }
    }

    /// The same executor calling `hook` before each iteration's request is sent, with the
    /// dispatch context and the request to change.
    ///
    /// ```
    /// use adk::anthropic::{AnthropicConfig, AnthropicExecutor};
    /// use serde_json::json;
    ///
    /// # fn build() -> Result<(), adk::anthropic::AnthropicError> {
    /// let config = AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5")?;
    /// // A tool call first, then a free answer.
    /// let executor = AnthropicExecutor::new(config)?.with_request_hook(|ctx, request| {
    ///     if ctx.iteration() == 0 && request.body.contains_key("tools") {
    ///         request.body.insert("tool_choice".to_owned(), json!({"type": "any"}));
    ///     }
    /// });
    /// # let _ = executor;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_request_hook(
        mut self,
        hook: impl Fn(&DispatchContext, &mut MessagesRequest) + Send + Sync + 'static,
    ) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &AnthropicConfig {
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
        if let Err(error) = &outcome {
            ctx.interrupt_open_streams(&error.to_string());
        }
        outcome
    }

    async fn answer(&self, ctx: &mut DispatchContext) -> Result<(), BoxError> {
        let mut request = messages_request(ctx, &self.config).await;
        if let Some(hook) = &self.hook {
            hook(ctx, &mut request);
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
            "anthropic.request",
            format!("asking {} at {}", self.config.model, self.config.endpoint()),
            Some(json!({
                "model": self.config.model,
                "messages": count("messages"),
                "tools": count("tools"),
            })),
        );
        let started = Instant::now();
        let answer = match self.config.total_timeout {
            Some(limit) => tokio::time::timeout(limit, self.call_model(ctx, &request, &prefix))
                .await
                .map_err(|_| AnthropicError::Timeout {
                    phase: TimeoutPhase::Total,
                    after: limit,
                })??,
            None => self.call_model(ctx, &request, &prefix).await?,
        };
        if answer.stop_reason.as_deref() == Some("refusal") {
            let text = answer
                .blocks
                .iter()
                .filter_map(|(_, block, _)| match block {
                    Block::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("");
            return Err(AnthropicError::Refused { text }.into());
        }

        // Close every stream, then report the calls and the usage.
        for (position, (_, block, _)) in answer.blocks.iter().enumerate() {
            match block {
                Block::Text(text) if !text.is_empty() => {
                    ctx.report_message(&block_id(&prefix, "message", position), "", true)?;
                }
                Block::Thinking { thinking, .. } if !thinking.is_empty() => {
                    ctx.report_thought(&block_id(&prefix, "thought", position), "", true)?;
                }
                _ => {}
            }
        }
        let mut parts = AnswerParts::for_model_call(ctx);
        let mut records = Vec::new();
        for (position, (index, block, _)) in answer.blocks.iter().enumerate() {
            if let Some(record) = record_of(&prefix, position, *index, block, &mut parts)? {
                records.push(record);
            }
        }
        for record in &records {
            if let Record::Call(call, _) = record {
                ctx.report_tool_call(
                    call.id(),
                    ToolCallUpdate::new()
                        .tool(call.tool())
                        .args(Value::Object(call.args().clone())),
                )?;
            }
        }
        self.report_stats(ctx, &answer, started);

        let mut calls = Vec::new();
        for record in records {
            match record {
                Record::Thought(thought) => ctx.store_thought(thought).await?,
                Record::Message(message) => ctx.store_message(message).await?,
                Record::Call(call, problem) => calls.push((call, problem)),
            }
        }
        if calls.is_empty() {
            ctx.ack()?;
            return Ok(());
        }
        store_tool_calls(ctx, &calls).await?;
        run_tool_calls(ctx, calls, self.config.max_concurrent_tools).await
    }

    /// Sends the request (retrying while no answer has begun) and reads the answer, reporting
    /// thinking and text as they arrive.
    async fn call_model(
        &self,
        ctx: &mut DispatchContext,
        request: &MessagesRequest,
        prefix: &str,
    ) -> Result<Accumulator, BoxError> {
        let url = self.config.endpoint();
        let post = Post {
            client: &self.client,
            url: &url,
            headers: self.headers(request)?,
            body: bytes::Bytes::from(serde_json::to_vec(&request.body).unwrap_or_default()),
            request_timeout: self.config.request_timeout,
            idle_timeout: self.config.stream_idle_timeout,
            retry: self.config.retry,
            log_kind: "anthropic",
        };
        let response = send(ctx, post, status_error, |_| false).await?;
        let idle = self.config.stream_idle_timeout;
        let mut answer = Accumulator::new(self.config.max_answer_bytes);
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            // A server that ignored `stream: true`: one whole message, or an error.
            let limit = self.config.max_answer_bytes;
            let (bytes, truncated) = read_capped::<AnthropicError>(response, limit, idle).await?;
            if truncated {
                return Err(AnthropicError::ResponseTooLarge {
                    part: ResponsePart::Answer,
                    limit,
                    excerpt: excerpt(&bytes),
                }
                .into());
            }
            let deltas = answer.apply_message(&String::from_utf8_lossy(&bytes))?;
            report(ctx, prefix, deltas)?;
            return Ok(answer);
        }
        let mut bytes = response.bytes_stream();
        let mut parser = SseParser::new(self.config.max_line_bytes);
        while !answer.done {
            let Some(chunk) = next_chunk::<AnthropicError>(&mut bytes, idle).await? else {
                // The body ended: an event it ended inside is still read.
                if let Some(event) = parser.finish().map_err(AnthropicError::from)? {
                    let deltas = answer.apply_event(&event)?;
                    report(ctx, prefix, deltas)?;
                }
                break;
            };
            for event in parser.push(&chunk).map_err(AnthropicError::from)? {
                let deltas = answer.apply_event(&event)?;
                report(ctx, prefix, deltas)?;
                if answer.done {
                    break;
                }
            }
        }
        answer.finish()?;
        Ok(answer)
    }

    /// The headers of one request: content negotiation, `User-Agent`, the key or token,
    /// `anthropic-version`, `anthropic-beta`, then the configured headers, then the request's
    /// own (each replacing earlier ones of its name).
    fn headers(&self, request: &MessagesRequest) -> Result<HeaderMap, AnthropicError> {
        let invalid = |field: &'static str| AnthropicError::InvalidConfig {
            field,
            value: "<redacted>".to_owned(),
            reason: "it holds characters an HTTP header cannot carry".to_owned(),
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(USER_AGENT, HeaderValue::from_static(ADK_USER_AGENT));
        if let Some(key) = &self.config.api_key {
            let mut value = HeaderValue::from_str(key).map_err(|_| invalid("api_key"))?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        if let Some(token) = &self.config.auth_token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| invalid("auth_token"))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let version = HeaderValue::from_str(&self.config.version).map_err(|_| {
            AnthropicError::InvalidConfig {
                field: "version",
                value: self.config.version.clone(),
                reason: "not a header value".to_owned(),
            }
        })?;
        headers.insert(HeaderName::from_static("anthropic-version"), version);
        if !self.config.betas.is_empty() {
            let betas = self.config.betas.join(",");
            let value =
                HeaderValue::from_str(&betas).map_err(|_| AnthropicError::InvalidConfig {
                    field: "betas",
                    value: betas.clone(),
                    reason: "not a header value".to_owned(),
                })?;
            headers.insert(HeaderName::from_static("anthropic-beta"), value);
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

    /// The usage as [`GenerationStats`]: `prompt_tokens` counts every input token, cached or
    /// not (`input_tokens + cache_read_input_tokens + cache_creation_input_tokens`).
    fn report_stats(&self, ctx: &DispatchContext, answer: &Accumulator, started: Instant) {
        let mut stats = GenerationStats::new();
        let read = answer.tokens("cache_read_input_tokens");
        let written = answer.tokens("cache_creation_input_tokens");
        let input = answer.tokens("input_tokens");
        stats.prompt_tokens = input.map(|input| input + read.unwrap_or(0) + written.unwrap_or(0));
        stats.completion_tokens = answer.tokens("output_tokens");
        stats.total_tokens = match (stats.prompt_tokens, stats.completion_tokens) {
            (None, None) => None,
            (prompt, completion) => Some(prompt.unwrap_or(0) + completion.unwrap_or(0)),
        };
        stats.cache_read_tokens = read;
        stats.cache_write_tokens = written;
        stats.total_duration_ns = u64::try_from(started.elapsed().as_nanos()).ok();
        stats.finish_reason = answer.stop_reason.clone();
        stats.model = answer
            .model
            .clone()
            .or_else(|| Some(self.config.model.clone()));
        stats.provider = reqwest::Url::parse(&self.config.base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned));
        stats.raw = Some(Value::Object(answer.usage.clone()));
        ctx.report_generation_stats(stats);
    }
}

impl Executor for AnthropicExecutor {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(self.run(ctx))
    }
}

/// One stored record of the answer.
enum Record {
    Thought(Thought),
    Message(Message),
    /// A call, with the problem to report to the model instead of running it.
    Call(ToolCall, Option<String>),
}

/// The id of block `position`'s stream and record.
fn block_id(prefix: &str, kind: &str, position: usize) -> String {
    format!("{prefix}-{kind}-{position}")
}

/// The record block `position` is stored as (none for an empty text block).
fn record_of(
    prefix: &str,
    position: usize,
    index: u64,
    block: &Block,
    parts: &mut AnswerParts,
) -> Result<Option<Record>, BoxError> {
    Ok(Some(match block {
        Block::Text(text) if text.is_empty() => return Ok(None),
        Block::Text(text) => Record::Message(
            Message::assistant(block_id(prefix, "message", position), text.clone())?
                .with_answer(parts.next_link())?,
        ),
        Block::Thinking {
            thinking,
            signature,
            ..
        } => {
            let payload = json!({"type": "thinking", "thinking": thinking, "signature": signature});
            let id = block_id(prefix, "thought", position);
            let thought = if thinking.is_empty() {
                Thought::from_payload(id, payload, REPLAY_TAG)?
            } else {
                Thought::new(id, thinking.clone())?.with_payload(payload, REPLAY_TAG)?
            };
            Record::Thought(thought.with_answer(parts.next_link())?)
        }
        Block::Redacted { data } => Record::Thought(
            Thought::from_payload(
                block_id(prefix, "thought", position),
                json!({"type": "redacted_thinking", "data": data}),
                REPLAY_TAG,
            )?
            .with_answer(parts.next_link())?,
        ),
        Block::ToolUse {
            id,
            name,
            json,
            initial,
        } => {
            if name.is_empty() {
                return Err(AnthropicError::MalformedStream {
                    reason: format!("tool_use block {index} arrived without a name"),
                    data: excerpt(json.as_bytes()),
                }
                .into());
            }
            let (args, problem) = if json.trim().is_empty() {
                (initial.clone(), None)
            } else {
                parse_arguments(name, json)
            };
            let stored_id = if id.is_empty() {
                format!("{prefix}-call-{index}")
            } else {
                format!("{prefix}-{id}")
            };
            let call = ToolCall::new(stored_id, name.clone(), Value::Object(args))?
                .with_answer(parts.next_link())?;
            Record::Call(call, problem)
        }
    }))
}

fn report(
    ctx: &mut DispatchContext,
    prefix: &str,
    deltas: Vec<StreamDelta>,
) -> Result<(), BoxError> {
    for delta in deltas {
        match delta {
            StreamDelta::Text(position, text) => {
                ctx.report_message(&block_id(prefix, "message", position), &text, false)?;
            }
            StreamDelta::Thinking(position, text) => {
                ctx.report_thought(&block_id(prefix, "thought", position), &text, false)?;
            }
        }
    }
    Ok(())
}

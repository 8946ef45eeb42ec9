//! [`OpenAiExecutor`]: one streamed chat-completions call per dispatch iteration.

use std::time::Instant;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Map, Value};

use crate::context::{Aborted, DispatchContext};
use crate::dispatch::{Executor, ToolCallUpdate};
use crate::events::{GenerationStats, LogLevel};
use crate::pipeline::{BoxError, BoxFuture};
use crate::primitives::{Message, Thought, ToolCall, ToolCallResults, ToolOutput};

use super::request::chat_request;
use super::stream::{Accumulator, SseParser, StreamDelta, error_message};
use super::{OpenAiConfig, OpenAiError, TimeoutPhase};

/// An [`Executor`] that asks an OpenAI-compatible server (the hosted API, llama.cpp's server,
/// vLLM, Ollama…) through the streaming chat-completions protocol.
///
/// Each iteration sends the system prompt, standing instructions, messages, finished tool calls
/// and visible tools (see the [module documentation](super)), and streams the answer: text
/// through [`report_message`](DispatchContext::report_message), reasoning
/// (`reasoning_content`) through [`report_thought`](DispatchContext::report_thought), tool calls
/// through [`report_tool_call`](DispatchContext::report_tool_call) and token usage through
/// [`report_generation_stats`](DispatchContext::report_generation_stats). Then:
/// - reasoning is stored as a [`Thought`], text as an assistant [`Message`];
/// - when the model called tools, each call is stored, executed with
///   [`execute_tool`](DispatchContext::execute_tool) and mutated with its results (a failed call
///   keeps the error as its result, for the model to read), and the iteration ends without an
///   ack, so the next one sends the results back;
/// - otherwise the dispatch is acknowledged.
///
/// Stored ids are `{dispatch id}-{iteration}-…`, unique within the turn even when the provider
/// repeats its ids across responses. A cancelled turn or dispatch drops the request at once.
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
#[derive(Clone, Debug)]
pub struct OpenAiExecutor {
    config: OpenAiConfig,
    client: reqwest::Client,
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
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Losing a race to another installer is fine: any installed provider will do.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.request_timeout)
            .build()
            .map_err(|source| OpenAiError::Client { source })?;
        Ok(Self { config, client })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    async fn run(&self, ctx: &mut DispatchContext) -> Result<(), BoxError> {
        let cancellation = ctx.cancellation().clone();
        tokio::select! {
            biased;
            () = cancellation.cancelled() => Err(Aborted::new(
                "the turn was cancelled while the model was answering",
            )
            .into()),
            answered = self.answer(ctx) => answered,
        }
    }

    async fn answer(&self, ctx: &mut DispatchContext) -> Result<(), BoxError> {
        let body = chat_request(ctx, &self.config);
        let prefix = format!("{}-{}", ctx.dispatch_id(), ctx.iteration());
        let count = |field: &str| body[field].as_array().map_or(0, Vec::len);
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
        let answer = self.stream(ctx, &body, &prefix).await?;
        self.report_stats(ctx, &answer, started);

        let thought_id = format!("{prefix}-thought");
        if !answer.reasoning.is_empty() {
            ctx.report_thought(&thought_id, "", true)?;
            ctx.store_thought(Thought::new(thought_id, answer.reasoning.clone())?)
                .await?;
        }
        let message_id = format!("{prefix}-message");
        if !answer.text.is_empty() {
            ctx.report_message(&message_id, "", true)?;
            ctx.store_message(Message::assistant(message_id, answer.text.clone())?)
                .await?;
        }
        if !answer.has_tool_calls() {
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
        run_tool_calls(ctx, &answer).await
    }

    /// Sends the request and streams the answer, reporting deltas as they arrive.
    async fn stream(
        &self,
        ctx: &mut DispatchContext,
        body: &Value,
        prefix: &str,
    ) -> Result<Accumulator, BoxError> {
        let url = self.config.endpoint();
        let mut request = self
            .client
            .post(&url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body.to_string());
        if let Some(api_key) = &self.config.api_key {
            request = request.bearer_auth(api_key);
        }
        let response = match tokio::time::timeout(self.config.request_timeout, request.send()).await
        {
            Err(_) => {
                return Err(OpenAiError::Timeout {
                    phase: TimeoutPhase::Response,
                    after: self.config.request_timeout,
                }
                .into());
            }
            Ok(Err(source)) => return Err(OpenAiError::Connect { url, source }.into()),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            // The error body is read with the idle bound too: a server that sends an error
            // status and then stalls still ends the call.
            let text = tokio::time::timeout(self.config.stream_idle_timeout, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|value| error_message(&value))
                .unwrap_or_else(|| match text.trim() {
                    "" => status.canonical_reason().unwrap_or("no message").to_owned(),
                    trimmed => trimmed.to_owned(),
                });
            return Err(OpenAiError::Status {
                status: status.as_u16(),
                message,
                body: text,
            }
            .into());
        }

        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            // A server that ignored `stream: true`, or reported an error with a 200 status.
            let text = tokio::time::timeout(self.config.stream_idle_timeout, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let reported = serde_json::from_str::<Value>(&text)
                .ok()
                .filter(|value| value.get("error").is_some())
                .and_then(|value| error_message(&value));
            return Err(match reported {
                Some(message) => OpenAiError::StreamedError {
                    message,
                    data: text,
                },
                None => OpenAiError::MalformedStream {
                    reason: "the server answered with one JSON body instead of an event stream; \
                             check that it supports `stream: true`"
                        .to_owned(),
                    data: text,
                },
            }
            .into());
        }

        let message_id = format!("{prefix}-message");
        let thought_id = format!("{prefix}-thought");
        let mut bytes = response.bytes_stream();
        let mut parser = SseParser::default();
        let mut answer = Accumulator::new(prefix);
        while !answer.done {
            let next = tokio::time::timeout(self.config.stream_idle_timeout, bytes.next())
                .await
                .map_err(|_| OpenAiError::Timeout {
                    phase: TimeoutPhase::Stream,
                    after: self.config.stream_idle_timeout,
                })?;
            let events = match next {
                Some(Ok(chunk)) => parser.push(&chunk),
                Some(Err(source)) => return Err(OpenAiError::Stream { source }.into()),
                None => {
                    if let Some(data) = parser.finish() {
                        let deltas = answer.apply(&data)?;
                        report(ctx, &message_id, &thought_id, deltas)?;
                    }
                    break;
                }
            };
            for data in events {
                let deltas = answer.apply(&data)?;
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
            StreamDelta::ToolCall { id, name } => {
                let update = match name {
                    Some(name) => ToolCallUpdate::new().tool(name),
                    None => ToolCallUpdate::new(),
                };
                ctx.report_tool_call(&id, update)?;
            }
        }
    }
    Ok(())
}

/// Stores every call the model made, runs them in order and records their results.
async fn run_tool_calls(ctx: &mut DispatchContext, answer: &Accumulator) -> Result<(), BoxError> {
    let mut calls = Vec::new();
    for assembled in answer.tool_calls() {
        if assembled.name.is_empty() {
            return Err(OpenAiError::MalformedStream {
                reason: format!(
                    "tool call {:?} arrived without a function name",
                    assembled.provider_id.as_deref().unwrap_or(&assembled.id)
                ),
                data: assembled.arguments.clone(),
            }
            .into());
        }
        let (args, problem) = parse_arguments(&assembled.name, &assembled.arguments);
        ctx.report_tool_call(
            &assembled.id,
            ToolCallUpdate::new()
                .tool(assembled.name.clone())
                .args(Value::Object(args.clone())),
        )?;
        let call = ToolCall::new(
            assembled.id.clone(),
            assembled.name.clone(),
            Value::Object(args),
        )?;
        ctx.store_tool_call(call.clone()).await?;
        calls.push((call, problem));
    }
    for (call, problem) in calls {
        let finished = match problem {
            Some(problem) => call.fail(problem),
            None => match ctx.execute_tool(&call).await {
                Ok(output) => finish_with_output(call, output),
                Err(error) => call.fail(error.to_string()),
            },
        };
        let results = match finished.results() {
            Some(ToolCallResults::Text(text)) => Value::String(text.render()),
            Some(other) => serde_json::to_value(other).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let mut update = ToolCallUpdate::new().results(results).complete();
        if finished.is_error() {
            update = update.error();
        }
        ctx.report_tool_call(finished.id(), update)?;
        ctx.mutate_tool_call(finished).await?;
    }
    Ok(())
}

/// The arguments as an object, and the problem to report to the model when they are not one.
/// Unparseable arguments are kept verbatim under `arguments_as_sent`, so nothing is lost.
fn parse_arguments(tool: &str, arguments: &str) -> (Map<String, Value>, Option<String>) {
    if arguments.trim().is_empty() {
        return (Map::new(), None);
    }
    let problem = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => return (object, None),
        Ok(other) => format!("they are JSON {}, not an object", json_kind(&other)),
        Err(error) => format!("they are not valid JSON ({error})"),
    };
    let mut kept = Map::new();
    kept.insert(
        "arguments_as_sent".to_owned(),
        Value::String(arguments.to_owned()),
    );
    (
        kept,
        Some(format!(
            "the arguments for tool {tool:?} were refused: {problem}; send a JSON object that \
             matches the tool's parameters"
        )),
    )
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn finish_with_output(call: ToolCall, output: ToolOutput) -> ToolCall {
    match output {
        ToolOutput::Text(text) => call.complete(text),
        ToolOutput::Bytes(bytes) => match String::from_utf8(bytes.to_vec()) {
            Ok(text) => call.complete(text),
            Err(_) => call.fail(format!(
                "the tool returned {} bytes of binary output, which cannot be sent to the model",
                bytes.len()
            )),
        },
        ToolOutput::Artifact(artifact) => call.complete(artifact),
        ToolOutput::Media(media) if media.is_empty() => call.complete(""),
        ToolOutput::Media(media) => call.complete(ToolCallResults::MediaList(media)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn arguments_that_are_not_an_object_are_kept_and_explained() {
        let (args, problem) = parse_arguments("forecast", "[1, 2");
        assert_eq!(args["arguments_as_sent"], "[1, 2");
        let problem = problem.unwrap();
        assert!(
            problem.contains("forecast") && problem.contains("not valid JSON"),
            "{problem}"
        );

        let (args, problem) = parse_arguments("forecast", "\"Oslo\"");
        assert!(problem.unwrap().contains("a string, not an object"));
        assert_eq!(args.len(), 1);

        assert_eq!(parse_arguments("forecast", "  "), (Map::new(), None));
        let (args, problem) = parse_arguments("forecast", r#"{"city":"Oslo"}"#);
        assert_eq!((args["city"].as_str(), problem), (Some("Oslo"), None));
    }
}

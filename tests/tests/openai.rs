//! The OpenAI-compatible executor end to end over real HTTP: a chat-completions server written
//! for the test listens on 127.0.0.1, answers each request with a scripted reply (streamed
//! chunks, tool-call deltas split across chunks, an error status, a stalled stream) and records
//! what it received; turns run through a real `TurnRunner`. The `litellm` tests run the same
//! executor against a real LiteLLM proxy, and the quickstart example through it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::events::{DispatchStatus, ErrorCode, Event, TurnError};
use adk::openai::{
    OpenAiConfig, OpenAiError, OpenAiExecutor, ReasoningReplay, ResponsePart, RetryPolicy,
    TimeoutPhase, ToolCallIds,
};
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Message, Role, Tool, ToolCallResults};
use adk::runner::TurnStatus;
use adk::storage::NoopStorage;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A real LiteLLM proxy (installed from PyPI by `.ci/litellm`) with a scripted model behind it.
#[path = "openai/litellm.rs"]
mod litellm;
/// The quickstart example, run against that proxy by `litellm`.
#[path = "../../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;
/// Shapes real servers send (`tests/data/openai/`), caps and the memory they bound.
#[path = "openai/shapes.rs"]
mod shapes;
/// Structured output and typed request fields.
#[path = "openai/structured.rs"]
mod structured;

// ---------------------------------------------------------------------------------------------
// The server.

/// How the server answers one request.
enum Reply {
    /// `200` with these server-sent events, then the connection closes.
    Events(Vec<String>),
    /// This status with this JSON body.
    Status(u16, Value),
    /// `200` with these events, then nothing, until the client goes away.
    EventsThenStall(Vec<String>),
    /// This status, these extra headers and this body, written raw (the client may hang up
    /// before it is all sent).
    Raw(u16, Vec<(&'static str, String)>, Vec<u8>),
    /// `200` with these events, then a keep-alive comment every 50 ms, forever.
    EventsThenKeepAlive(Vec<String>),
    /// `200` with the event-stream head, then each piece as the iterator makes it (never held
    /// whole), until it ends or the client hangs up.
    Generated(Box<dyn Iterator<Item = Vec<u8>> + Send>),
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    authorization: Option<String>,
    /// Every header, the name lower-cased.
    headers: HashMap<String, String>,
    body: Value,
    /// When the request's headers had arrived.
    at: Instant,
}

struct Server {
    base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
    /// Signalled when a client closes a stalled connection.
    disconnected: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Serves `replies` in order, one per connection (every reply closes its connection).
    async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let disconnected = Arc::new(Notify::new());
        let task = tokio::spawn({
            let received = Arc::clone(&received);
            let disconnected = Arc::clone(&disconnected);
            async move {
                for reply in replies {
                    let Ok((mut socket, _)) = listener.accept().await else {
                        return;
                    };
                    let request = read_request(&mut socket).await;
                    received.lock().unwrap().push(request);
                    serve(&mut socket, reply, &disconnected).await;
                }
            }
        });
        Self {
            base_url,
            received,
            disconnected,
            task,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn read_request(socket: &mut TcpStream) -> Received {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(position) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break position + 4;
        }
        assert!(buffer.len() < 1 << 20, "request headers too large");
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the client closed before sending its headers");
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buffer[..header_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap().to_owned();
    let at = Instant::now();
    let mut content_length = 0;
    let mut authorization = None;
    let mut headers = HashMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "content-length" => content_length = value.trim().parse().unwrap(),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
            headers.insert(name, value.trim().to_owned());
        }
    }
    while buffer.len() < header_end + content_length {
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the client closed before sending its body");
        buffer.extend_from_slice(&chunk[..read]);
    }
    Received {
        request_line,
        authorization,
        headers,
        at,
        body: serde_json::from_slice(&buffer[header_end..header_end + content_length]).unwrap(),
    }
}

const EVENT_STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                                 cache-control: no-cache\r\nconnection: close\r\n\r\n";

async fn serve(socket: &mut TcpStream, reply: Reply, disconnected: &Notify) {
    match reply {
        Reply::Events(events) => {
            write_events(socket, &events).await;
            let _ = socket.shutdown().await;
        }
        Reply::Status(status, body) => {
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(body.as_bytes()).await.unwrap();
            let _ = socket.shutdown().await;
        }
        Reply::Raw(status, headers, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await.unwrap();
            // The client stops reading a long error body; the write then fails, as it should.
            let _ = socket.write_all(&body).await;
            let _ = socket.shutdown().await;
        }
        Reply::Generated(pieces) => {
            write_events(socket, &[]).await;
            for piece in pieces {
                if socket.write_all(&piece).await.is_err() {
                    break;
                }
            }
            let _ = socket.shutdown().await;
        }
        Reply::EventsThenKeepAlive(events) => {
            write_events(socket, &events).await;
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if socket.write_all(b": keep-alive\n\n").await.is_err() {
                    break;
                }
            }
            disconnected.notify_one();
        }
        Reply::EventsThenStall(events) => {
            write_events(socket, &events).await;
            // Send nothing more; wait for the client to give up.
            let mut sink = [0u8; 1024];
            loop {
                match socket.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            disconnected.notify_one();
        }
    }
}

async fn write_events(socket: &mut TcpStream, events: &[String]) {
    socket
        .write_all(EVENT_STREAM_HEAD.as_bytes())
        .await
        .unwrap();
    for event in events {
        // One write per event, as a server streaming tokens would send them.
        socket.write_all(event.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
    }
}

fn data(chunk: Value) -> String {
    format!("data: {chunk}\n\n")
}

fn done() -> String {
    "data: [DONE]\n\n".to_owned()
}

fn delta(delta: Value) -> String {
    data(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "scripted-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    }))
}

fn finish(reason: &str) -> String {
    data(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "scripted-model",
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
    }))
}

fn text_answer(pieces: &[&str]) -> Vec<String> {
    let mut events = vec![delta(json!({"role": "assistant", "content": ""}))];
    events.extend(pieces.iter().map(|piece| delta(json!({"content": piece}))));
    events.push(finish("stop"));
    events.push(done());
    events
}

/// A call of `forecast` for `city` under the provider id `id`: id and name in the first chunk,
/// the arguments in three pieces.
fn forecast_call(id: &str, city: &str) -> Vec<String> {
    let arguments = format!(r#"{{"city": "{city}"}}"#);
    let (first, rest) = arguments.split_at(4);
    let (second, third) = rest.split_at(6);
    let mut events = vec![delta(json!({
        "role": "assistant",
        "tool_calls": [{"index": 0, "id": id, "type": "function",
                        "function": {"name": "forecast", "arguments": ""}}],
    }))];
    for piece in [first, second, third] {
        events.push(delta(json!({
            "tool_calls": [{"index": 0, "function": {"arguments": piece}}],
        })));
    }
    events.push(finish("tool_calls"));
    events.push(done());
    events
}

// ---------------------------------------------------------------------------------------------
// The turn.

#[derive(Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    /// The city to forecast.
    city: String,
}

fn forecast() -> Tool {
    Tool::typed::<ForecastArgs>("forecast")
        .description("Tomorrow's weather for a city.")
        .read_only()
        .handler(|args: ForecastArgs, _invocation| async move {
            let weather = if args.city == "Bergen" {
                "rain"
            } else {
                "sunny"
            };
            Ok(format!("{}: {weather}", args.city))
        })
        .build()
        .unwrap()
}

struct Run {
    outcome: adk::TurnOutcome,
    events: Vec<Event>,
}

/// The tests' configuration: short retry waits, so retried tests stay fast.
fn config(server: &Server) -> OpenAiConfig {
    OpenAiConfig::new(&server.base_url, "scripted-model")
        .unwrap()
        .with_api_key("sk-test")
        .with_request_timeout(Duration::from_secs(30))
        .with_stream_idle_timeout(Duration::from_secs(30))
        .with_retry(
            RetryPolicy::default()
                .with_initial_delay(Duration::from_millis(20))
                .with_max_delay(Duration::from_secs(5)),
        )
}

/// Runs one turn in which the user asks `question`, with the forecast tool registered.
async fn run_turn(config: OpenAiConfig, question: &'static str) -> Run {
    run_turn_with(config, question, CancellationToken::new(), |_, _| {}).await
}

async fn run_turn_with(
    config: OpenAiConfig,
    question: &'static str,
    cancellation: CancellationToken,
    on_event: impl Fn(&Event, &CancellationToken) + Send + Sync + 'static,
) -> Run {
    let turn = Turn {
        executor: OpenAiExecutor::new(config).unwrap(),
        question: Message::user("m-user", question).unwrap(),
        tools: vec![forecast()],
        cancellation,
    };
    turn.run(on_event).await
}

/// Everything one turn can vary.
struct Turn {
    executor: OpenAiExecutor,
    question: Message,
    tools: Vec<Tool>,
    cancellation: CancellationToken,
}

impl Turn {
    fn new(executor: OpenAiExecutor, question: &str) -> Self {
        Self {
            executor,
            question: Message::user("m-user", question).unwrap(),
            tools: vec![forecast()],
            cancellation: CancellationToken::new(),
        }
    }

    async fn run(
        self,
        on_event: impl Fn(&Event, &CancellationToken) + Send + Sync + 'static,
    ) -> Run {
        let events = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&events);
        let token = self.cancellation.clone();
        let question = self.question;
        let mut builder = TurnRunner::builder()
            .storage(NoopStorage::new())
            .observe(move |event| {
                recorded.lock().unwrap().push(event.clone());
                on_event(event, &token);
            })
            .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
                let question = question.clone();
                Box::pin(async move {
                    ctx.store_message(question).await?;
                    // How the rest went is the outcome's to tell; each test checks it there.
                    let _downstream = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            }));
        for tool in self.tools {
            builder = builder.tool(tool);
        }
        let runner = builder.executor(self.executor).build();
        let raw = RawTurnContext::new("conversation-1", "You forecast weather.")
            .standing_instruction("Answer in English.")
            .cancellation(self.cancellation);
        // A bound on the whole turn, so a hang fails the test instead of stalling the suite.
        let outcome = tokio::time::timeout(Duration::from_secs(20), runner.run(raw))
            .await
            .expect("the turn did not end within 20 s")
            .unwrap();
        let events = events.lock().unwrap().clone();
        Run { outcome, events }
    }
}

/// The `openai.retry` log records of a run: (attempt, delay in ms).
fn retries(run: &Run) -> Vec<(u64, u64)> {
    run.events
        .iter()
        .filter_map(|event| match event {
            Event::Log(record) if record.kind == "openai.retry" => {
                let payload = record.payload.as_ref().unwrap();
                Some((
                    payload["attempt"].as_u64().unwrap(),
                    payload["delay_ms"].as_u64().unwrap(),
                ))
            }
            _ => None,
        })
        .collect()
}

/// The position of the first event matching `wanted`.
fn position(run: &Run, wanted: impl Fn(&Event) -> bool) -> usize {
    run.events.iter().position(wanted).expect("no such event")
}

fn failure(run: &Run) -> &TurnError {
    match &run.outcome.status {
        TurnStatus::Failed(error) => error,
        other => panic!("expected a failed turn, got {other:?}"),
    }
}

fn openai_error(error: &TurnError) -> &OpenAiError {
    error
        .cause()
        .and_then(|cause| cause.downcast_ref::<OpenAiError>())
        .unwrap_or_else(|| panic!("the cause is not an OpenAiError: {error:?}"))
}

fn transcript(outcome: &adk::TurnOutcome) -> Vec<String> {
    outcome
        .context
        .messages
        .iter()
        .map(|message| {
            let content = message
                .content()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{}: {content}", message.role().as_str())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn streamed_text_chunks_are_reported_as_message_events_and_stored_as_one_assistant_message() {
    let mut events = vec![delta(
        json!({"role": "assistant", "reasoning_content": "Oslo is "}),
    )];
    events.push(delta(json!({"reasoning_content": "usually mild."})));
    events.extend(
        ["Sunny ", "in ", "Oslo."]
            .iter()
            .map(|piece| delta(json!({"content": piece}))),
    );
    events.push(finish("stop"));
    events.push(data(json!({
        "id": "chatcmpl-1",
        "model": "scripted-model",
        "choices": [],
        "usage": {"prompt_tokens": 31, "completion_tokens": 5, "total_tokens": 36},
    })));
    events.push(done());
    let server = Server::start(vec![Reply::Events(events)]).await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    assert_eq!(
        transcript(&run.outcome),
        ["user: Weather in Oslo?", "assistant: Sunny in Oslo."]
    );
    let message_events: Vec<(String, String, bool)> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Message(content) => Some((
                content.delta.clone(),
                content.full.to_string(),
                content.is_complete,
            )),
            _ => None,
        })
        .collect();
    let expected = [
        ("Sunny ", "Sunny ", false),
        ("in ", "Sunny in ", false),
        ("Oslo.", "Sunny in Oslo.", false),
        ("", "Sunny in Oslo.", true),
    ]
    .map(|(delta, full, complete)| (delta.to_owned(), full.to_owned(), complete));
    assert_eq!(message_events, expected);

    let thoughts: Vec<String> = run
        .outcome
        .context
        .thoughts
        .iter()
        .map(|thought| thought.content().to_string())
        .collect();
    assert_eq!(thoughts, ["Oslo is usually mild."]);
    assert_eq!(
        run.events
            .iter()
            .filter(|event| matches!(event, Event::Thought(_)))
            .count(),
        3
    );
    let stats = run
        .events
        .iter()
        .find_map(|event| match event {
            Event::GenerationStats { stats, .. } => Some(stats.clone()),
            _ => None,
        })
        .expect("no generationStats event");
    assert_eq!(
        (
            stats.prompt_tokens,
            stats.completion_tokens,
            stats.total_tokens
        ),
        (Some(31), Some(5), Some(36))
    );
    assert_eq!(stats.finish_reason.as_deref(), Some("stop"));
    assert_eq!(stats.model.as_deref(), Some("scripted-model"));

    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0].request_line,
        "POST /v1/chat/completions HTTP/1.1"
    );
    assert_eq!(received[0].authorization.as_deref(), Some("Bearer sk-test"));
}

#[tokio::test]
async fn tool_call_deltas_split_across_chunks_run_the_tool_and_the_next_request_carries_its_result()
{
    let server = Server::start(vec![
        Reply::Events(forecast_call("call_abc", "Oslo")),
        Reply::Events(text_answer(&["Tomorrow in Oslo: ", "sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    assert_eq!(
        transcript(&run.outcome),
        [
            "user: Weather in Oslo?",
            "assistant: Tomorrow in Oslo: sunny."
        ]
    );
    let calls: Vec<_> = run.outcome.context.tool_calls.iter().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool(), "forecast");
    assert_eq!(
        Value::Object(calls[0].args().clone()),
        json!({"city": "Oslo"})
    );
    assert!(calls[0].is_complete() && !calls[0].is_error());
    assert!(
        matches!(calls[0].results(), Some(ToolCallResults::Text(text)) if text.to_string() == "Oslo: sunny")
    );
    assert!(
        calls[0].id().ends_with("-0-call_abc"),
        "the stored id is made unique per turn: {}",
        calls[0].id()
    );
    assert!(run.events.iter().any(|event| matches!(
        event,
        Event::ToolExecutionEnd {
            is_error: false,
            ..
        }
    )));

    let received = server.received();
    assert_eq!(received.len(), 2);
    let schema = forecast().input_schema().clone();
    assert_eq!(
        received[0].body,
        json!({
            "model": "scripted-model",
            "messages": [
                {"role": "system", "content": "You forecast weather."},
                {"role": "system", "content": "Answer in English."},
                {"role": "user", "content": "Weather in Oslo?"},
            ],
            "tools": [{
                "type": "function",
                "function": {
                    "name": "forecast",
                    "description": "Tomorrow's weather for a city.",
                    "parameters": schema,
                },
            }],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
    assert_eq!(
        received[1].body["messages"],
        json!([
            {"role": "system", "content": "You forecast weather."},
            {"role": "system", "content": "Answer in English."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_abc",
                "type": "function",
                "function": {"name": "forecast", "arguments": r#"{"city":"Oslo"}"#},
            }]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "Oslo: sunny"},
        ])
    );
}

/// What the hosted API streams when a model writes before it calls a tool: the text in content
/// deltas, then the call (id and name first, its arguments in pieces) in the same choice.
fn text_then_forecast_call(pieces: &[&str], id: &str, city: &str) -> Vec<String> {
    let mut events = vec![delta(json!({"role": "assistant", "content": ""}))];
    events.extend(pieces.iter().map(|piece| delta(json!({"content": piece}))));
    events.extend(forecast_call(id, city));
    events
}

#[tokio::test]
async fn text_then_a_tool_call_in_one_answer_goes_back_as_one_assistant_message_then_the_result() {
    let server = Server::start(vec![
        Reply::Events(text_then_forecast_call(
            &["Let me ", "check."],
            "call_abc",
            "Oslo",
        )),
        Reply::Events(text_answer(&["Sunny in Oslo."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = server.received();
    assert_eq!(
        received.len(),
        2,
        "one model call for the tool, one for the answer"
    );
    // The call was created while the answer streamed and the text when it ended; the request
    // still holds the answer as the model gave it: text and call in one message, then the result.
    assert_eq!(
        received[1].body["messages"],
        json!([
            {"role": "system", "content": "You forecast weather."},
            {"role": "system", "content": "Answer in English."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [{
                "id": "call_abc",
                "type": "function",
                "function": {"name": "forecast", "arguments": r#"{"city":"Oslo"}"#},
            }]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "Oslo: sunny"},
        ])
    );
    // The link that says so is on the records, for storage and the next turn to keep.
    let context = &run.outcome.context;
    let text = context
        .messages
        .iter()
        .find(|m| m.role() == Role::Assistant)
        .unwrap();
    let call = context.tool_calls.first().unwrap();
    let (text_link, call_link) = (text.answer().unwrap(), call.answer().unwrap());
    assert_eq!(text_link.answer_id(), call_link.answer_id());
    assert_eq!((text_link.position(), call_link.position()), (0, 1));
    assert!(
        call.created_at() < text.created_at(),
        "the call is written first, which is why creation times cannot order an answer"
    );
}

#[tokio::test]
async fn a_provider_repeating_its_tool_call_ids_across_responses_still_gets_distinct_stored_calls()
{
    let server = Server::start(vec![
        Reply::Events(forecast_call("call_0", "Oslo")),
        Reply::Events(forecast_call("call_0", "Bergen")),
        Reply::Events(text_answer(&["Oslo sunny, Bergen rain."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo and Bergen?").await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let calls: Vec<String> = run
        .outcome
        .context
        .tool_calls
        .iter()
        .map(|call| match call.results() {
            Some(ToolCallResults::Text(text)) => text.to_string(),
            other => panic!("unexpected results {other:?}"),
        })
        .collect();
    assert_eq!(calls, ["Oslo: sunny", "Bergen: rain"]);
    let ids: Vec<&str> = run
        .outcome
        .context
        .tool_calls
        .iter()
        .map(|call| call.id())
        .collect();
    assert_ne!(ids[0], ids[1]);
    let last_request = &server.received()[2].body["messages"];
    let tool_results: Vec<(&str, &str)> = last_request
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap(),
                message["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tool_results,
        [("call_0", "Oslo: sunny"), ("call_1", "Bergen: rain")],
        "the provider's id goes back; its repeat is renumbered to stay distinct"
    );
}

#[tokio::test]
async fn an_error_status_fails_the_dispatch_with_the_servers_message() {
    let server = Server::start(vec![Reply::Status(
        500,
        json!({"error": {"message": "The model is overloaded", "type": "server_error"}}),
    )])
    .await;

    let run = run_turn(
        config(&server).with_retry(RetryPolicy::none()),
        "Weather in Oslo?",
    )
    .await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Nack));
    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        format!("{error:#}").contains("The model is overloaded")
            && format!("{error:#}").contains("500"),
        "{error:#}"
    );
    assert!(matches!(
        openai_error(error),
        OpenAiError::Status { status: 500, message, .. } if message == "The model is overloaded"
    ));
    assert_eq!(
        transcript(&run.outcome),
        ["user: Weather in Oslo?"],
        "nothing from the failed dispatch reaches the turn"
    );
}

#[tokio::test]
async fn a_stream_that_stalls_after_its_headers_times_out() {
    let server = Server::start(vec![Reply::EventsThenStall(Vec::new())]).await;
    let config = config(&server).with_stream_idle_timeout(Duration::from_millis(300));

    let run = run_turn(config, "Weather in Oslo?").await;

    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(format!("{error:#}").contains("stalled"), "{error:#}");
    assert!(matches!(
        openai_error(error),
        OpenAiError::Timeout {
            phase: TimeoutPhase::Stream,
            after
        } if *after == Duration::from_millis(300)
    ));
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported_as_a_connect_error_naming_the_endpoint() {
    // A port that was just free: bind, read it, close.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m")
        .unwrap()
        .with_retry(RetryPolicy::default().with_initial_delay(Duration::from_millis(10)));

    let run = run_turn(config, "Weather in Oslo?").await;

    // A connection error is retried (twice by default) before it is reported.
    assert_eq!(retries(&run).len(), 2);
    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        format!("{error:#}").contains(&format!("127.0.0.1:{port}/v1/chat/completions")),
        "{error:#}"
    );
    assert!(matches!(openai_error(error), OpenAiError::Connect { .. }));
}

#[tokio::test]
async fn a_turn_cancelled_mid_stream_ends_aborted_and_drops_the_request() {
    let server = Server::start(vec![Reply::EventsThenStall(vec![delta(
        json!({"role": "assistant", "content": "Let me think"}),
    )])])
    .await;
    let started = std::time::Instant::now();

    // The caller cancels as soon as the first text chunk is reported; the server then sends
    // nothing more, so only the cancellation can end the turn before the 30 s idle timeout.
    let run = run_turn_with(
        config(&server),
        "Weather in Oslo?",
        CancellationToken::new(),
        |event, token| {
            if matches!(event, Event::Message(_)) {
                token.cancel();
            }
        },
    )
    .await;

    assert!(
        matches!(run.outcome.status, TurnStatus::Aborted(_)),
        "{:?}",
        run.outcome.status
    );
    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        run.outcome
            .context
            .messages
            .iter()
            .filter(|message| message.role() == Role::Assistant)
            .count(),
        0
    );
    tokio::time::timeout(Duration::from_secs(10), server.disconnected.notified())
        .await
        .expect("the client kept the cancelled request's connection open");
}

#[tokio::test]
async fn a_json_body_instead_of_an_event_stream_is_read_as_a_whole_answer_or_as_its_error() {
    let server = Server::start(vec![
        Reply::Status(200, json!({"error": {"message": "quota exhausted"}})),
        Reply::Status(200, json!({"choices": [{"message": {"content": "hi"}}]})),
    ])
    .await;

    let reported = run_turn(config(&server), "Weather in Oslo?").await;
    let error = failure(&reported);
    assert!(
        format!("{error:#}").contains("quota exhausted"),
        "{error:#}"
    );
    assert!(matches!(
        openai_error(error),
        OpenAiError::StreamedError { .. }
    ));

    let unstreamed = run_turn(config(&server), "Weather in Oslo?").await;
    assert!(
        unstreamed.outcome.is_completed(),
        "{:?}",
        unstreamed.outcome.status
    );
    assert_eq!(
        transcript(&unstreamed.outcome),
        ["user: Weather in Oslo?", "assistant: hi"]
    );
}

#[tokio::test]
async fn a_call_of_an_unknown_tool_is_stored_failed_and_its_error_is_sent_back_to_the_model() {
    let unknown_call = vec![
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function",
                      "function": {"name": "teleport", "arguments": "{\"to\": \"Oslo\"}"}}]}),
        ),
        finish("tool_calls"),
        done(),
    ];
    let server = Server::start(vec![
        Reply::Events(unknown_call),
        Reply::Events(text_answer(&["I cannot teleport."])),
    ])
    .await;

    let run = run_turn(config(&server), "Take me to Oslo.").await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let call = run.outcome.context.tool_calls.iter().next().unwrap();
    assert!(call.is_complete() && call.is_error());
    let sent_back = server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap().to_owned())
        .unwrap();
    assert!(
        sent_back.starts_with("Error: ")
            && sent_back.contains("\"teleport\"")
            && sent_back.contains("\"forecast\""),
        "{sent_back}"
    );
}

// ---------------------------------------------------------------------------------------------
// Order of reports and closing of streams.

#[tokio::test]
async fn a_tool_call_is_announced_once_with_its_arguments_and_stats_follow_the_completed_message() {
    let mut first = vec![delta(json!({"role": "assistant", "content": "Checking."}))];
    first.extend(forecast_call("call_abc", "Oslo"));
    let server = Server::start(vec![
        Reply::Events(first),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let announcements: Vec<&Value> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall(call) if call.results.is_none() => Some(&call.args),
            _ => None,
        })
        .collect();
    assert_eq!(announcements, [&json!({"city": "Oslo"})]);
    let message_complete = position(
        &run,
        |event| matches!(event, Event::Message(content) if content.is_complete),
    );
    let announced = position(&run, |event| matches!(event, Event::ToolCall(_)));
    let stats = position(&run, |event| matches!(event, Event::GenerationStats { .. }));
    let executed = position(&run, |event| {
        matches!(event, Event::ToolExecutionStart { .. })
    });
    assert!(
        message_complete < announced && announced < stats && stats < executed,
        "message complete {message_complete}, call announced {announced}, stats {stats}, \
         tool started {executed}"
    );
}

#[tokio::test]
async fn an_error_mid_stream_closes_the_started_message_as_interrupted() {
    let server = Server::start(vec![Reply::Events(vec![
        delta(json!({"role": "assistant", "reasoning_content": "Hmm."})),
        delta(json!({"content": "Sunny in"})),
        data(json!({"error": {"message": "upstream disconnected"}})),
    ])])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    let error = failure(&run);
    assert!(matches!(
        openai_error(error),
        OpenAiError::StreamedError { .. }
    ));
    for kind in ["message", "thought"] {
        let last = run
            .events
            .iter()
            .rev()
            .find_map(|event| match (kind, event) {
                ("message", Event::Message(content)) | ("thought", Event::Thought(content)) => {
                    Some(content)
                }
                _ => None,
            })
            .unwrap();
        assert!(
            last.is_complete && last.is_interrupted,
            "the {kind} stream was left open: {last:?}"
        );
    }
    let last_message = run.events.iter().rev().find_map(|event| match event {
        Event::Message(content) => Some(content.full.to_string()),
        _ => None,
    });
    assert_eq!(last_message.as_deref(), Some("Sunny in"));
}

#[tokio::test]
async fn a_cancelled_turn_closes_the_started_message_as_interrupted() {
    let server = Server::start(vec![Reply::EventsThenStall(vec![delta(
        json!({"role": "assistant", "content": "Let me think"}),
    )])])
    .await;

    let run = run_turn_with(
        config(&server),
        "Weather in Oslo?",
        CancellationToken::new(),
        |event, token| {
            if matches!(event, Event::Message(content) if !content.is_complete) {
                token.cancel();
            }
        },
    )
    .await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Aborted));
    let messages: Vec<(bool, bool)> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Message(content) => Some((content.is_complete, content.is_interrupted)),
            _ => None,
        })
        .collect();
    assert_eq!(messages, [(false, false), (true, true)]);
}

// ---------------------------------------------------------------------------------------------
// Retries.

#[tokio::test]
async fn a_503_is_retried_with_a_logged_attempt_and_the_retry_succeeds() {
    let server = Server::start(vec![
        Reply::Status(503, json!({"error": {"message": "overloaded"}})),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(
        transcript(&run.outcome),
        ["user: Weather in Oslo?", "assistant: Sunny."]
    );
    assert_eq!(server.received().len(), 2);
    let logged = retries(&run);
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].0, 1, "the first retry is attempt 1");
    assert!(
        logged[0].1 <= 20,
        "the first wait is at most the initial delay"
    );
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let server = Server::start(vec![
        Reply::Raw(
            429,
            vec![
                ("content-type", "application/json".to_owned()),
                ("retry-after", "1".to_owned()),
            ],
            br#"{"error":{"message":"rate limited"}}"#.to_vec(),
        ),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = server.received();
    let waited = received[1].at.duration_since(received[0].at);
    assert!(
        waited >= Duration::from_millis(950) && waited < Duration::from_millis(2500),
        "waited {waited:?} for a Retry-After of 1 s"
    );
    assert_eq!(retries(&run), [(1, 1000)]);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_ceiling_is_not_waited_out() {
    let server = Server::start(vec![Reply::Raw(
        429,
        vec![("retry-after", "3600".to_owned())],
        b"slow down".to_vec(),
    )])
    .await;

    let started = Instant::now();
    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(retries(&run).is_empty());
    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::Status { status: 429, message, .. } if message == "slow down"
    ));
}

#[tokio::test]
async fn a_stream_that_breaks_after_its_first_byte_is_not_retried() {
    // The connection closes mid-answer: no `finish_reason`, no `[DONE]`.
    let server = Server::start(vec![
        Reply::Events(vec![delta(
            json!({"role": "assistant", "content": "Sunny"}),
        )]),
        Reply::Events(text_answer(&["A second answer nobody asked for."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::MalformedStream { .. }
    ));
    assert!(retries(&run).is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_long_error_body_is_cut_at_the_cap_and_marked_truncated() {
    let body = "x".repeat(8 << 20);
    let server = Server::start(vec![Reply::Raw(
        500,
        vec![("content-type", "text/plain".to_owned())],
        body.into_bytes(),
    )])
    .await;

    let run = run_turn(
        config(&server).with_retry(RetryPolicy::none()),
        "Weather in Oslo?",
    )
    .await;

    match openai_error(failure(&run)) {
        OpenAiError::Status {
            status: 500,
            message,
            body,
            body_truncated,
            ..
        } => {
            assert_eq!(body.len(), adk::openai::MAX_ERROR_BODY);
            assert!(body_truncated);
            assert!(
                message.len() < 4096 && message.ends_with("(truncated)"),
                "{message}"
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Timeouts.

#[tokio::test]
async fn a_stream_kept_alive_forever_ends_at_the_overall_deadline() {
    let server = Server::start(vec![Reply::EventsThenKeepAlive(vec![delta(
        json!({"role": "assistant", "content": "Thinking"}),
    )])])
    .await;
    let config = config(&server).with_total_timeout(Some(Duration::from_millis(500)));

    let started = Instant::now();
    let run = run_turn(config, "Weather in Oslo?").await;

    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::Timeout { phase: TimeoutPhase::Total, after } if *after == Duration::from_millis(500)
    ));
    tokio::time::timeout(Duration::from_secs(10), server.disconnected.notified())
        .await
        .expect("the client kept the timed-out connection open");
}

// ---------------------------------------------------------------------------------------------
// URLs and headers.

#[tokio::test]
async fn a_base_url_query_string_is_kept_after_the_path() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let config = OpenAiConfig::new(format!("{}?tenant=7&region=eu", server.base_url), "m").unwrap();

    let run = run_turn(config, "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(
        server.received()[0].request_line,
        "POST /v1/chat/completions?tenant=7&region=eu HTTP/1.1"
    );
}

#[tokio::test]
async fn default_and_per_request_headers_and_the_user_agent_are_on_the_wire() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let config = config(&server)
        .with_header("OpenAI-Organization", "org-1")
        .unwrap()
        .with_header("X-Gateway-Key", "default")
        .unwrap();
    let executor = OpenAiExecutor::new(config)
        .unwrap()
        .with_request_hook(|ctx, request| {
            let value = format!("dispatch-{}", ctx.iteration());
            request
                .headers
                .insert("x-request-tag", value.parse().unwrap());
            request
                .headers
                .insert("x-gateway-key", "per-request".parse().unwrap());
        });

    let run = Turn::new(executor, "Weather in Oslo?").run(|_, _| {}).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let headers = &server.received()[0].headers;
    assert_eq!(headers["openai-organization"], "org-1");
    assert_eq!(headers["x-request-tag"], "dispatch-0");
    assert_eq!(headers["x-gateway-key"], "per-request");
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(headers["user-agent"], adk::openai::USER_AGENT);
    assert!(adk::openai::USER_AGENT.contains("adk/"));
}

#[tokio::test]
async fn azure_sends_the_key_as_api_key_to_the_deployment_url_with_the_api_version() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let resource = server.base_url.trim_end_matches("/v1");
    let config = OpenAiConfig::azure(resource, "gpt-4o-prod", "2024-10-21")
        .unwrap()
        .with_api_key("azure-key");

    let run = run_turn(config, "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = &server.received()[0];
    assert_eq!(
        received.request_line,
        "POST /openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21 HTTP/1.1"
    );
    assert_eq!(received.headers["api-key"], "azure-key");
    assert_eq!(received.authorization, None);
    assert_eq!(received.body["model"], "gpt-4o-prod");
}

#[tokio::test]
async fn a_client_passed_in_is_the_one_that_sends() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-from-my-client", "yes".parse().unwrap());
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();

    let executor = OpenAiExecutor::with_client(config(&server), client);
    let run = Turn::new(executor, "Weather in Oslo?").run(|_, _| {}).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(server.received()[0].headers["x-from-my-client"], "yes");
}

// ---------------------------------------------------------------------------------------------
// Request shaping and modes.

#[tokio::test]
async fn a_request_hook_sets_tool_choice_on_the_first_iteration_only() {
    let server = Server::start(vec![
        Reply::Events(forecast_call("call_abc", "Oslo")),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;
    let executor = OpenAiExecutor::new(config(&server))
        .unwrap()
        .with_request_hook(|ctx, request| {
            if ctx.iteration() == 0 {
                request
                    .body
                    .insert("tool_choice".to_owned(), json!("required"));
            }
            request.body.insert("temperature".to_owned(), json!(0.1));
        });

    let run = Turn::new(executor, "Weather in Oslo?").run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let received = server.received();
    assert_eq!(received[0].body["tool_choice"], "required");
    assert_eq!(received[1].body.get("tool_choice"), None);
    assert_eq!(received[1].body["temperature"], 0.1);
}

#[tokio::test]
async fn non_streaming_mode_asks_for_one_body_and_reports_it_as_one_chunk() {
    let server = Server::start(vec![Reply::Status(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "scripted-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Sunny in Oslo."}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
        }),
    )])
    .await;

    let run = run_turn(config(&server).with_streaming(false), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = &server.received()[0];
    assert_eq!(received.body["stream"], false);
    assert_eq!(received.body.get("stream_options"), None);
    assert_eq!(received.headers["accept"], "application/json");
    let chunks: Vec<(String, bool)> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Message(content) => Some((content.delta.clone(), content.is_complete)),
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks,
        [("Sunny in Oslo.".to_owned(), false), (String::new(), true)]
    );
    let total = run.events.iter().find_map(|event| match event {
        Event::GenerationStats { stats, .. } => stats.total_tokens,
        _ => None,
    });
    assert_eq!(total, Some(14));
}

// ---------------------------------------------------------------------------------------------
// Parallel tool calls.

/// A tool that sleeps `millis` milliseconds and answers with its label.
fn sleeper() -> Tool {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct SleepArgs {
        /// What to answer.
        label: String,
        /// How long to take.
        millis: u64,
    }
    Tool::typed::<SleepArgs>("sleep")
        .description("Sleeps, then answers.")
        .read_only()
        .handler(|args: SleepArgs, _invocation| async move {
            tokio::time::sleep(Duration::from_millis(args.millis)).await;
            Ok(format!("{} done", args.label))
        })
        .build()
        .unwrap()
}

fn sleep_calls(calls: &[(&str, u64)]) -> Vec<String> {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(index, (label, millis))| {
            json!({"index": index, "id": format!("call_{label}"), "type": "function",
                   "function": {"name": "sleep",
                                "arguments": json!({"label": label, "millis": millis}).to_string()}})
        })
        .collect();
    vec![
        delta(json!({"role": "assistant", "tool_calls": tool_calls})),
        finish("tool_calls"),
        done(),
    ]
}

#[tokio::test]
async fn parallel_tool_calls_run_concurrently_and_their_results_keep_the_models_order() {
    let server = Server::start(vec![
        Reply::Events(sleep_calls(&[("a", 400), ("b", 200), ("c", 10)])),
        Reply::Events(text_answer(&["All done."])),
    ])
    .await;
    let mut turn = Turn::new(
        OpenAiExecutor::new(config(&server)).unwrap(),
        "Sleep three times.",
    );
    turn.tools = vec![sleeper()];

    let run = turn.run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let mut spans = Vec::new();
    for event in &run.events {
        if let Event::ToolExecutionEnd {
            started_at,
            ended_at,
            tool_name,
            ..
        } = event
        {
            assert_eq!(tool_name, "sleep");
            spans.push((*started_at, *ended_at));
        }
    }
    assert_eq!(spans.len(), 3);
    let last_start = spans.iter().map(|span| span.0).max().unwrap();
    let first_end = spans.iter().map(|span| span.1).min().unwrap();
    assert!(
        last_start < first_end,
        "every call started before any ended: {spans:?}"
    );
    let results: Vec<(String, String)> = server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_a", "a done"),
            ("call_b", "b done"),
            ("call_c", "c done")
        ]
        .map(|(id, text)| (id.to_owned(), text.to_owned()))
    );
}

#[tokio::test]
async fn a_concurrency_limit_of_one_runs_tool_calls_one_after_another() {
    let server = Server::start(vec![
        Reply::Events(sleep_calls(&[("a", 50), ("b", 50)])),
        Reply::Events(text_answer(&["All done."])),
    ])
    .await;
    let mut turn = Turn::new(
        OpenAiExecutor::new(config(&server).with_max_concurrent_tools(1)).unwrap(),
        "Sleep twice.",
    );
    turn.tools = vec![sleeper()];

    let run = turn.run(|_, _| {}).await;

    let spans: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionEnd {
                started_at,
                ended_at,
                ..
            } => Some((*started_at, *ended_at)),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 2);
    assert!(spans[0].1 <= spans[1].0, "{spans:?}");
}

// ---------------------------------------------------------------------------------------------
// Media.

#[tokio::test]
async fn user_attachments_and_media_tool_results_are_sent_as_content_parts() {
    use adk::bytes::MediaReader;
    use adk::primitives::{Media, MediaKind};

    let png = Media::user_attachment(
        MediaKind::Image,
        "image/png",
        "photo.png",
        MediaReader::from_bytes(&b"\x89PNG"[..]),
    )
    .unwrap();
    let linked = Media::user_attachment(
        MediaKind::Image,
        "image/jpeg",
        "sky.jpg",
        MediaReader::detached("sky"),
    )
    .unwrap()
    .with_source("https://images.example/sky.jpg");
    let notes = Media::user_attachment(
        MediaKind::Document,
        "text/plain",
        "notes.txt",
        MediaReader::from_bytes(&b"bring an umbrella"[..]),
    )
    .unwrap();
    let question = Message::user("m-user", "What is in these?")
        .unwrap()
        .with_attachments(vec![png, linked, notes])
        .unwrap();
    let chart = Tool::typed::<ForecastArgs>("chart")
        .description("Draws tomorrow's weather.")
        .read_only()
        .handler(|_args: ForecastArgs, _invocation| async move {
            let chart = Media::tool_generated(
                MediaKind::Image,
                "image/png",
                "chart.png",
                MediaReader::from_bytes(&b"chart"[..]),
            )
            .map_err(adk::primitives::ToolError::new)?;
            Ok(adk::primitives::ToolOutput::Media(vec![chart]))
        })
        .build()
        .unwrap();
    let chart_call = vec![
        delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                     "function": {"name": "chart", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        ),
        finish("tool_calls"),
        done(),
    ];
    let server = Server::start(vec![
        Reply::Events(chart_call),
        Reply::Events(text_answer(&["A photo, the sky, a note and a chart."])),
    ])
    .await;
    let turn = Turn {
        executor: OpenAiExecutor::new(config(&server)).unwrap(),
        question,
        tools: vec![chart],
        cancellation: CancellationToken::new(),
    };

    let run = turn.run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let received = server.received();
    let messages = received[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            {"type": "image_url", "image_url": {"url": "https://images.example/sky.jpg"}},
            {"type": "text", "text": "notes.txt:\nbring an umbrella"},
        ]})
    );
    assert_eq!(messages[4]["role"], "tool");
    assert!(
        messages[4]["content"]
            .as_str()
            .unwrap()
            .contains("chart.png (image/png)"),
        "{}",
        messages[4]
    );
    assert_eq!(
        messages[5],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Media returned by tool call c1 (chart):"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,Y2hhcnQ="}},
        ]})
    );
}

#[tokio::test]
async fn an_artifact_tool_result_is_sent_as_its_text() {
    use adk::bytes::SpoolReader;
    use adk::primitives::SpooledArtifact;

    let log = Tool::typed::<ForecastArgs>("station_log")
        .description("The weather station's log for a city.")
        .read_only()
        .handler(|args: ForecastArgs, _invocation| async move {
            let text = format!("{}: 06:00 rain\n{}: 12:00 sun", args.city, args.city);
            Ok(adk::primitives::ToolOutput::Artifact(SpooledArtifact::new(
                SpoolReader::from_bytes("log-1", text),
            )))
        })
        .build()
        .unwrap();
    let log_call = vec![
        delta(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                     "function": {"name": "station_log", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        ),
        finish("tool_calls"),
        done(),
    ];
    let server = Server::start(vec![
        Reply::Events(log_call),
        Reply::Events(text_answer(&["Rain, then sun."])),
    ])
    .await;
    let mut turn = Turn::new(
        OpenAiExecutor::new(config(&server)).unwrap(),
        "What did the station log?",
    );
    turn.tools = vec![log];

    let run = turn.run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let sent_back = server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .map(|message| message["content"].clone())
        .unwrap();
    assert_eq!(sent_back, "Oslo: 06:00 rain\nOslo: 12:00 sun");
}

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
/// Media: attachments sent to the model.
#[path = "openai/media.rs"]
mod media;
/// The order of a turn's reports and the closing of started streams.
#[path = "openai/order.rs"]
mod order;
/// Parallel tool calls.
#[path = "openai/parallel.rs"]
mod parallel;
/// The quickstart example, run against that proxy by `litellm`.
#[path = "../../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;
/// URLs and headers, and how requests are shaped (modes and options).
#[path = "openai/requests.rs"]
mod requests;
/// Retries and timeouts: what is retried, how long it waits, and the overall deadline.
#[path = "openai/retries.rs"]
mod retries;
/// Shapes real servers send (`tests/data/openai/`), caps and the memory they bound.
#[path = "openai/shapes.rs"]
mod shapes;
/// Structured output and typed request fields.
#[path = "openai/structured.rs"]
mod structured;
/// A turn end to end: text, tool calls, provider errors, stalls, cancellation.
#[path = "openai/turns.rs"]
mod turns;

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

//! The Anthropic Messages executor end to end over real HTTP: a Messages API server written for
//! the test listens on 127.0.0.1 and replays the documented event sequences (text, `tool_use`
//! with `input_json_delta`, parallel `tool_use`, `thinking` with `signature_delta`,
//! `redacted_thinking`, `message_delta` usage with cache reads and writes, `ping`, an `error`
//! mid-stream), records what it received, and turns run through a real `TurnRunner`. The
//! `litellm` tests run the same executor against LiteLLM's proxy `/v1/messages`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adk::TurnRunner;
use adk::anthropic::{
    AnthropicConfig, AnthropicError, AnthropicExecutor, REPLAY_TAG, ResponsePart, RetryPolicy,
};
use adk::bytes::MediaReader;
use adk::context::{RawTurnContext, TurnContext};
use adk::events::{Event, GenerationStats, TurnError};
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Media, MediaKind, Message, Tool, ToolError};
use adk::runner::TurnStatus;
use adk::storage::NoopStorage;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Against LiteLLM's proxy `/v1/messages`, with a scripted model behind it.
#[path = "anthropic/litellm.rs"]
mod litellm;
/// The quickstart example, run against that proxy by `litellm`.
#[path = "../../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;

// ---------------------------------------------------------------------------------------------
// The server.

/// How the server answers one request.
enum Reply {
    /// `200` with these server-sent events, then the connection closes.
    Events(Vec<String>),
    /// This status, these headers and this JSON body.
    Status(u16, Vec<(&'static str, &'static str)>, Value),
    /// `200` with the event-stream head, then each piece as the iterator makes it (never held
    /// whole), counted in `written`, until it ends or the client hangs up.
    Generated(Box<dyn Iterator<Item = Vec<u8>> + Send>, Arc<AtomicUsize>),
}

/// One request as the server saw it: its headers (names lower-cased) and JSON body.
#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, value)| value.as_str())
    }
}

struct Server {
    base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Serves `replies` in order, one per connection.
    async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let received = Arc::clone(&received);
            async move {
                for reply in replies {
                    let Ok((mut socket, _)) = listener.accept().await else {
                        return;
                    };
                    let request = read_request(&mut socket).await;
                    received.lock().unwrap().push(request);
                    serve(&mut socket, reply).await;
                }
            }
        });
        Self {
            base_url,
            received,
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
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the client closed before sending its headers");
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8(buffer[..header_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap().to_owned();
    let mut headers = Vec::new();
    let mut content_length = 0;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            if name == "content-length" {
                content_length = value.trim().parse().unwrap();
            }
            headers.push((name, value.trim().to_owned()));
        }
    }
    while buffer.len() < header_end + content_length {
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the client closed before sending its body");
        buffer.extend_from_slice(&chunk[..read]);
    }
    Received {
        request_line,
        headers,
        body: serde_json::from_slice(&buffer[header_end..header_end + content_length]).unwrap(),
    }
}

const EVENT_STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                                 cache-control: no-cache\r\nconnection: close\r\n\r\n";

async fn serve(socket: &mut TcpStream, reply: Reply) {
    match reply {
        Reply::Events(events) => {
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
        Reply::Status(status, headers, body) => {
            let body = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(body.as_bytes()).await.unwrap();
        }
        Reply::Generated(pieces, written) => {
            socket
                .write_all(EVENT_STREAM_HEAD.as_bytes())
                .await
                .unwrap();
            for piece in pieces {
                if socket.write_all(&piece).await.is_err() {
                    break;
                }
                written.fetch_add(piece.len(), Ordering::Relaxed);
            }
        }
    }
    let _ = socket.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// The documented events.

fn event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

fn message_start(usage: Value) -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "model": "claude-scripted", "stop_reason": null, "stop_sequence": null, "usage": usage}}))
}

fn block_start(index: u64, block: Value) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn block_delta(index: u64, delta: Value) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn block_stop(index: u64) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn ping() -> String {
    event(json!({"type": "ping"}))
}

fn message_end(stop_reason: &str, usage: Value) -> Vec<String> {
    vec![
        event(json!({"type": "message_delta",
                     "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                     "usage": usage})),
        event(json!({"type": "message_stop"})),
    ]
}

fn text_block(index: u64, pieces: &[&str]) -> Vec<String> {
    let mut events = vec![block_start(index, json!({"type": "text", "text": ""}))];
    for piece in pieces {
        events.push(block_delta(
            index,
            json!({"type": "text_delta", "text": piece}),
        ));
    }
    events.push(block_stop(index));
    events
}

fn thinking_block(index: u64, pieces: &[&str], signature: &str) -> Vec<String> {
    let mut events = vec![block_start(
        index,
        json!({"type": "thinking", "thinking": ""}),
    )];
    for piece in pieces {
        events.push(block_delta(
            index,
            json!({"type": "thinking_delta", "thinking": piece}),
        ));
    }
    events.push(block_delta(
        index,
        json!({"type": "signature_delta", "signature": signature}),
    ));
    events.push(block_stop(index));
    events
}

/// A `tool_use` block whose input arrives in three pieces of JSON text.
fn tool_use_block(index: u64, id: &str, name: &str, input: Value) -> Vec<String> {
    let text = input.to_string();
    let (first, rest) = text.split_at(3);
    let (second, third) = rest.split_at(rest.len() / 2);
    let mut events = vec![block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )];
    for piece in [first, second, third] {
        events.push(block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        ));
    }
    events.push(block_stop(index));
    events
}

fn text_answer(pieces: &[&str]) -> Vec<String> {
    let mut events = vec![message_start(
        json!({"input_tokens": 5, "output_tokens": 1}),
    )];
    events.extend(text_block(0, pieces));
    events.extend(message_end("end_turn", json!({"output_tokens": 7})));
    events
}

// ---------------------------------------------------------------------------------------------
// The turn.

#[derive(Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

/// What the model is told when the weather tool fails for Mars.
const MARS_ERROR: &str = "tool \"weather\": the tool handler failed: no weather service on Mars";

/// The weather, except on Mars, where the tool fails.
fn weather() -> Tool {
    Tool::typed::<WeatherArgs>("weather")
        .description("Today's weather in a city.")
        .read_only()
        .handler(|args: WeatherArgs, _invocation| async move {
            if args.city == "Mars" {
                return Err(ToolError::new(format!(
                    "no weather service on {}",
                    args.city
                )));
            }
            Ok(format!("{}: 4 °C, light snow", args.city))
        })
        .build()
        .unwrap()
}

fn config(base_url: &str) -> AnthropicConfig {
    AnthropicConfig::new(base_url, "claude-scripted")
        .unwrap()
        .with_api_key("sk-ant-test")
        .with_request_timeout(Duration::from_secs(30))
        .with_stream_idle_timeout(Duration::from_secs(30))
        .with_retry(
            RetryPolicy::default()
                .with_initial_delay(Duration::from_millis(20))
                .with_max_delay(Duration::from_secs(5)),
        )
}

struct Run {
    outcome: adk::TurnOutcome,
    events: Vec<Event>,
}

/// Runs one turn in which the user sends `question`, with the weather tool registered.
async fn run_turn(config: AnthropicConfig, question: Message) -> Run {
    let events = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&events);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .observe(move |event| recorded.lock().unwrap().push(event.clone()))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let question = question.clone();
            Box::pin(async move {
                ctx.store_message(question).await?;
                let _downstream = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .tool(weather())
        .executor(AnthropicExecutor::new(config).unwrap())
        .build();
    let raw = RawTurnContext::new("conversation-1", "You forecast weather.")
        .standing_instruction("Answer in English.");
    let outcome = tokio::time::timeout(Duration::from_secs(60), runner.run(raw))
        .await
        .expect("the turn did not end within 60 s")
        .unwrap();
    let events = events.lock().unwrap().clone();
    Run { outcome, events }
}

fn question(text: &str) -> Message {
    Message::user("m-user", text).unwrap()
}

fn failure(run: &Run) -> &TurnError {
    match &run.outcome.status {
        TurnStatus::Failed(error) => error,
        other => panic!("expected a failed turn, got {other:?}"),
    }
}

fn anthropic_error(run: &Run) -> &AnthropicError {
    let error = failure(run);
    error
        .cause()
        .and_then(|cause| cause.downcast_ref::<AnthropicError>())
        .unwrap_or_else(|| panic!("the cause is not an AnthropicError: {error:?}"))
}

fn stats(run: &Run) -> Vec<GenerationStats> {
    run.events
        .iter()
        .filter_map(|event| match event {
            Event::GenerationStats { stats, .. } => Some(stats.clone()),
            _ => None,
        })
        .collect()
}

/// The model's first answer: thinking (signed), redacted thinking, text, a ping, then two
/// parallel calls (Oslo, and Mars, whose tool fails), with a cache write of the prefix.
fn first_answer() -> Vec<String> {
    let mut events = vec![message_start(json!({
        "input_tokens": 20, "cache_creation_input_tokens": 1500,
        "cache_read_input_tokens": 0, "output_tokens": 1}))];
    events.extend(thinking_block(
        0,
        &["Two cities: ", "Oslo and Mars."],
        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
    ));
    events.push(block_start(
        1,
        json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
    ));
    events.push(block_stop(1));
    events.extend(text_block(2, &["Let me ", "check."]));
    events.push(ping());
    events.extend(tool_use_block(
        3,
        "toolu_01A",
        "weather",
        json!({"city": "Oslo"}),
    ));
    events.extend(tool_use_block(
        4,
        "toolu_01B",
        "weather",
        json!({"city": "Mars"}),
    ));
    events.extend(message_end("tool_use", json!({"output_tokens": 90})));
    events
}

fn second_answer() -> Vec<String> {
    let mut events = vec![message_start(json!({
        "input_tokens": 40, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1500, "output_tokens": 1}))];
    events.extend(text_block(0, &["Oslo: 4 °C. ", "Mars: no data."]));
    events.extend(message_end("end_turn", json!({"output_tokens": 12})));
    events
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_tool_loop_with_thinking_parallel_calls_a_failing_tool_and_a_cached_prefix_completes_and_sends_the_thinking_back_unchanged()
 {
    let server = Server::start(vec![
        Reply::Events(first_answer()),
        Reply::Events(second_answer()),
    ])
    .await;
    let config = config(&server.base_url)
        .with_thinking(1024)
        .with_max_tokens(4096)
        .with_beta("interleaved-thinking-2025-05-14");

    let run = run_turn(config, question("Weather in Oslo and on Mars?")).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = server.received();
    assert_eq!(received.len(), 2, "one request per answer");
    let first = &received[0];
    assert_eq!(first.request_line, "POST /v1/messages HTTP/1.1");
    assert_eq!(first.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        first.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(
        first.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(first.body["max_tokens"], 4096);
    assert_eq!(first.body["stream"], true);
    let cached = json!({"type": "ephemeral"});
    assert_eq!(
        first.body["system"],
        json!([{"type": "text", "text": "You forecast weather."},
               {"type": "text", "text": "Answer in English.", "cache_control": cached}])
    );
    assert_eq!(first.body["tools"][0]["name"], "weather");
    assert_eq!(first.body["tools"][0]["cache_control"], cached);
    assert_eq!(
        first.body["tools"][0]["input_schema"]["properties"]["city"]["type"],
        "string"
    );

    // The second request carries the first answer whole, thinking blocks byte for byte.
    let second = &received[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Two cities: Oslo and Mars.",
             "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01A", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_01B", "name": "weather", "input": {"city": "Mars"}},
        ]})
    );
    // Both results in one user turn, in the model's order; the failed one with `is_error`.
    // The history prefix carries breakpoints on the last turn and on the third-last, where the
    // first request wrote its cache.
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A",
             "content": [{"type": "text", "text": "Oslo: 4 °C, light snow"}]},
            {"type": "tool_result", "tool_use_id": "toolu_01B", "is_error": true,
             "content": [{"type": "text", "text": MARS_ERROR}],
             "cache_control": cached},
        ]})
    );
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": [{"type": "text",
               "text": "Weather in Oslo and on Mars?", "cache_control": cached}]})
    );

    // Usage: every input token in `prompt_tokens`, cache writes then reads reported.
    let stats = stats(&run);
    assert_eq!(stats.len(), 2);
    assert_eq!(
        (
            stats[0].prompt_tokens,
            stats[0].cache_write_tokens,
            stats[0].cache_read_tokens
        ),
        (Some(1520), Some(1500), Some(0))
    );
    assert_eq!(
        (
            stats[1].prompt_tokens,
            stats[1].cache_write_tokens,
            stats[1].cache_read_tokens
        ),
        (Some(1540), Some(0), Some(1500))
    );
    assert_eq!(stats[0].completion_tokens, Some(90));
    assert_eq!(stats[0].finish_reason.as_deref(), Some("tool_use"));

    // Stored: thoughts with their blocks as payloads, the texts, the calls with results.
    let context = &run.outcome.context;
    let thoughts: Vec<_> = context.thoughts.iter().collect();
    assert_eq!(thoughts.len(), 2);
    assert_eq!(thoughts[0].content().render(), "Two cities: Oslo and Mars.");
    assert_eq!(thoughts[0].replay_compatibility(), Some(REPLAY_TAG));
    assert_eq!(thoughts[1].payload().unwrap()["type"], "redacted_thinking");
    let texts: Vec<String> = context
        .messages
        .iter()
        .map(|message| message.content().unwrap().render())
        .collect();
    assert_eq!(
        texts,
        [
            "Weather in Oslo and on Mars?",
            "Let me check.",
            "Oslo: 4 °C. Mars: no data."
        ]
    );
    let calls: Vec<_> = context.tool_calls.iter().collect();
    assert_eq!(calls.len(), 2);
    assert!(!calls[0].is_error() && calls[1].is_error());

    // Thinking streamed as thought events before the text's message events.
    let first_thought = run
        .events
        .iter()
        .position(
            |event| matches!(event, Event::Thought(content) if content.delta == "Two cities: "),
        )
        .expect("a streamed thought");
    let first_text = run
        .events
        .iter()
        .position(|event| matches!(event, Event::Message(content) if content.delta == "Let me "))
        .expect("a streamed message");
    assert!(first_thought < first_text);
}

#[tokio::test]
async fn without_a_cache_policy_no_breakpoint_is_sent() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Hi."]))]).await;
    let config = config(&server.base_url).with_cache(adk::anthropic::CachePolicy::Off);

    let run = run_turn(config, question("Hello")).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let body = server.received()[0].body.to_string();
    assert!(!body.contains("cache_control"), "{body}");
}

#[tokio::test]
async fn a_stream_cut_inside_a_block_fails_typed_naming_the_block_and_interrupts_its_message() {
    let mut events = vec![message_start(json!({"input_tokens": 5}))];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.push(block_delta(
        0,
        json!({"type": "text_delta", "text": "Oslo is"}),
    ));
    let server = Server::start(vec![Reply::Events(events)]).await;

    let run = run_turn(config(&server.base_url), question("Weather in Oslo?")).await;

    let error = anthropic_error(&run);
    assert!(
        matches!(error, AnthropicError::Incomplete { reason } if reason.contains("content block 0 (text)")),
        "{error:?}"
    );
    let interrupted = run.events.iter().any(
        |event| matches!(event, Event::Message(content) if content.is_interrupted && content.full == "Oslo is"),
    );
    assert!(interrupted, "the started message is closed as interrupted");
    assert_eq!(server.received().len(), 1, "a broken answer is not retried");
}

#[tokio::test]
async fn an_unknown_content_block_type_fails_with_unsupported_block() {
    let mut events = vec![message_start(json!({"input_tokens": 5}))];
    events.push(block_start(
        0,
        json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
    ));
    events.push(block_stop(0));
    events.extend(message_end("end_turn", json!({"output_tokens": 1})));
    let server = Server::start(vec![Reply::Events(events)]).await;

    let run = run_turn(config(&server.base_url), question("Search the web.")).await;

    assert!(
        matches!(anthropic_error(&run), AnthropicError::UnsupportedBlock { block_type, index: 0 } if block_type == "server_tool_use"),
        "{:?}",
        anthropic_error(&run)
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_fails_with_its_type_and_is_not_retried() {
    let mut events = vec![message_start(json!({"input_tokens": 5}))];
    events.push(block_start(0, json!({"type": "text", "text": ""})));
    events.push(block_delta(0, json!({"type": "text_delta", "text": "Osl"})));
    events.push(event(json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}})));
    let server = Server::start(vec![Reply::Events(events)]).await;

    let run = run_turn(config(&server.base_url), question("Weather in Oslo?")).await;

    assert!(
        matches!(anthropic_error(&run), AnthropicError::StreamedError { kind: Some(kind), message, .. }
            if kind == "overloaded_error" && message == "Overloaded"),
        "{:?}",
        anthropic_error(&run)
    );
    assert_eq!(server.received().len(), 1);
}

/// A 256 MiB line, generated as it is written: the call fails at the 4 MiB line cap, and the
/// client hangs up without reading the rest, so the server gets to write only a small part.
#[tokio::test]
async fn a_256_mib_line_fails_at_the_line_cap_without_the_rest_being_read() {
    const PIECE: usize = 64 << 10;
    let written = Arc::new(AtomicUsize::new(0));
    let head = format!(
        "{}event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\
         \"delta\":{{\"type\":\"text_delta\",\"text\":\"",
        message_start(json!({"input_tokens": 5}))
            + &block_start(0, json!({"type": "text", "text": ""}))
    )
    .into_bytes();
    let body = (0..(256 << 20) / PIECE).map(|_| vec![b'x'; PIECE]);
    let server = Server::start(vec![Reply::Generated(
        Box::new(std::iter::once(head).chain(body)),
        Arc::clone(&written),
    )])
    .await;

    let run = run_turn(config(&server.base_url), question("Write a lot.")).await;

    let error = anthropic_error(&run);
    assert!(
        matches!(
            error,
            AnthropicError::ResponseTooLarge {
                part: ResponsePart::Line,
                limit,
                ..
            } if *limit == 4 << 20
        ),
        "{error:?}"
    );
    assert!(failure(&run).message().len() < 1024);
    // Give the server a moment to notice the hang-up.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = written.load(Ordering::Relaxed);
    println!("the server wrote {sent} bytes of 256 MiB before the client hung up");
    assert!(
        sent < 64 << 20,
        "the server wrote {sent} bytes before the client hung up"
    );
}

#[tokio::test]
async fn overloaded_and_rate_limited_are_retried_after_retry_after_and_then_succeed() {
    let server = Server::start(vec![
        Reply::Status(
            429,
            vec![("retry-after", "0")],
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        ),
        Reply::Status(
            529,
            vec![],
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server.base_url), question("Weather in Oslo?")).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(server.received().len(), 3);
    let retries: Vec<u64> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Log(record) if record.kind == "anthropic.retry" => {
                record.payload.as_ref().unwrap()["status"].as_u64()
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries, [429, 529]);
}

#[tokio::test]
async fn an_invalid_request_is_not_retried_and_keeps_its_type_and_request_id() {
    let server = Server::start(vec![Reply::Status(
        400,
        vec![("request-id", "req_011")],
        json!({"type": "error", "error": {"type": "invalid_request_error",
               "message": "messages.1: tool_use ids must be unique"}}),
    )])
    .await;

    let run = run_turn(config(&server.base_url), question("Weather in Oslo?")).await;

    match anthropic_error(&run) {
        AnthropicError::Status {
            status,
            kind,
            message,
            request_id,
            ..
        } => {
            assert_eq!(*status, 400);
            assert_eq!(kind.as_deref(), Some("invalid_request_error"));
            assert_eq!(message, "messages.1: tool_use ids must be unique");
            assert_eq!(request_id.as_deref(), Some("req_011"));
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn images_and_pdf_documents_go_as_image_and_document_blocks() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Got them."]))]).await;
    let png = Media::user_attachment(
        MediaKind::Image,
        "image/png",
        "sky.png",
        MediaReader::from_bytes(&b"\x89PNG"[..]),
    )
    .unwrap();
    let pdf = Media::user_attachment(
        MediaKind::Document,
        "application/pdf",
        "forecast.pdf",
        MediaReader::from_bytes(&b"%PDF-1.7"[..]),
    )
    .unwrap();
    let notes = Media::user_attachment(
        MediaKind::Document,
        "text/plain",
        "notes.txt",
        MediaReader::from_bytes(&b"bring an umbrella"[..]),
    )
    .unwrap();
    let message = question("What do these say?")
        .with_attachments(vec![png, pdf, notes])
        .unwrap();

    let run = run_turn(config(&server.base_url), message).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let body = &server.received()[0].body;
    let content = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content[0]["text"], "What do these say?");
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
               "data": "iVBORw=="}})
    );
    assert_eq!(
        content[2],
        json!({"type": "document", "title": "forecast.pdf", "source": {"type": "base64",
               "media_type": "application/pdf", "data": "JVBERi0xLjc="}})
    );
    assert_eq!(content[3]["source"]["type"], "text");
    assert_eq!(content[3]["source"]["data"], "bring an umbrella");
}

#[tokio::test]
async fn a_whole_json_message_instead_of_a_stream_is_read_as_the_answer() {
    let server = Server::start(vec![Reply::Status(
        200,
        vec![],
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-scripted",
               "content": [{"type": "text", "text": "Sunny."}],
               "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}),
    )])
    .await;

    let run = run_turn(config(&server.base_url), question("Weather in Oslo?")).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let last = run.outcome.context.messages.iter().next_back().unwrap();
    assert_eq!(last.content().unwrap().render(), "Sunny.");
}

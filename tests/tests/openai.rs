//! The OpenAI-compatible executor end to end over real HTTP: a chat-completions server written
//! for the test listens on 127.0.0.1, answers each request with a scripted reply (streamed
//! chunks, tool-call deltas split across chunks, an error status, a stalled stream) and records
//! what it received; turns run through a real `TurnRunner`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::events::{DispatchStatus, ErrorCode, Event, TurnError};
use adk::openai::{OpenAiConfig, OpenAiError, OpenAiExecutor, TimeoutPhase};
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
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    authorization: Option<String>,
    body: Value,
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
    let mut content_length = 0;
    let mut authorization = None;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => content_length = value.trim().parse().unwrap(),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
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

fn config(server: &Server) -> OpenAiConfig {
    OpenAiConfig::new(&server.base_url, "scripted-model")
        .unwrap()
        .with_api_key("sk-test")
        .with_request_timeout(Duration::from_secs(30))
        .with_stream_idle_timeout(Duration::from_secs(30))
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
    let events = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&events);
    let token = cancellation.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(forecast())
        .observe(move |event| {
            recorded.lock().unwrap().push(event.clone());
            on_event(event, &token);
        })
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.store_message(Message::user("m-user", question)?)
                    .await?;
                // How the rest went is the outcome's to tell; each test checks it there.
                let _downstream = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(OpenAiExecutor::new(config).unwrap())
        .build();
    let raw = RawTurnContext::new("conversation-1", "You forecast weather.")
        .standing_instruction("Answer in English.")
        .cancellation(cancellation);
    // A bound on the whole turn, so a hang fails the test instead of stalling the suite.
    let outcome = tokio::time::timeout(Duration::from_secs(20), runner.run(raw))
        .await
        .expect("the turn did not end within 20 s")
        .unwrap();
    let events = events.lock().unwrap().clone();
    Run { outcome, events }
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
                content.full.clone(),
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
                "id": "call_1",
                "type": "function",
                "function": {"name": "forecast", "arguments": r#"{"city":"Oslo"}"#},
            }]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Oslo: sunny"},
        ])
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
        [("call_1", "Oslo: sunny"), ("call_2", "Bergen: rain")]
    );
}

#[tokio::test]
async fn an_error_status_fails_the_dispatch_with_the_servers_message() {
    let server = Server::start(vec![Reply::Status(
        500,
        json!({"error": {"message": "The model is overloaded", "type": "server_error"}}),
    )])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Nack));
    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        error.message().contains("The model is overloaded") && error.message().contains("500"),
        "{}",
        error.message()
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
    assert!(error.message().contains("stalled"), "{}", error.message());
    assert!(matches!(
        openai_error(error),
        OpenAiError::Timeout {
            phase: TimeoutPhase::Stream,
            after
        } if *after == Duration::from_millis(300)
    ));
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_naming_the_endpoint() {
    // A port that was just free: bind, read it, close.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m").unwrap();

    let run = run_turn(config, "Weather in Oslo?").await;

    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        error
            .message()
            .contains(&format!("127.0.0.1:{port}/v1/chat/completions")),
        "{}",
        error.message()
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
async fn a_json_body_instead_of_an_event_stream_is_refused_with_what_it_said() {
    let server = Server::start(vec![
        Reply::Status(200, json!({"error": {"message": "quota exhausted"}})),
        Reply::Status(200, json!({"choices": [{"message": {"content": "hi"}}]})),
    ])
    .await;

    let reported = run_turn(config(&server), "Weather in Oslo?").await;
    let error = failure(&reported);
    assert!(
        error.message().contains("quota exhausted"),
        "{}",
        error.message()
    );
    assert!(matches!(
        openai_error(error),
        OpenAiError::StreamedError { .. }
    ));

    let unstreamed = run_turn(config(&server), "Weather in Oslo?").await;
    let error = failure(&unstreamed);
    assert!(
        error.message().contains("stream: true"),
        "{}",
        error.message()
    );
    assert!(matches!(
        openai_error(error),
        OpenAiError::MalformedStream { data, .. } if data.contains("\"hi\"")
    ));
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

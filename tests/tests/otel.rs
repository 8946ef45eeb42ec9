//! OpenTelemetry export (feature `otel`): a turn's GenAI spans — `invoke_agent`, `chat` and
//! `execute_tool` — arrive at a real OTLP/HTTP receiver with the semantic conventions'
//! attributes.
//!
//! The receiver is an HTTP server started here that decodes each request with the OTLP
//! protocol's own generated messages (`opentelemetry-proto`), as a collector does; no
//! OpenTelemetry Collector binary is packaged in the registries this project installs from.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use adk::Agent;
use adk::context::DispatchContext;
use adk::dispatch::executor_fn;
use adk::events::GenerationStats;
use adk::pipeline::BoxError;
use adk::primitives::{Message, Tool, ToolCall, ToolOutput};
use adk::storage::NoopStorage;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// An OTLP/HTTP receiver on 127.0.0.1, on a thread and runtime of its own (so a caller that
/// blocks while the exporter sends cannot stall it), keeping every span it was sent.
struct Receiver {
    address: SocketAddr,
    spans: Arc<(Mutex<Vec<Span>>, Condvar)>,
}

impl Receiver {
    fn start() -> Self {
        let spans = Arc::new((Mutex::new(Vec::new()), Condvar::new()));
        let kept = Arc::clone(&spans);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let kept = Arc::clone(&kept);
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let kept = Arc::clone(&kept);
                            async move { receive(request, &kept).await }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
        });
        Self { address, spans }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The spans received, once at least `count` arrived; fails after ten seconds.
    fn wait_for(&self, count: usize) -> Vec<Span> {
        let (spans, arrived) = &*self.spans;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut spans = spans.lock().unwrap();
        while spans.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "only {} of {count} spans arrived",
                spans.len()
            );
            spans = arrived.wait_timeout(spans, left).unwrap().0;
        }
        spans.clone()
    }
}

async fn receive(
    request: hyper::Request<hyper::body::Incoming>,
    kept: &(Mutex<Vec<Span>>, Condvar),
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    assert_eq!(request.uri().path(), "/v1/traces");
    assert_eq!(
        request.headers()["content-type"],
        "application/x-protobuf",
        "OTLP/HTTP with protobuf bodies"
    );
    let body = request.into_body().collect().await?.to_bytes();
    let export = ExportTraceServiceRequest::decode(body).unwrap();
    let (spans, arrived) = kept;
    spans.lock().unwrap().extend(
        export
            .resource_spans
            .into_iter()
            .flat_map(|resource| resource.scope_spans)
            .flat_map(|scope| scope.spans),
    );
    arrived.notify_all();
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    Ok(hyper::Response::builder()
        .header("content-type", "application/x-protobuf")
        .body(Full::new(Bytes::from(answer)))
        .unwrap())
}

/// A span's attributes, each as the text of its value (arrays as `[a, b]`).
fn attributes(span: &Span) -> HashMap<String, String> {
    fn text(value: Option<&Value>) -> String {
        match value {
            Some(Value::StringValue(text)) => text.clone(),
            Some(Value::IntValue(number)) => number.to_string(),
            Some(Value::BoolValue(flag)) => flag.to_string(),
            Some(Value::ArrayValue(array)) => format!(
                "[{}]",
                array
                    .values
                    .iter()
                    .map(|value| text(value.value.as_ref()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => format!("{other:?}"),
        }
    }
    span.attributes
        .iter()
        .map(|pair| {
            let value = pair.value.as_ref().and_then(|value| value.value.as_ref());
            (pair.key.clone(), text(value))
        })
        .collect()
}

fn stats(input: u64, output: u64, finish: &str) -> GenerationStats {
    let mut stats = GenerationStats::new();
    stats.prompt_tokens = Some(input);
    stats.completion_tokens = Some(output);
    stats.model = Some("test-model".to_owned());
    stats.provider = Some("test-provider".to_owned());
    stats.finish_reason = Some(finish.to_owned());
    stats
}

/// Calls the weather tool in its first model call and answers in its second, reporting token
/// usage for each as a provider's executor does.
fn model() -> impl adk::dispatch::Executor {
    executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            if ctx.iteration() == 0 {
                ctx.report_generation_stats(stats(21, 7, "tool_calls"));
                let call = ToolCall::new("call-1", "weather", serde_json::json!({"city": "Oslo"}))?;
                ctx.store_tool_call(call.clone()).await?;
                let finished = match ctx.execute_tool(&call).await {
                    Ok(ToolOutput::Text(text)) => call.complete(text),
                    other => call.fail(format!("{other:?}")),
                };
                ctx.mutate_tool_call(finished).await?;
            } else {
                ctx.report_generation_stats(stats(30, 9, "stop"));
                ctx.store_message(Message::assistant("reply", "Sunny in Oslo.")?)
                    .await?;
                ctx.ack()?;
            }
            Ok::<(), BoxError>(())
        })
    })
}

#[test]
fn a_turns_genai_spans_arrive_at_an_otlp_receiver_with_their_attributes() {
    let receiver = Receiver::start();
    let guard = adk::otel::Otel::new(receiver.endpoint())
        .service_name("otel-test")
        .capture_content(true)
        .install()
        .unwrap();
    let weather = Tool::builder("weather")
        .description("Today's weather in a city.")
        .handler(|args: serde_json::Value, _| async move {
            Ok(format!("sunny in {}", args["city"].as_str().unwrap_or("?")))
        })
        .build()
        .unwrap();
    let agent = Agent::builder("forecaster")
        .model(model())
        .tool(weather)
        .storage(NoopStorage::new())
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let outcome = agent
            .run("conversation-7", "Weather in Oslo?")
            .await
            .unwrap();
        let _completed = outcome.into_result().unwrap();
    });
    // Sends what is buffered; the receiver runs on its own thread, so blocking here is fine.
    guard.shutdown().unwrap();

    let spans = receiver.wait_for(4);
    let named =
        |name: &str| -> Vec<&Span> { spans.iter().filter(|span| span.name == name).collect() };
    let turn = named("invoke_agent forecaster");
    let chats = named("chat test-model");
    let tools = named("execute_tool weather");
    assert_eq!(
        (turn.len(), chats.len(), tools.len()),
        (1, 2, 1),
        "{:?}",
        spans.iter().map(|span| &span.name).collect::<Vec<_>>()
    );
    let (turn, tool) = (turn[0], tools[0]);

    let attributes_of_turn = attributes(turn);
    assert_eq!(attributes_of_turn["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(attributes_of_turn["gen_ai.agent.name"], "forecaster");
    assert_eq!(
        attributes_of_turn["gen_ai.conversation.id"],
        "conversation-7"
    );

    // Both model calls are children of the turn, in one trace, with what the model reported.
    for (chat, (input, output, finish)) in
        chats.iter().zip([(21, 7, "tool_calls"), (30, 9, "stop")])
    {
        assert_eq!(chat.trace_id, turn.trace_id);
        assert_eq!(
            chat.parent_span_id, turn.span_id,
            "a model call is a child of its turn"
        );
        let attributes = attributes(chat);
        assert_eq!(attributes["gen_ai.operation.name"], "chat");
        assert_eq!(attributes["gen_ai.request.model"], "test-model");
        assert_eq!(attributes["gen_ai.response.model"], "test-model");
        assert_eq!(attributes["gen_ai.provider.name"], "test-provider");
        assert_eq!(attributes["gen_ai.usage.input_tokens"], input.to_string());
        assert_eq!(attributes["gen_ai.usage.output_tokens"], output.to_string());
        assert_eq!(
            attributes["gen_ai.response.finish_reasons"],
            format!("[{finish}]"),
            "a string array"
        );
    }

    // The tool call is a child of the model call that made it (the first).
    let first_chat = chats
        .iter()
        .find(|chat| attributes(chat)["gen_ai.usage.input_tokens"] == "21")
        .unwrap();
    assert_eq!(tool.trace_id, turn.trace_id);
    assert_eq!(tool.parent_span_id, first_chat.span_id);
    let attributes = attributes(tool);
    assert_eq!(attributes["gen_ai.operation.name"], "execute_tool");
    assert_eq!(attributes["gen_ai.tool.name"], "weather");
    assert_eq!(attributes["gen_ai.tool.call.id"], "call-1");
    // Content capture was asked for.
    assert_eq!(
        attributes["gen_ai.tool.call.arguments"],
        r#"{"city":"Oslo"}"#
    );
    assert_eq!(attributes["gen_ai.tool.call.result"], "sunny in Oslo");
}

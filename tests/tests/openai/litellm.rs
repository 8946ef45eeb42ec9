//! Against a real LiteLLM proxy: `litellm[proxy]` from PyPI, installed by `.ci/litellm` into a
//! cached virtual environment (`~/.cache/adk-litellm`), started once for this test binary on
//! 127.0.0.1 and a free port, with a scripted model behind it (`tests/litellm/`) that answers
//! "Let me check." and a tool call in one streamed response, answers with text once it has the
//! result, and records every request it receives. The proxy exits with this test binary.
//!
//! Without Python, or when the install fails, these tests print a banner saying they did NOT
//! run and pass; with `CI` set they fail instead.

use std::sync::Arc;
use std::time::Duration;

use adk_integration_tests::litellm_proxy::{MASTER_KEY, Proxy, proxy};

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::openai::{OpenAiConfig, OpenAiExecutor};
use adk::pipeline::{BoxError, Next};
use adk::primitives::Tool;
use adk::runner::TurnStatus;
use adk::storage::{FetchWindow, SharedStorage};
use serde::Deserialize;
use serde_json::Value;

/// The OpenAI side of the shared proxy.
trait OpenAiProxy {
    fn executor(&self, model: &str) -> OpenAiExecutor;
    fn config(&self, model: &str) -> OpenAiConfig;
}

impl OpenAiProxy for Proxy {
    /// An executor asking `scripted/{model}`; the test's own model name keeps its requests
    /// apart from the other tests' in the shared record.
    fn executor(&self, model: &str) -> OpenAiExecutor {
        OpenAiExecutor::new(self.config(model)).unwrap()
    }

    fn config(&self, model: &str) -> OpenAiConfig {
        OpenAiConfig::new(&self.base_url, format!("scripted/{model}"))
            .unwrap()
            .with_api_key(MASTER_KEY)
            .with_request_timeout(Duration::from_secs(60))
            .with_stream_idle_timeout(Duration::from_secs(60))
    }
}

// ---------------------------------------------------------------------------------------------
// The turns.

#[derive(Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

fn weather() -> Tool {
    Tool::typed::<WeatherArgs>("weather")
        .description("Today's weather in a city.")
        .read_only()
        .handler(|args: WeatherArgs, _invocation| async move {
            Ok(format!("{}: 4 °C, light snow", args.city))
        })
        .build()
        .unwrap()
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CalculatorArgs {
    /// Arithmetic.
    expression: String,
}

fn calculator() -> Tool {
    Tool::typed::<CalculatorArgs>("calculator")
        .description("Evaluates arithmetic.")
        .read_only()
        .handler(|args: CalculatorArgs, _invocation| async move {
            match args.expression.as_str() {
                "12 * (3 + 4)" => Ok(format!("{} = 84", args.expression)),
                other => Err(format!("this calculator knows one sum, not `{other}`").into()),
            }
        })
        .build()
        .unwrap()
}

/// Loads the whole conversation from storage into the turn, as an app continuing a
/// conversation does (the new question, stored by the runner, comes last).
#[adk::middleware(pipeline = turn_input)]
async fn load_history(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let messages = ctx.fetch_messages_within(FetchWindow::All).await?;
    ctx.messages.extend(messages);
    let thoughts = ctx.fetch_thoughts_within(FetchWindow::All).await?;
    ctx.thoughts.extend(thoughts);
    let calls = ctx.fetch_tool_calls_within(FetchWindow::All).await?;
    ctx.tool_calls.extend(calls);
    let _ = next.run(ctx).await;
    Ok(())
}

/// One turn asking `question` in `conversation`, with the history in `storage`; ends within a
/// minute or fails the test.
async fn ask(storage: SharedStorage, executor: OpenAiExecutor, conversation: &str, question: &str) {
    let runner = TurnRunner::builder()
        .shared_storage(storage)
        .executor(executor)
        .tool(weather())
        .tool(calculator())
        .turn_input(load_history)
        .build();
    let raw = RawTurnContext::new(conversation, "You answer with the tools you have.")
        .user_message(question);
    let outcome = tokio::time::timeout(Duration::from_secs(60), runner.run(raw))
        .await
        .expect("the turn did not end within a minute")
        .unwrap();
    assert!(
        matches!(outcome.status, TurnStatus::Completed),
        "the turn did not complete: {:?}",
        outcome.status
    );
}

/// A request's messages without the system prompt, as `role` or `role{content, tool_calls}`.
fn roles(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| message["role"] != "system")
        .map(|message| {
            let role = message["role"].as_str().unwrap_or("?").to_owned();
            match message.get("tool_calls").and_then(Value::as_array) {
                Some(calls) if !calls.is_empty() => {
                    let names: Vec<&str> = calls
                        .iter()
                        .map(|call| call["function"]["name"].as_str().unwrap_or("?"))
                        .collect();
                    format!("{role}{{{:?}, {}}}", text(message), names.join(", "))
                }
                _ => role,
            }
        })
        .collect()
}

fn text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// The tool messages answer the calls just before them, by id.
fn assert_results_follow_their_calls(messages: &[Value]) {
    for (index, message) in messages.iter().enumerate() {
        if message["role"] != "tool" {
            continue;
        }
        let asked = messages[..index]
            .iter()
            .rev()
            .find(|earlier| earlier["role"] == "assistant")
            .and_then(|assistant| assistant["tool_calls"].as_array())
            .is_some_and(|calls| {
                calls
                    .iter()
                    .any(|call| call["id"] == message["tool_call_id"])
            });
        assert!(
            asked,
            "a tool result without its call before it: {messages:#?}"
        );
    }
}

/// The first turn, asked with nothing before it: two model calls, the second holding the
/// answer's text and call together, then the result.
async fn weather_turn(proxy: &Proxy, storage: SharedStorage, model: &str) {
    ask(
        storage,
        proxy.executor(model),
        model,
        "What is the weather in Oslo?",
    )
    .await;
    let requests = proxy.requests(model);
    assert_eq!(requests.len(), 2, "model calls: {requests:#?}");
    assert_eq!(
        roles(&requests[1]),
        ["user", r#"assistant{"Let me check.", weather}"#, "tool"]
    );
    assert_results_follow_their_calls(&requests[1]);
}

/// A second turn, asked after the history was loaded back from storage: its first request
/// holds the first turn in the order the model produced it.
async fn arithmetic_turn_after_reload(proxy: &Proxy, storage: SharedStorage, model: &str) {
    ask(
        storage,
        proxy.executor(model),
        model,
        "What is 12 * (3 + 4)?",
    )
    .await;
    let requests = proxy.requests(model);
    assert_eq!(requests.len(), 4, "two model calls per turn: {requests:#?}");
    assert_eq!(
        roles(&requests[2]),
        [
            "user",
            r#"assistant{"Let me check.", weather}"#,
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(
        roles(&requests[3])[5..],
        [r#"assistant{"Let me calculate.", calculator}"#, "tool"]
    );
    assert_results_follow_their_calls(&requests[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_text_then_a_tool_call_goes_back_as_one_assistant_message_and_the_turn_takes_two_calls()
 {
    let Some(proxy) = proxy("litellm live") else {
        return;
    };
    let storage = SharedStorage::new(adk::storage::NoopStorage::new());
    weather_turn(proxy, storage, "live").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_history_reloaded_from_sqlite_goes_back_in_the_order_the_model_produced_it() {
    let Some(proxy) = proxy("litellm sqlite") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("conversation.db");
    let storage = adk::sqlite::SqliteStorage::open(&path).await.unwrap();
    weather_turn(proxy, SharedStorage::new(storage), "sqlite").await;
    // A new process: the file opened again.
    let storage = adk::sqlite::SqliteStorage::open(&path).await.unwrap();
    arithmetic_turn_after_reload(proxy, SharedStorage::new(storage), "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_history_reloaded_from_postgres_goes_back_in_the_order_the_model_produced_it() {
    let Some(options) = adk_integration_tests::postgres_database::fresh_options("litellm") else {
        return;
    };
    let Some(proxy) = proxy("litellm postgres") else {
        return;
    };
    let storage = adk::postgres::PostgresStorage::connect_with(options.clone())
        .await
        .unwrap();
    weather_turn(proxy, SharedStorage::new(storage), "postgres").await;
    // A new process: a new pool on the same database.
    let storage = adk::postgres::PostgresStorage::connect_with(options)
        .await
        .unwrap();
    arithmetic_turn_after_reload(proxy, SharedStorage::new(storage), "postgres").await;
}

/// The quickstart, run against the proxy as `cargo run --example quickstart --features
/// adk-examples/openai` with `OPENAI_BASE_URL` set runs it: every turn completes and its
/// transcript, read back from SQLite, is in the order the model produced it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_the_quickstart_completes_every_turn_and_prints_the_transcript_in_the_models_order()
{
    let Some(proxy) = proxy("litellm quickstart") else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let options = super::quickstart::Options {
        data_dir: data.path().to_owned(),
        reset: false,
        quick: false,
        database_url: None,
    };
    let executor = Arc::new(proxy.executor("quickstart"));
    let lines = super::quickstart::run(&options, executor).await.unwrap();
    assert_eq!(
        lines,
        [
            "     user: What is the weather in Oslo?",
            "assistant: Let me check.",
            r#"     tool: weather({"city":"Oslo"}) -> Oslo is cloudy today"#,
            "assistant: The weather tool says: Oslo is cloudy today.",
            "     user: What is 12 * (3 + 4)?",
            "assistant: Let me calculate.",
            r#"     tool: calculator({"expression":"12 * (3 + 4)"}) -> 12 * (3 + 4) = 84"#,
            "assistant: The calculator tool says: 12 * (3 + 4) = 84.",
            "     user: What do you remember?",
            r#"assistant: Earlier you said: "What is the weather in Oslo?", "What is 12 * (3 + 4)?"."#,
        ]
    );
    // Two model calls for each tool-using question, one for the last.
    assert_eq!(proxy.requests("quickstart").len(), 5);
}

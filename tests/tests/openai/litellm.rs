//! Against a real LiteLLM proxy: `litellm[proxy]` from PyPI, installed by `.ci/litellm` into a
//! cached virtual environment (`~/.cache/adk-litellm`), started once for this test binary on
//! 127.0.0.1 and a free port, with a scripted model behind it (`tests/litellm/`) that answers
//! "Let me check." and a tool call in one streamed response, answers with text once it has the
//! result, and records every request it receives. The proxy exits with this test binary.
//!
//! Without Python, or when the install fails, these tests print a banner saying they did NOT
//! run and pass; with `CI` set they fail instead.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Once, OnceLock};
use std::time::{Duration, Instant};

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::openai::{OpenAiConfig, OpenAiExecutor};
use adk::pipeline::{BoxError, Next};
use adk::primitives::Tool;
use adk::runner::TurnStatus;
use adk::storage::{FetchWindow, SharedStorage};
use serde::Deserialize;
use serde_json::Value;

/// The proxy's master key: the key every request is sent with.
const MASTER_KEY: &str = "sk-adk-litellm-test";

/// How long the install may take (a cold pip cache downloads about 100 MB).
const INSTALL_LIMIT: Duration = Duration::from_secs(20 * 60);
/// How long the proxy may take to answer its liveness probe.
const START_LIMIT: Duration = Duration::from_secs(180);

/// The running proxy.
struct Proxy {
    /// `http://127.0.0.1:PORT/v1`.
    base_url: String,
    /// One JSON line per request the scripted model received.
    record: PathBuf,
    /// Holds the record and the proxy's log.
    _folder: tempfile::TempDir,
    /// Never waited for: the proxy exits when this process does (see `scripted_model.py`).
    _child: Child,
}

static PROXY: OnceLock<Result<Proxy, String>> = OnceLock::new();

/// The shared proxy, started by the first test that asks; `None` (after a banner) when it
/// cannot run here. With `CI` set, a proxy that cannot run fails the test.
fn proxy(test: &str) -> Option<&'static Proxy> {
    match PROXY.get_or_init(start) {
        Ok(proxy) => Some(proxy),
        Err(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and the LiteLLM proxy cannot run: {reason}"
            );
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                // The real stderr, not the harness's capture: the banner shows in a passing run.
                let _ = writeln!(
                    std::io::stderr(),
                    "\n{rule}\nNOTE: the LiteLLM tests did NOT run: {reason}\n      \
                     They need Python 3 with venv and pip, and PyPI (or a warm pip cache):\n      \
                     .ci/litellm install   creates the environment they use.\n{rule}\n",
                    rule = "=".repeat(78)
                );
            });
            // One write, so the line is not split by other tests' output.
            let line = format!("NOT RUN: {test} (no LiteLLM proxy)\n");
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            None
        }
    }
}

fn start() -> Result<Proxy, String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace folder")?;
    let program = install(&repo.join(".ci/litellm"))?;
    let folder = tempfile::tempdir().map_err(|error| format!("a temporary folder: {error}"))?;
    let record = folder.path().join("requests.jsonl");
    let log_path = folder.path().join("litellm.log");
    let log = std::fs::File::create(&log_path).map_err(|error| format!("the log: {error}"))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|error| format!("a free port: {error}"))?
        .port();
    let mut child = Command::new(&program)
        .arg("--config")
        .arg(repo.join("tests/litellm/config.yaml"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .current_dir(folder.path())
        .env("LITELLM_MASTER_KEY", MASTER_KEY)
        // The model price list bundled with LiteLLM, not a download at every start.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("ADK_LITELLM_RECORD", &record)
        .env("ADK_LITELLM_EXIT_WITH_PARENT", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|error| error.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|error| format!("starting {}: {error}", program.display()))?;
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "the proxy exited ({status}) before it was ready; its log:\n{}",
                tail(&log_path)
            ));
        }
        if is_live(port) {
            break;
        }
        if started.elapsed() > START_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the proxy was not ready within {START_LIMIT:?}; its log:\n{}",
                tail(&log_path)
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = writeln!(
        std::io::stderr(),
        "litellm: proxy ready on 127.0.0.1:{port} after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(Proxy {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        record,
        _folder: folder,
        _child: child,
    })
}

/// Runs `.ci/litellm install` (a no-op once the environment exists) and returns the path of
/// the `litellm` program it prints.
fn install(script: &Path) -> Result<PathBuf, String> {
    let mut child = Command::new("bash")
        .arg(script)
        .arg("install")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("running {}: {error}", script.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > INSTALL_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the install took longer than {INSTALL_LIMIT:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(error) => return Err(format!("waiting for the install: {error}")),
        }
    };
    let mut printed = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut printed);
    }
    if !status.success() {
        return Err(format!(
            "`.ci/litellm install` failed ({status}); its messages are above"
        ));
    }
    let program = PathBuf::from(printed.trim());
    if program.is_file() {
        Ok(program)
    } else {
        Err(format!(
            "`.ci/litellm install` printed no program: {printed:?}"
        ))
    }
}

/// Whether the proxy answers its liveness probe with 200.
fn is_live(port: u16) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /health/liveliness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).is_ok() && status.contains(" 200 ")
}

fn tail(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl Proxy {
    /// The requests the scripted model received for `model`, in order: their `messages`.
    fn requests(&self, model: &str) -> Vec<Vec<Value>> {
        let record = std::fs::read_to_string(&self.record).unwrap_or_default();
        record
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|request| request["model"] == model)
            .map(|request| request["messages"].as_array().unwrap().clone())
            .collect()
    }

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

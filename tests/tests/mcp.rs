//! MCP both ways against components nobody here wrote: the reference test server
//! `@modelcontextprotocol/server-everything` (npm) over stdio and streamable HTTP, the Python
//! server `mcp-server-time` (PyPI), and the Python `mcp` client package calling adk's tools.
//! `.ci/mcp install` puts them in a cached folder (`~/.cache/adk-mcp`). A deliberately broken
//! server (`tests/mcp/misbehaving_server.py`) pins the bad-input promises.
//!
//! Without node/npm or Python, these tests print a banner saying they did NOT run and pass;
//! with `CI` set they fail instead.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use adk::TurnRunner;
use adk::context::RawTurnContext;
use adk::dispatch::{ScriptedModel, Step};
use adk::mcp::{McpClient, McpError, McpServer, McpToolInfo, ReconnectPolicy};
use adk::primitives::{MediaKind, Tool, ToolError, ToolOutput, ToolRegistry};
use adk::runner::TurnStatus;
use adk::storage::NoopStorage;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[path = "mcp/server_side.rs"]
mod server_side;
#[path = "mcp/through_pipeline.rs"]
mod through_pipeline;

/// Where `.ci/mcp install` put the programs: `everything`, `python`, `time`.
static PROGRAMS: OnceLock<Result<HashMap<String, PathBuf>, String>> = OnceLock::new();

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
}

fn install() -> Result<HashMap<String, PathBuf>, String> {
    let output = Command::new("bash")
        .arg(repo().join(".ci/mcp"))
        .arg("install")
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("could not run .ci/mcp: {error}"))?;
    if !output.status.success() {
        return Err(format!(".ci/mcp install failed ({})", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, path)| (key.to_owned(), PathBuf::from(path)))
        .collect())
}

/// The installed programs; `None` (after a banner) when they cannot be installed here. With
/// `CI` set, that fails the test.
pub(crate) fn programs(test: &str) -> Option<&'static HashMap<String, PathBuf>> {
    match PROGRAMS.get_or_init(install) {
        Ok(programs) => Some(programs),
        Err(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and the MCP test components cannot be installed: {reason}"
            );
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "\n{rule}\nNOTE: the MCP tests did NOT run: {reason}\n      \
                     They need node/npm and Python 3 with venv, and the npm registry and PyPI\n      \
                     (or warm caches): .ci/mcp install sets them up.\n{rule}\n",
                    rule = "=".repeat(78)
                );
            });
            let line = format!("NOT RUN: {test} (no MCP test components)\n");
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            None
        }
    }
}

pub(crate) fn program(programs: &HashMap<String, PathBuf>, key: &str) -> PathBuf {
    programs.get(key).cloned().unwrap_or_default()
}

fn everything(programs: &HashMap<String, PathBuf>) -> McpServer {
    McpServer::stdio("everything", program(programs, "everything"))
        .arg("stdio")
        .connect_timeout(Duration::from_secs(60))
}

fn misbehaving(programs: &HashMap<String, PathBuf>, mode: &str) -> McpServer {
    McpServer::stdio("bad", program(programs, "python"))
        .arg(repo().join("tests/mcp/misbehaving_server.py"))
        .arg(mode)
        .connect_timeout(Duration::from_secs(20))
}

/// Runs one turn whose scripted model calls `tool` with `args` and then replies; returns the
/// tool call's result text and whether it failed.
async fn through_a_turn(tools: Vec<Tool>, tool: &str, args: Value) -> (String, bool) {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::steps([
            Step::call(tool, args),
            Step::reply("done"),
        ]))
        .tools(tools)
        .build();
    let outcome = runner
        .run(RawTurnContext::new("mcp-conversation", "You use tools.").user_message("go"))
        .await
        .expect("the turn runs")
        .into_result()
        .expect("the turn completes");
    let call = outcome.context.tool_calls.first().expect("one tool call");
    let text = match call.results() {
        Some(adk::primitives::ToolCallResults::Text(text)) => text.render(),
        other => format!("{other:?}"),
    };
    (text, call.is_error())
}

fn mcp_error(error: &ToolError) -> &McpError {
    error
        .source()
        .downcast_ref::<McpError>()
        .unwrap_or_else(|| panic!("not an McpError: {error}"))
}

async fn call(tool: &Tool, args: Value) -> Result<ToolOutput, ToolError> {
    let args = tool.validate(args).expect("valid arguments");
    tool.call(args, tool.invocation("call-1")).await
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|tool| tool.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// What the Python `mcp` client sees of a server: `python client.py MODE TARGET...`.
pub(crate) fn python_client(
    programs: &HashMap<String, PathBuf>,
    target: &[&str],
    calls: Value,
) -> Value {
    let mut child = Command::new(program(programs, "python"))
        .arg(repo().join("tests/mcp/client.py"))
        .args(target)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(calls.to_string().as_bytes())
            .expect("calls written");
    }
    let output = child.wait_with_output().expect("python ends");
    assert!(
        output.status.success(),
        "the Python client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client prints JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_of_server_everything_is_offered_with_its_schema_and_annotations() {
    let Some(programs) = programs("every_tool_of_server_everything_is_offered") else {
        return;
    };
    let client = McpClient::connect(everything(programs)).await.unwrap();
    let everything_path = program(programs, "everything");
    let seen_by_python = python_client(
        programs,
        &["stdio", everything_path.to_str().unwrap(), "stdio"],
        json!([]),
    );
    let listed = seen_by_python["tools"].as_array().unwrap();
    assert!(listed.len() >= 10, "{listed:?}");
    assert!(client.skipped().is_empty(), "{:?}", client.skipped());
    let tools = client.tools();
    assert_eq!(tools.len(), listed.len());
    for (listed, tool) in listed.iter().zip(&tools) {
        let name = listed["name"].as_str().unwrap();
        assert_eq!(tool.name(), format!("everything_{name}"));
        assert_eq!(tool.input_schema(), &listed["inputSchema"], "{name}");
        assert_eq!(tool.description(), listed["description"].as_str().unwrap());
        let info = McpToolInfo::of(tool).unwrap();
        assert_eq!(
            (info.server.as_str(), info.tool.as_str()),
            ("everything", name)
        );
        assert_eq!(
            info.read_only,
            listed["annotations"]["readOnlyHint"] == json!(true),
            "{name}"
        );
    }
    let echo = McpToolInfo::of(tool(&tools, "everything_echo")).unwrap();
    assert!(echo.read_only && echo.idempotent && !echo.destructive);
    let research = McpToolInfo::of(tool(&tools, "everything_simulate-research-query")).unwrap();
    assert!(research.side_effecting() && !research.destructive);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_image_error_and_progress_tools_round_trip_through_a_turn() {
    let Some(programs) = programs("text_image_error_and_progress_tools_round_trip") else {
        return;
    };
    let client = McpClient::connect(everything(programs)).await.unwrap();
    let tools = client.tools();

    let (text, failed) = through_a_turn(
        tools.clone(),
        "everything_echo",
        json!({"message": "hello"}),
    )
    .await;
    assert_eq!((text.as_str(), failed), ("Echo: hello", false));

    let (text, failed) =
        through_a_turn(tools.clone(), "everything_get-tiny-image", json!({})).await;
    assert!(!failed, "{text}");
    let Ok(ToolOutput::Media(media)) =
        call(tool(&tools, "everything_get-tiny-image"), json!({})).await
    else {
        panic!("the tiny image is media");
    };
    let image = media
        .iter()
        .find(|item| item.kind() == MediaKind::Image)
        .expect("an image part");
    assert_eq!(image.mime_type(), "image/png");
    let bytes = image.reader().read_all().await.unwrap();
    assert_eq!(&bytes[..4], b"\x89PNG");

    let (text, failed) = through_a_turn(
        tools.clone(),
        "everything_gzip-file-as-resource",
        json!({"data": "ftp://127.0.0.1/nothing"}),
    )
    .await;
    assert!(failed, "{text}");
    assert!(text.contains("Unsupported URL protocol"), "{text}");

    let started = Instant::now();
    let (text, failed) = through_a_turn(
        tools.clone(),
        "everything_trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
    )
    .await;
    assert!(!failed, "{text}");
    assert!(text.contains("Long running operation completed"), "{text}");
    assert!(started.elapsed() >= Duration::from_millis(900));

    let Ok(ToolOutput::Text(structured)) = call(
        tool(&tools, "everything_get-structured-content"),
        json!({"location": "Chicago"}),
    )
    .await
    else {
        panic!("structured content is text");
    };
    assert!(
        serde_json::from_str::<Value>(&structured).is_ok(),
        "{structured}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_cancels_the_mcp_request() {
    let Some(programs) = programs("cancelling_the_turn_cancels_the_mcp_request") else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let record = folder.path().join("received.jsonl");
    let client = McpClient::connect(misbehaving(programs, "slow").arg(&record))
        .await
        .unwrap();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::steps([
            Step::call("bad_sleep", json!({})),
            Step::reply("never"),
        ]))
        .tools(client.tools())
        .build();
    let cancellation = CancellationToken::new();
    let cancel = cancellation.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let outcome = runner
        .run(
            RawTurnContext::new("c", "p")
                .user_message("sleep")
                .cancellation(cancellation),
        )
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        !matches!(outcome.status, TurnStatus::Completed),
        "{:?}",
        outcome.status
    );
    // The server hears about it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let received = std::fs::read_to_string(&record).unwrap_or_default();
        if received.contains("notifications/cancelled") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no cancellation reached the server:\n{received}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A direct call is cancelled through the invocation's storage context just the same.
    let sleep = tool(&client.tools(), "bad_sleep").clone();
    let token = CancellationToken::new();
    let context = adk::storage::StorageContext::new("c").with_cancellation(token.clone());
    let invocation = sleep.invocation("call-2").with_storage(
        adk::storage::SharedStorage::new(NoopStorage::new()),
        context,
    );
    let running = tokio::spawn(async move { sleep.call(json!({}), invocation).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    token.cancel();
    let error = running.await.unwrap().unwrap_err();
    assert!(
        matches!(mcp_error(&error), McpError::Cancelled { .. }),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_server_mid_call_fails_the_call_with_a_typed_error_and_the_next_call_reconnects()
 {
    let Some(programs) = programs("killing_the_server_mid_call") else {
        return;
    };
    let client = McpClient::connect(everything(programs).reconnect(ReconnectPolicy::attempts(1)))
        .await
        .unwrap();
    let tools = client.tools();
    let pid = client.process_id().await.expect("a stdio server has a pid");
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    });
    let started = Instant::now();
    let error = call(
        tool(&tools, "everything_trigger-long-running-operation"),
        json!({"duration": 30, "steps": 30}),
    )
    .await
    .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let McpError::ServerClosed { exit, .. } = mcp_error(&error) else {
        panic!("not ServerClosed: {error}");
    };
    assert!(exit.as_deref().unwrap_or("").contains("9"), "{exit:?}");
    let Ok(ToolOutput::Text(text)) =
        call(tool(&tools, "everything_echo"), json!({"message": "again"})).await
    else {
        panic!("the next call reconnects");
    };
    assert_eq!(text, "Echo: again");
    assert_ne!(client.process_id().await, Some(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_or_never_answers_fails_the_call_without_hanging() {
    let Some(programs) = programs("a_server_that_dies_mid_call_or_never_answers") else {
        return;
    };
    let client = McpClient::connect(
        misbehaving(programs, "slow")
            .call_timeout(Duration::from_millis(500))
            .reconnect(ReconnectPolicy::never()),
    )
    .await
    .unwrap();
    let tools = client.tools();
    let started = Instant::now();
    let error = call(tool(&tools, "bad_sleep"), json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(mcp_error(&error), McpError::Timeout { .. }),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    let error = call(tool(&tools, "bad_die"), json!({})).await.unwrap_err();
    let McpError::ServerClosed { stderr, .. } = mcp_error(&error) else {
        panic!("not ServerClosed: {error}");
    };
    assert!(stderr.contains("exiting mid-call on purpose"), "{stderr}");
    // No reconnection by this policy: the next call says the server is gone.
    let error = call(tool(&tools, "bad_ping"), json!({})).await.unwrap_err();
    assert!(mcp_error(&error).connection_lost(), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_changed_notice_refreshes_the_dispatch_tools() {
    let Some(programs) = programs("a_tools_list_changed_notice_refreshes_the_dispatch_tools")
    else {
        return;
    };
    let client = McpClient::connect(misbehaving(programs, "slow"))
        .await
        .unwrap();
    let mut registry = ToolRegistry::from_tools(client.tools()).unwrap();
    assert!(!registry.contains("bad_extra"));
    call(tool(&client.tools(), "bad_grow"), json!({}))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), client.tools_changed_notice())
        .await
        .expect("the notice arrives");
    client.refresher().sync(&mut registry).await;
    assert!(registry.contains("bad_extra"));
    assert!(!client.tools_changed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http_lists_and_calls_its_tools() {
    let Some(programs) = programs("server_everything_over_streamable_http") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(program(programs, "everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let client = McpClient::connect(
        McpServer::http("web", format!("http://127.0.0.1:{port}/mcp"))
            .header("X-Adk-Test", "1")
            .bearer_token("not-checked-by-this-server"),
    )
    .await
    .unwrap();
    let tools = client.tools();
    assert!(tools.iter().any(|tool| tool.name() == "web_echo"));
    let (text, failed) =
        through_a_turn(tools.clone(), "web_get-sum", json!({"a": 2, "b": 40})).await;
    assert!(!failed && text.contains("42"), "{text}");
    let started = Instant::now();
    let (text, failed) = through_a_turn(
        tools,
        "web_trigger-long-running-operation",
        json!({"duration": 1, "steps": 2}),
    )
    .await;
    assert!(!failed && text.contains("completed"), "{text}");
    assert!(started.elapsed() >= Duration::from_millis(900));
    client.shutdown().await;
    let _ = server.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_server_mcp_server_time_is_offered_and_called() {
    let Some(programs) = programs("the_python_server_mcp_server_time") else {
        return;
    };
    let client = McpClient::connect(
        McpServer::stdio("time", program(programs, "time")).arg("--local-timezone=UTC"),
    )
    .await
    .unwrap();
    let tools = client.tools();
    let names: Vec<&str> = tools.iter().map(Tool::name).collect();
    assert!(names.contains(&"time_get_current_time"), "{names:?}");
    let (text, failed) = through_a_turn(
        tools,
        "time_get_current_time",
        json!({"timezone": "Europe/Oslo"}),
    )
    .await;
    assert!(!failed, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["timezone"], "Europe/Oslo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_printing_non_json_on_stdout_is_a_typed_error_naming_the_first_line() {
    let Some(programs) = programs("a_server_printing_non_json_on_stdout") else {
        return;
    };
    let started = Instant::now();
    let error = McpClient::connect(
        misbehaving(programs, "garbage").connect_timeout(Duration::from_secs(3)),
    )
    .await
    .unwrap_err();
    let McpError::NotJsonRpc { first_line, .. } = &error else {
        panic!("not NotJsonRpc: {error}");
    };
    assert!(first_line.starts_with("Starting server..."), "{first_line}");
    assert!(error.to_string().contains("must log to stderr"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_result_closes_the_connection_with_message_too_large() {
    let Some(programs) = programs("a_100_mb_result") else {
        return;
    };
    let client =
        McpClient::connect(misbehaving(programs, "huge").reconnect(ReconnectPolicy::never()))
            .await
            .unwrap();
    let started = Instant::now();
    let error = call(tool(&client.tools(), "bad_ping"), json!({}))
        .await
        .unwrap_err();
    let McpError::MessageTooLarge { limit, .. } = mcp_error(&error) else {
        panic!("not MessageTooLarge: {error}");
    };
    assert_eq!(*limit, adk::mcp::DEFAULT_MAX_MESSAGE_BYTES);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_schemas_and_names_are_left_out_each_with_a_typed_error() {
    let Some(programs) = programs("unusable_schemas_and_names_are_left_out") else {
        return;
    };
    let client = McpClient::connect(misbehaving(programs, "schemas"))
        .await
        .unwrap();
    assert_eq!(client.tool_names(), ["bad_ok"]);
    let skipped = client.skipped();
    let reasons: HashMap<String, String> = skipped
        .iter()
        .map(|error| match error.as_ref() {
            McpError::InvalidTool { tool, reason, .. } => (tool.clone(), reason.clone()),
            other => panic!("not InvalidTool: {other}"),
        })
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert!(
        reasons["array_schema"].contains("input_schema"),
        "{reasons:?}"
    );
    assert!(reasons["no_type"].contains("input_schema"), "{reasons:?}");
    assert!(reasons["bad_ref"].contains("input_schema"), "{reasons:?}");
    assert!(reasons["has spaces"].contains("' '"), "{reasons:?}");
    assert!(
        reasons[&"n".repeat(200)].contains("200 characters"),
        "{reasons:?}"
    );
    let (text, failed) = through_a_turn(client.tools(), "bad_ok", json!({})).await;
    assert_eq!((text.as_str(), failed), ("pong", false));
}

#[path = "../../examples/mcp.rs"]
mod mcp_example;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_example_answers_through_server_everythings_echo() {
    let Some(programs) = programs("the_mcp_example") else {
        return;
    };
    let answers = mcp_example::run(everything(programs), mcp_example::scripted())
        .await
        .unwrap();
    assert_eq!(
        answers,
        [
            "The MCP server said: Echo: Hello over MCP!",
            "The MCP server said: Echo: Is the server still there?"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_receives_the_configured_headers_and_a_refusal_is_a_handshake_error() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buffer = [0u8; 4096];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            let read = socket.read(&mut buffer).await.unwrap();
            if read == 0 {
                break;
            }
            head.extend_from_slice(&buffer[..read]);
        }
        let _ = socket
            .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        String::from_utf8_lossy(&head).to_ascii_lowercase()
    });
    let error = McpClient::connect(
        McpServer::http("remote", format!("http://{address}/mcp"))
            .header("X-Adk-Test", "yes")
            .bearer_token("s3cret")
            .reconnect(ReconnectPolicy::never())
            .connect_timeout(Duration::from_secs(10)),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, McpError::Handshake { .. }), "{error}");
    let head = seen.await.unwrap();
    assert!(head.contains("authorization: bearer s3cret"), "{head}");
    assert!(head.contains("x-adk-test: yes"), "{head}");
}

//! adk's tools served over MCP, called by the official Python `mcp` client: the test binary
//! `mcp_tool_server` serves typed tools over stdio and streamable HTTP.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{programs, python_client};

fn calls() -> Value {
    json!([
        {"name": "add", "arguments": {"a": 40, "b": 2}},
        {"name": "forecast", "arguments": {"city": "Oslo", "days": 3}},
        {"name": "forecast", "arguments": {"city": "Oslo", "days": 9}},
        {"name": "fail", "arguments": {}}
    ])
}

/// What every transport must show: the typed tools with their derived schemas, the hidden
/// tool absent, results, schema violations and handler errors as tool errors.
fn check(seen: &Value) {
    assert_eq!(seen["server"]["name"], "adk-test-tools");
    let names: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "forecast", "fail"]);
    let forecast = &seen["tools"][1];
    assert_eq!(forecast["description"], "Weather forecast for a city.");
    let schema = &forecast["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["city"]));
    assert_eq!(
        schema["properties"]["city"]["description"],
        "The city to forecast."
    );
    assert_eq!(schema["properties"]["days"]["maximum"], 7);
    assert_eq!(
        seen["tools"][0]["inputSchema"]["properties"]["a"]["type"],
        "integer"
    );

    let calls = seen["calls"].as_array().unwrap();
    assert_eq!(calls[0]["content"][0]["text"], "42");
    assert_ne!(calls[0]["isError"], true);
    assert_eq!(calls[1]["content"][0]["text"], "Oslo: sunny for 3 days");
    assert_eq!(calls[2]["isError"], true, "{}", calls[2]);
    assert!(
        calls[2]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("/days"),
        "{}",
        calls[2]
    );
    assert_eq!(calls[3]["isError"], true);
    assert!(
        calls[3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the disk is full")
    );
}

#[test]
fn the_python_mcp_client_lists_and_calls_adk_typed_tools_over_stdio() {
    let Some(programs) = programs("the_python_mcp_client_over_stdio") else {
        return;
    };
    let seen = python_client(
        programs,
        &["stdio", env!("CARGO_BIN_EXE_mcp_tool_server"), "stdio"],
        calls(),
    );
    check(&seen);
}

#[test]
fn the_python_mcp_client_lists_and_calls_adk_typed_tools_over_streamable_http() {
    let Some(programs) = programs("the_python_mcp_client_over_http") else {
        return;
    };
    let mut server = Command::new(env!("CARGO_BIN_EXE_mcp_tool_server"))
        .arg("http")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let seen = python_client(programs, &["http", url.trim()], calls());
    drop(server.stdin.take());
    let _ = server.wait();
    check(&seen);
}

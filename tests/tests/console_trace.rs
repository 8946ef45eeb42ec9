//! `adk::trace`: the console trace a user installs with one call reads as the turn happened —
//! model calls, tool calls with arguments and results, errors — without ids unless asked.

use std::io::Write;
use std::sync::{Arc, Mutex};

use adk::Agent;
use adk::dispatch::{Rule, ScriptedModel};
use adk::primitives::Tool;
use adk::storage::NoopStorage;
use adk::trace::ConsoleTrace;
use serde_json::json;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn lines(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }
}

fn weather() -> Tool {
    Tool::builder("weather")
        .description("Weather.")
        .handler(|args: serde_json::Value, _invocation| async move {
            Ok(format!("sunny in {}", args["city"].as_str().unwrap_or("?")))
        })
        .build()
        .unwrap()
}

/// Milliseconds vary: replace each `N ms` with `_ ms`.
fn without_times(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|line| {
            line.split(" · ")
                .map(|part| if part.ends_with(" ms") { "_ ms" } else { part })
                .collect::<Vec<_>>()
                .join(" · ")
        })
        .collect()
}

fn agent(trace: ConsoleTrace, rules: Vec<Rule>) -> Agent {
    Agent::builder("traced")
        .model(ScriptedModel::rules(rules))
        .tool(weather())
        .storage(NoopStorage::new())
        .observe(trace.listener())
        .build()
}

#[tokio::test]
async fn a_turn_with_a_tool_reads_as_turn_tool_model_calls_and_done_without_ids() {
    let buffer = Buffer::default();
    let agent = agent(
        ConsoleTrace::to_writer(buffer.clone()),
        vec![
            Rule::user_says("weather").call("weather", json!({ "city": "Oslo" })),
            Rule::after_tool("weather").reply("{result}"),
        ],
    );
    let outcome = agent.run("c", "weather?").await.unwrap();
    let turn_id = outcome.context.turn_id().to_string();

    assert_eq!(
        without_times(buffer.lines()),
        [
            "turn",
            r#"  tool weather {"city":"Oslo"} -> sunny in Oslo"#,
            "  model call 1 · _ ms",
            "  model call 2 · _ ms",
            "turn done · 2 model calls · _ ms",
        ]
    );
    let all = buffer.lines().join("\n");
    assert!(!all.contains(&turn_id), "{all}");
    assert!(!all.contains('\u{1b}'), "no colour on a writer: {all}");
}

#[tokio::test]
async fn with_ids_the_turn_and_the_tool_call_are_named() {
    let buffer = Buffer::default();
    let agent = agent(
        ConsoleTrace::to_writer(buffer.clone()).with_ids(),
        vec![
            Rule::user_says("weather").call("weather", json!({ "city": "Oslo" })),
            Rule::always().reply("ok"),
        ],
    );
    let outcome = agent.run("c", "weather?").await.unwrap();
    let lines = buffer.lines();

    assert_eq!(lines[0], format!("turn {}", outcome.context.turn_id()));
    let call = outcome.context.tool_calls.iter().next().unwrap();
    assert!(lines[1].contains(&format!("[{}]", call.id())), "{lines:?}");
}

#[tokio::test]
async fn a_failed_turn_shows_its_error_with_the_code_once() {
    let buffer = Buffer::default();
    let agent = agent(
        ConsoleTrace::to_writer(buffer.clone()),
        vec![Rule::user_says("never").reply("no")],
    );
    let _ = agent.run("c", "hello").await.unwrap();
    let errors: Vec<_> = buffer
        .lines()
        .into_iter()
        .filter(|line| line.starts_with("  error "))
        .collect();

    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("E_LLM_EXECUTION"), "{errors:?}");
    assert!(
        errors[0].contains("no rule of the scripted model matched"),
        "{errors:?}"
    );
}

#[tokio::test]
async fn forced_colour_paints_tool_lines() {
    let buffer = Buffer::default();
    let agent = agent(
        ConsoleTrace::to_writer(buffer.clone()).with_colour(true),
        vec![
            Rule::user_says("weather").call("weather", json!({ "city": "Oslo" })),
            Rule::always().reply("ok"),
        ],
    );
    let _ = agent.run("c", "weather?").await.unwrap();

    assert!(
        buffer.lines()[1].starts_with("\u{1b}[36m  tool weather"),
        "{:?}",
        buffer.lines()
    );
}

//! What `RUST_LOG=adk=debug` shows, as a specification: a readable turn, each line under the
//! turn's span, the turn id once per line, and tool executions naming the tool call's id and
//! the checksum for what they are.

use adk::prelude::*;

fn logged_turn(filter: &str) -> String {
    let calculator = Tool::builder("calculator")
        .description("Adds.")
        .handler(|_, _| async { Ok("4") })
        .build()
        .unwrap();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .tool(calculator)
        .build();
    // The runtime runs on this thread, under the capture's subscriber.
    let (log, ()) = adk_integration_tests::captured_log(filter, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let outcome = runtime
            .block_on(runner.run(RawTurnContext::new("c", "p").user_message("2 + 2?")))
            .unwrap();
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    });
    log
}

#[test]
fn adk_debug_shows_the_turn_its_dispatch_and_tools_under_the_turn_span() {
    let log = logged_turn("adk=debug");
    for expected in [
        "turn started",
        "dispatch started",
        "tool started",
        "tool ended",
        "dispatch ended",
        "turn ended",
    ] {
        assert!(log.contains(expected), "no {expected:?} in:\n{log}");
    }
    let event_lines: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("adk::events"))
        .collect();
    assert!(!event_lines.is_empty(), "{log}");
    for line in &event_lines {
        assert!(
            line.contains("adk.turn{turn_id="),
            "not under the turn span: {line}"
        );
        assert_eq!(line.matches("turn_id=").count(), 1, "turn_id twice: {line}");
    }
}

#[test]
fn tool_events_log_the_tool_call_id_and_the_checksum_each_by_its_name() {
    let log = logged_turn("adk=debug");
    let started = log
        .lines()
        .find(|line| line.contains("tool started"))
        .expect("a tool started line");
    assert!(started.contains("tool_call_id="), "{started}");
    assert!(started.contains("checksum="), "{started}");
    assert!(!started.contains(" call_id="), "{started}");
}

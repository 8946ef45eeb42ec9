//! Parallel tool calls.

use super::*;

/// A tool that sleeps `millis` milliseconds and answers with its label.
fn sleeper() -> Tool {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct SleepArgs {
        /// What to answer.
        label: String,
        /// How long to take.
        millis: u64,
    }
    Tool::typed::<SleepArgs>("sleep")
        .description("Sleeps, then answers.")
        .read_only()
        .handler(|args: SleepArgs, _invocation| async move {
            tokio::time::sleep(Duration::from_millis(args.millis)).await;
            Ok(format!("{} done", args.label))
        })
        .build()
        .unwrap()
}

fn sleep_calls(calls: &[(&str, u64)]) -> Vec<String> {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(index, (label, millis))| {
            json!({"index": index, "id": format!("call_{label}"), "type": "function",
                   "function": {"name": "sleep",
                                "arguments": json!({"label": label, "millis": millis}).to_string()}})
        })
        .collect();
    vec![
        delta(json!({"role": "assistant", "tool_calls": tool_calls})),
        finish("tool_calls"),
        done(),
    ]
}

#[tokio::test]
async fn parallel_tool_calls_run_concurrently_and_their_results_keep_the_models_order() {
    let server = Server::start(vec![
        Reply::Events(sleep_calls(&[("a", 400), ("b", 200), ("c", 10)])),
        Reply::Events(text_answer(&["All done."])),
    ])
    .await;
    let mut turn = Turn::new(
        OpenAiExecutor::new(config(&server)).unwrap(),
        "Sleep three times.",
    );
    turn.tools = vec![sleeper()];

    let run = turn.run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let mut spans = Vec::new();
    for event in &run.events {
        if let Event::ToolExecutionEnd {
            started_at,
            ended_at,
            tool_name,
            ..
        } = event
        {
            assert_eq!(tool_name, "sleep");
            spans.push((*started_at, *ended_at));
        }
    }
    assert_eq!(spans.len(), 3);
    let last_start = spans.iter().map(|span| span.0).max().unwrap();
    let first_end = spans.iter().map(|span| span.1).min().unwrap();
    assert!(
        last_start < first_end,
        "every call started before any ended: {spans:?}"
    );
    let results: Vec<(String, String)> = server.received()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            (
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_a", "a done"),
            ("call_b", "b done"),
            ("call_c", "c done")
        ]
        .map(|(id, text)| (id.to_owned(), text.to_owned()))
    );
}

#[tokio::test]
async fn a_concurrency_limit_of_one_runs_tool_calls_one_after_another() {
    let server = Server::start(vec![
        Reply::Events(sleep_calls(&[("a", 50), ("b", 50)])),
        Reply::Events(text_answer(&["All done."])),
    ])
    .await;
    let mut turn = Turn::new(
        OpenAiExecutor::new(config(&server).with_max_concurrent_tools(1)).unwrap(),
        "Sleep twice.",
    );
    turn.tools = vec![sleeper()];

    let run = turn.run(|_, _| {}).await;

    let spans: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionEnd {
                started_at,
                ended_at,
                ..
            } => Some((*started_at, *ended_at)),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 2);
    assert!(spans[0].1 <= spans[1].0, "{spans:?}");
}

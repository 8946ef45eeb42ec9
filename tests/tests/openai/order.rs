//! The order of a turn's reports and the closing of started streams.

use super::*;

#[tokio::test]
async fn a_tool_call_is_announced_once_with_its_arguments_and_stats_follow_the_completed_message() {
    let mut first = vec![delta(json!({"role": "assistant", "content": "Checking."}))];
    first.extend(forecast_call("call_abc", "Oslo"));
    let server = Server::start(vec![
        Reply::Events(first),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let announcements: Vec<&Value> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall(call) if call.results.is_none() => Some(&call.args),
            _ => None,
        })
        .collect();
    assert_eq!(announcements, [&json!({"city": "Oslo"})]);
    let message_complete = position(
        &run,
        |event| matches!(event, Event::Message(content) if content.is_complete),
    );
    let announced = position(&run, |event| matches!(event, Event::ToolCall(_)));
    let stats = position(&run, |event| matches!(event, Event::GenerationStats { .. }));
    let executed = position(&run, |event| {
        matches!(event, Event::ToolExecutionStart { .. })
    });
    assert!(
        message_complete < announced && announced < stats && stats < executed,
        "message complete {message_complete}, call announced {announced}, stats {stats}, \
         tool started {executed}"
    );
}

#[tokio::test]
async fn an_error_mid_stream_closes_the_started_message_as_interrupted() {
    let server = Server::start(vec![Reply::Events(vec![
        delta(json!({"role": "assistant", "reasoning_content": "Hmm."})),
        delta(json!({"content": "Sunny in"})),
        data(json!({"error": {"message": "upstream disconnected"}})),
    ])])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    let error = failure(&run);
    assert!(matches!(
        openai_error(error),
        OpenAiError::StreamedError { .. }
    ));
    for kind in ["message", "thought"] {
        let last = run
            .events
            .iter()
            .rev()
            .find_map(|event| match (kind, event) {
                ("message", Event::Message(content)) | ("thought", Event::Thought(content)) => {
                    Some(content)
                }
                _ => None,
            })
            .unwrap();
        assert!(
            last.is_complete && last.is_interrupted,
            "the {kind} stream was left open: {last:?}"
        );
    }
    let last_message = run.events.iter().rev().find_map(|event| match event {
        Event::Message(content) => Some(content.full.to_string()),
        _ => None,
    });
    assert_eq!(last_message.as_deref(), Some("Sunny in"));
}

#[tokio::test]
async fn a_cancelled_turn_closes_the_started_message_as_interrupted() {
    let server = Server::start(vec![Reply::EventsThenStall(vec![delta(
        json!({"role": "assistant", "content": "Let me think"}),
    )])])
    .await;

    let run = run_turn_with(
        config(&server),
        "Weather in Oslo?",
        CancellationToken::new(),
        |event, token| {
            if matches!(event, Event::Message(content) if !content.is_complete) {
                token.cancel();
            }
        },
    )
    .await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Aborted));
    let messages: Vec<(bool, bool)> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Message(content) => Some((content.is_complete, content.is_interrupted)),
            _ => None,
        })
        .collect();
    assert_eq!(messages, [(false, false), (true, true)]);
}

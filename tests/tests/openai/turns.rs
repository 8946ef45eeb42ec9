//! A turn end to end: streamed text, tool calls, text then a call, provider errors, stalls,
//! refused connections, cancellation, JSON bodies and unknown tools.

use super::*;

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
                content.full.to_string(),
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
                "id": "call_abc",
                "type": "function",
                "function": {"name": "forecast", "arguments": r#"{"city":"Oslo"}"#},
            }]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "Oslo: sunny"},
        ])
    );
}

/// What the hosted API streams when a model writes before it calls a tool: the text in content
/// deltas, then the call (id and name first, its arguments in pieces) in the same choice.
fn text_then_forecast_call(pieces: &[&str], id: &str, city: &str) -> Vec<String> {
    let mut events = vec![delta(json!({"role": "assistant", "content": ""}))];
    events.extend(pieces.iter().map(|piece| delta(json!({"content": piece}))));
    events.extend(forecast_call(id, city));
    events
}

#[tokio::test]
async fn text_then_a_tool_call_in_one_answer_goes_back_as_one_assistant_message_then_the_result() {
    let server = Server::start(vec![
        Reply::Events(text_then_forecast_call(
            &["Let me ", "check."],
            "call_abc",
            "Oslo",
        )),
        Reply::Events(text_answer(&["Sunny in Oslo."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = server.received();
    assert_eq!(
        received.len(),
        2,
        "one model call for the tool, one for the answer"
    );
    // The call was created while the answer streamed and the text when it ended; the request
    // still holds the answer as the model gave it: text and call in one message, then the result.
    assert_eq!(
        received[1].body["messages"],
        json!([
            {"role": "system", "content": "You forecast weather."},
            {"role": "system", "content": "Answer in English."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [{
                "id": "call_abc",
                "type": "function",
                "function": {"name": "forecast", "arguments": r#"{"city":"Oslo"}"#},
            }]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "Oslo: sunny"},
        ])
    );
    // The link that says so is on the records, for storage and the next turn to keep.
    let context = &run.outcome.context;
    let text = context
        .messages
        .iter()
        .find(|m| m.role() == Role::Assistant)
        .unwrap();
    let call = context.tool_calls.first().unwrap();
    let (text_link, call_link) = (text.answer().unwrap(), call.answer().unwrap());
    assert_eq!(text_link.answer_id(), call_link.answer_id());
    assert_eq!((text_link.position(), call_link.position()), (0, 1));
    assert!(
        call.created_at() < text.created_at(),
        "the call is written first, which is why creation times cannot order an answer"
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
        [("call_0", "Oslo: sunny"), ("call_1", "Bergen: rain")],
        "the provider's id goes back; its repeat is renumbered to stay distinct"
    );
}

#[tokio::test]
async fn an_error_status_fails_the_dispatch_with_the_servers_message() {
    let server = Server::start(vec![Reply::Status(
        500,
        json!({"error": {"message": "The model is overloaded", "type": "server_error"}}),
    )])
    .await;

    let run = run_turn(
        config(&server).with_retry(RetryPolicy::none()),
        "Weather in Oslo?",
    )
    .await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Nack));
    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        format!("{error:#}").contains("The model is overloaded")
            && format!("{error:#}").contains("500"),
        "{error:#}"
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
    assert!(format!("{error:#}").contains("stalled"), "{error:#}");
    assert!(matches!(
        openai_error(error),
        OpenAiError::Timeout {
            phase: TimeoutPhase::Stream,
            after
        } if *after == Duration::from_millis(300)
    ));
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_reported_as_a_connect_error_naming_the_endpoint() {
    // A port that was just free: bind, read it, close.
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m")
        .unwrap()
        .with_retry(RetryPolicy::default().with_initial_delay(Duration::from_millis(10)));

    let run = run_turn(config, "Weather in Oslo?").await;

    // A connection error is retried (twice by default) before it is reported.
    assert_eq!(retries(&run).len(), 2);
    let error = failure(&run);
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        format!("{error:#}").contains(&format!("127.0.0.1:{port}/v1/chat/completions")),
        "{error:#}"
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
async fn a_json_body_instead_of_an_event_stream_is_read_as_a_whole_answer_or_as_its_error() {
    let server = Server::start(vec![
        Reply::Status(200, json!({"error": {"message": "quota exhausted"}})),
        Reply::Status(200, json!({"choices": [{"message": {"content": "hi"}}]})),
    ])
    .await;

    let reported = run_turn(config(&server), "Weather in Oslo?").await;
    let error = failure(&reported);
    assert!(
        format!("{error:#}").contains("quota exhausted"),
        "{error:#}"
    );
    assert!(matches!(
        openai_error(error),
        OpenAiError::StreamedError { .. }
    ));

    let unstreamed = run_turn(config(&server), "Weather in Oslo?").await;
    assert!(
        unstreamed.outcome.is_completed(),
        "{:?}",
        unstreamed.outcome.status
    );
    assert_eq!(
        transcript(&unstreamed.outcome),
        ["user: Weather in Oslo?", "assistant: hi"]
    );
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

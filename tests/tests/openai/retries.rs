//! Retries and timeouts: what is retried, how long it waits, and the overall deadline.

use super::*;

#[tokio::test]
async fn a_503_is_retried_with_a_logged_attempt_and_the_retry_succeeds() {
    let server = Server::start(vec![
        Reply::Status(503, json!({"error": {"message": "overloaded"}})),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(
        transcript(&run.outcome),
        ["user: Weather in Oslo?", "assistant: Sunny."]
    );
    assert_eq!(server.received().len(), 2);
    let logged = retries(&run);
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].0, 1, "the first retry is attempt 1");
    assert!(
        logged[0].1 <= 20,
        "the first wait is at most the initial delay"
    );
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let server = Server::start(vec![
        Reply::Raw(
            429,
            vec![
                ("content-type", "application/json".to_owned()),
                ("retry-after", "1".to_owned()),
            ],
            br#"{"error":{"message":"rate limited"}}"#.to_vec(),
        ),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = server.received();
    let waited = received[1].at.duration_since(received[0].at);
    assert!(
        waited >= Duration::from_millis(950) && waited < Duration::from_millis(2500),
        "waited {waited:?} for a Retry-After of 1 s"
    );
    assert_eq!(retries(&run), [(1, 1000)]);
}

#[tokio::test]
async fn a_retry_after_longer_than_the_ceiling_is_not_waited_out() {
    let server = Server::start(vec![Reply::Raw(
        429,
        vec![("retry-after", "3600".to_owned())],
        b"slow down".to_vec(),
    )])
    .await;

    let started = Instant::now();
    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(retries(&run).is_empty());
    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::Status { status: 429, message, .. } if message == "slow down"
    ));
}

#[tokio::test]
async fn a_stream_that_breaks_after_its_first_byte_is_not_retried() {
    // The connection closes mid-answer: no `finish_reason`, no `[DONE]`.
    let server = Server::start(vec![
        Reply::Events(vec![delta(
            json!({"role": "assistant", "content": "Sunny"}),
        )]),
        Reply::Events(text_answer(&["A second answer nobody asked for."])),
    ])
    .await;

    let run = run_turn(config(&server), "Weather in Oslo?").await;

    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::MalformedStream { .. }
    ));
    assert!(retries(&run).is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_long_error_body_is_cut_at_the_cap_and_marked_truncated() {
    let body = "x".repeat(8 << 20);
    let server = Server::start(vec![Reply::Raw(
        500,
        vec![("content-type", "text/plain".to_owned())],
        body.into_bytes(),
    )])
    .await;

    let run = run_turn(
        config(&server).with_retry(RetryPolicy::none()),
        "Weather in Oslo?",
    )
    .await;

    match openai_error(failure(&run)) {
        OpenAiError::Status {
            status: 500,
            message,
            body,
            body_truncated,
            ..
        } => {
            assert_eq!(body.len(), adk::openai::MAX_ERROR_BODY);
            assert!(body_truncated);
            assert!(
                message.len() < 4096 && message.ends_with("(truncated)"),
                "{message}"
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Timeouts.

#[tokio::test]
async fn a_stream_kept_alive_forever_ends_at_the_overall_deadline() {
    let server = Server::start(vec![Reply::EventsThenKeepAlive(vec![delta(
        json!({"role": "assistant", "content": "Thinking"}),
    )])])
    .await;
    let config = config(&server).with_total_timeout(Some(Duration::from_millis(500)));

    let started = Instant::now();
    let run = run_turn(config, "Weather in Oslo?").await;

    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::Timeout { phase: TimeoutPhase::Total, after } if *after == Duration::from_millis(500)
    ));
    tokio::time::timeout(Duration::from_secs(10), server.disconnected.notified())
        .await
        .expect("the client kept the timed-out connection open");
}

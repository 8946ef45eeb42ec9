//! Structured output end to end: the `response_format` a derived type sends, a reply read back
//! into the type, and a reply that does not fit failing the dispatch with a typed error.

use adk::openai::{StructuredOutput, StructuredOutputError};

use super::*;

#[derive(Debug, Deserialize, schemars::JsonSchema, StructuredOutput)]
struct Verdict {
    /// Whether the forecast is good for a walk.
    walk: bool,
    reason: String,
    /// Only when there is one.
    warning: Option<String>,
}

fn verdict_turn(server: &Server) -> Turn {
    let executor = OpenAiExecutor::new(config(server))
        .unwrap()
        .with_structured_output::<Verdict>();
    Turn::new(executor, "Is tomorrow good for a walk in Oslo?")
}

#[tokio::test]
async fn a_typed_reply_round_trips_through_the_response_format() {
    let server = Server::start(vec![Reply::Events(text_answer(&[
        r#"{"walk": true, "reason": "sunny","#,
        r#" "warning": null}"#,
    ]))])
    .await;

    let run = verdict_turn(&server).run(|_, _| {}).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let sent = &server.received()[0].body["response_format"];
    assert_eq!(sent["type"], "json_schema");
    assert_eq!(sent["json_schema"]["name"], "verdict");
    assert_eq!(sent["json_schema"]["strict"], true);
    assert_eq!(
        sent["json_schema"]["schema"]["required"],
        json!(["walk", "reason", "warning"])
    );
    assert_eq!(sent["json_schema"]["schema"]["additionalProperties"], false);
    let answer = run
        .outcome
        .context
        .messages
        .iter()
        .rfind(|message| message.role() == Role::Assistant)
        .unwrap()
        .content()
        .unwrap()
        .to_string();
    let verdict = Verdict::from_reply(&answer).unwrap();
    assert!(verdict.walk);
    assert_eq!((verdict.reason.as_str(), verdict.warning), ("sunny", None));
}

#[tokio::test]
async fn a_reply_that_does_not_fit_fails_the_dispatch_naming_the_place() {
    let server = Server::start(vec![Reply::Events(text_answer(&[
        r#"{"walk": "maybe", "reason": "clouds", "warning": null}"#,
    ]))])
    .await;

    let run = verdict_turn(&server).run(|_, _| {}).await;

    match openai_error(failure(&run)) {
        OpenAiError::StructuredOutput {
            source: StructuredOutputError::Mismatch { reason, .. },
        } => assert!(reason.starts_with("at /walk:"), "{reason}"),
        other => panic!("unexpected error {other:?}"),
    }
    assert!(
        run.outcome
            .context
            .messages
            .iter()
            .all(|message| message.role() != Role::Assistant),
        "a reply that does not fit is not stored"
    );
}

#[tokio::test]
async fn text_that_is_not_json_is_a_typed_error() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Yes, go for it."]))]).await;

    let run = verdict_turn(&server).run(|_, _| {}).await;

    assert!(matches!(
        openai_error(failure(&run)),
        OpenAiError::StructuredOutput {
            source: StructuredOutputError::NotJson { .. }
        }
    ));
}

#[tokio::test]
async fn typed_options_are_on_the_wire_and_override_extra_body() {
    let server = Server::start(vec![Reply::Events(text_answer(&["ok"]))]).await;
    let config = config(&server)
        .with_body_field("seed", json!(1))
        .with_body_field("top_p", json!(0.5))
        .with_options(
            adk::openai::ChatOptions::default()
                .with_max_completion_tokens(256)
                .with_reasoning_effort(adk::openai::ReasoningEffort::Minimal)
                .with_seed(42)
                .with_stop(["END"])
                .with_parallel_tool_calls(false)
                .with_user("user-7")
                .with_strict_tool("forecast"),
        );

    let run = run_turn(config, "Weather?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let body = &server.received()[0].body;
    assert_eq!(body["max_completion_tokens"], 256);
    assert_eq!(body["reasoning_effort"], "minimal");
    assert_eq!(body["seed"], 42, "the typed field wins over extra_body");
    assert_eq!(body["top_p"], 0.5, "extra_body still reaches the request");
    assert_eq!(body["stop"], json!(["END"]));
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["user"], "user-7");
    assert_eq!(body["tools"][0]["function"]["strict"], true);
}

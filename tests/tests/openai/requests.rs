//! URLs and headers, and how requests are shaped (modes and options).

use super::*;

#[tokio::test]
async fn a_base_url_query_string_is_kept_after_the_path() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let config = OpenAiConfig::new(format!("{}?tenant=7&region=eu", server.base_url), "m").unwrap();

    let run = run_turn(config, "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(
        server.received()[0].request_line,
        "POST /v1/chat/completions?tenant=7&region=eu HTTP/1.1"
    );
}

#[tokio::test]
async fn default_and_per_request_headers_and_the_user_agent_are_on_the_wire() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let config = config(&server)
        .with_header("OpenAI-Organization", "org-1")
        .unwrap()
        .with_header("X-Gateway-Key", "default")
        .unwrap();
    let executor = OpenAiExecutor::new(config)
        .unwrap()
        .with_request_hook(|ctx, request| {
            let value = format!("dispatch-{}", ctx.iteration());
            request
                .headers
                .insert("x-request-tag", value.parse().unwrap());
            request
                .headers
                .insert("x-gateway-key", "per-request".parse().unwrap());
        });

    let run = Turn::new(executor, "Weather in Oslo?").run(|_, _| {}).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let headers = &server.received()[0].headers;
    assert_eq!(headers["openai-organization"], "org-1");
    assert_eq!(headers["x-request-tag"], "dispatch-0");
    assert_eq!(headers["x-gateway-key"], "per-request");
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(headers["user-agent"], adk::openai::USER_AGENT);
    assert!(adk::openai::USER_AGENT.contains("adk/"));
}

#[tokio::test]
async fn azure_sends_the_key_as_api_key_to_the_deployment_url_with_the_api_version() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let resource = server.base_url.trim_end_matches("/v1");
    let config = OpenAiConfig::azure(resource, "gpt-4o-prod", "2024-10-21")
        .unwrap()
        .with_api_key("azure-key");

    let run = run_turn(config, "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = &server.received()[0];
    assert_eq!(
        received.request_line,
        "POST /openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21 HTTP/1.1"
    );
    assert_eq!(received.headers["api-key"], "azure-key");
    assert_eq!(received.authorization, None);
    assert_eq!(received.body["model"], "gpt-4o-prod");
}

#[tokio::test]
async fn a_client_passed_in_is_the_one_that_sends() {
    let server = Server::start(vec![Reply::Events(text_answer(&["Sunny."]))]).await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-from-my-client", "yes".parse().unwrap());
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();

    let executor = OpenAiExecutor::with_client(config(&server), client);
    let run = Turn::new(executor, "Weather in Oslo?").run(|_, _| {}).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    assert_eq!(server.received()[0].headers["x-from-my-client"], "yes");
}

// ---------------------------------------------------------------------------------------------
// Request shaping and modes.

#[tokio::test]
async fn a_request_hook_sets_tool_choice_on_the_first_iteration_only() {
    let server = Server::start(vec![
        Reply::Events(forecast_call("call_abc", "Oslo")),
        Reply::Events(text_answer(&["Sunny."])),
    ])
    .await;
    let executor = OpenAiExecutor::new(config(&server))
        .unwrap()
        .with_request_hook(|ctx, request| {
            if ctx.iteration() == 0 {
                request
                    .body
                    .insert("tool_choice".to_owned(), json!("required"));
            }
            request.body.insert("temperature".to_owned(), json!(0.1));
        });

    let run = Turn::new(executor, "Weather in Oslo?").run(|_, _| {}).await;

    assert_eq!(run.outcome.dispatch, Some(DispatchStatus::Ack));
    let received = server.received();
    assert_eq!(received[0].body["tool_choice"], "required");
    assert_eq!(received[1].body.get("tool_choice"), None);
    assert_eq!(received[1].body["temperature"], 0.1);
}

#[tokio::test]
async fn non_streaming_mode_asks_for_one_body_and_reports_it_as_one_chunk() {
    let server = Server::start(vec![Reply::Status(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "scripted-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Sunny in Oslo."}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
        }),
    )])
    .await;

    let run = run_turn(config(&server).with_streaming(false), "Weather in Oslo?").await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let received = &server.received()[0];
    assert_eq!(received.body["stream"], false);
    assert_eq!(received.body.get("stream_options"), None);
    assert_eq!(received.headers["accept"], "application/json");
    let chunks: Vec<(String, bool)> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Message(content) => Some((content.delta.clone(), content.is_complete)),
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks,
        [("Sunny in Oslo.".to_owned(), false), (String::new(), true)]
    );
    let total = run.events.iter().find_map(|event| match event {
        Event::GenerationStats { stats, .. } => stats.total_tokens,
        _ => None,
    });
    assert_eq!(total, Some(14));
}

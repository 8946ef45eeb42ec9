//! Against LiteLLM's proxy `/v1/messages` (`adk_integration_tests::litellm_proxy`): the proxy
//! translates each Messages request into a chat-completions call to a scripted model
//! (`tests/litellm/messages_model.py`) and that model's streamed chunks back into Anthropic's
//! events. The model answers a weather question with a signed thinking block, a redacted thinking
//! block, "Let me check." and one `weather` call per city; once it has the results, with their
//! text. It reports 1000 cached and 150 cache-written prompt tokens.
//!
//! What LiteLLM passes through, and what these tests therefore check here: thinking blocks both
//! ways with their signatures, redacted thinking, parallel `tool_use`, tool results, cache token
//! counts. What it does not: `is_error` on a tool result (a chat-completions `tool` message has
//! no such field; the error text arrives as the result), and `cache_control` (a custom provider
//! has no cache). Those are checked against the local server in `tests/tests/anthropic.rs`.
//!
//! Without Python these tests print a NOT RUN banner and pass; with `CI` set they fail.

use std::sync::Arc;
use std::time::Duration;

use adk::anthropic::{AnthropicConfig, AnthropicExecutor};
use adk_integration_tests::litellm_proxy::{MASTER_KEY, Proxy, proxy};
use serde_json::{Value, json};

use super::{MARS_ERROR, question, run_turn, stats};

/// The proxy speaks Anthropic at its root; `scripted_messages/{model}` reaches the script.
fn config(proxy: &Proxy, model: &str) -> AnthropicConfig {
    AnthropicConfig::new(&proxy.root, format!("scripted_messages/{model}"))
        .unwrap()
        .with_api_key(MASTER_KEY)
        .with_thinking(1024)
        .with_request_timeout(Duration::from_secs(60))
        .with_stream_idle_timeout(Duration::from_secs(60))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_a_tool_loop_with_signed_thinking_and_parallel_calls_completes_and_the_second_request_carries_the_thinking()
 {
    let Some(proxy) = proxy("litellm anthropic tool loop") else {
        return;
    };

    let run = run_turn(config(proxy, "loop"), question("Weather in Oslo and Mars?")).await;

    assert!(run.outcome.is_completed(), "{:?}", run.outcome.status);
    let requests = proxy.requests("loop");
    assert_eq!(requests.len(), 2, "{requests:#?}");
    // The second request, as the scripted model received it from the proxy: the first answer
    // whole, its thinking blocks unchanged, then the results in the model's order.
    let second = &requests[1];
    let assistant = second
        .iter()
        .find(|message| message["role"] == "assistant")
        .expect("the first answer");
    assert_eq!(
        assistant["thinking_blocks"],
        json!([
            {"type": "thinking", "thinking": "2 cities to check.", "signature": "sig-2"},
            {"type": "redacted_thinking", "data": "redacted-2"},
        ])
    );
    assert_eq!(assistant["content"], "Let me check.");
    let calls: Vec<&str> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(calls, [r#"{"city": "Oslo"}"#, r#"{"city": "Mars"}"#]);
    let results: Vec<&Value> = second
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| &message["content"])
        .collect();
    assert_eq!(
        results,
        [&json!("Oslo: 4 °C, light snow"), &json!(MARS_ERROR)]
    );
    let answer = run.outcome.context.messages.iter().next_back().unwrap();
    assert_eq!(
        answer.content().unwrap().render(),
        format!("Results: Oslo: 4 °C, light snow; {MARS_ERROR}.")
    );
    // The cached prefix's counts, as the proxy turned them into Anthropic's usage fields.
    let stats = stats(&run);
    assert_eq!(
        (stats[0].cache_read_tokens, stats[0].cache_write_tokens),
        (Some(1000), Some(150))
    );
    assert_eq!(stats[0].prompt_tokens, Some(1200));
}

/// The quickstart, run against the proxy as `ANTHROPIC_BASE_URL=… cargo run --example quickstart
/// --features adk-examples/anthropic` would run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn litellm_the_quickstart_completes_every_turn_through_the_anthropic_executor() {
    let Some(proxy) = proxy("litellm anthropic quickstart") else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let options = super::quickstart::Options {
        data_dir: data.path().to_owned(),
        reset: false,
        quick: false,
        database_url: None,
    };
    let executor = Arc::new(AnthropicExecutor::new(config(proxy, "quickstart")).unwrap());

    let lines = super::quickstart::run(&options, executor).await.unwrap();

    assert_eq!(
        lines[..6],
        [
            "     user: What is the weather in Oslo?",
            "reasoning: 1 cities to check.",
            "reasoning: (redacted)",
            "assistant: Let me check.",
            r#"     tool: weather({"city":"Oslo"}) -> Oslo is cloudy today"#,
            "assistant: Results: Oslo is cloudy today.",
        ]
    );
    assert_eq!(proxy.requests("quickstart").len(), 4);
}

//! Token budgets from real usage (`adk::budget::TokenBudget`): the OpenAI executor reports the
//! provider's `usage`, the budget adds it up per turn and per session in typed middleware state,
//! and refuses the next model call past a limit with a typed error naming the budget.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::budget::{
    Budget, BudgetExceeded, BudgetKind, BudgetScope, SessionUsage, TokenBudget, TurnUsage,
};
use adk::context::RawTurnContext;
use adk::openai::{OpenAiConfig, OpenAiExecutor};
use adk::primitives::Tool;
use adk::runner::TurnStatus;
use adk::sqlite::SqliteStorage;
use adk::state::InMemorySessionStore;
use adk::tokens::Usage;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A chat-completions server on 127.0.0.1: answers each request with the next scripted event
/// stream and counts the requests.
struct Server {
    base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    async fn start(replies: Vec<Vec<String>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            for events in replies {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let body = read_body(&mut socket).await;
                seen.lock().unwrap().push(body);
                socket
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                    )
                    .await
                    .unwrap();
                for event in events {
                    socket.write_all(event.as_bytes()).await.unwrap();
                }
                let _ = socket.shutdown().await;
            }
        });
        Self {
            base_url,
            requests,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

async fn read_body(socket: &mut TcpStream) -> Value {
    let mut buffer = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the client closed early");
        buffer.extend_from_slice(&chunk[..read]);
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        if buffer.len() >= end + 4 + length {
            return serde_json::from_slice(&buffer[end + 4..end + 4 + length]).unwrap();
        }
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

/// The last chunk `stream_options.include_usage` asks for: no choices, the usage.
fn usage(prompt: u64, completion: u64) -> String {
    let chunk = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted-model",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    });
    format!("data: {chunk}\n\n")
}

fn text(answer: &str, prompt: u64, completion: u64) -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": answer}), None),
        chunk(json!({}), Some("stop")),
        usage(prompt, completion),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn forecast_call(prompt: u64, completion: u64) -> Vec<String> {
    vec![
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call-1", "type": "function",
                   "function": {"name": "forecast", "arguments": "{\"city\": \"Oslo\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        usage(prompt, completion),
        "data: [DONE]\n\n".to_owned(),
    ]
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    /// The city.
    city: String,
}

fn forecast() -> Tool {
    Tool::typed::<ForecastArgs>("forecast")
        .description("Tomorrow's weather.")
        .read_only()
        .handler(
            |args: ForecastArgs, _invocation| async move { Ok(format!("{}: sunny", args.city)) },
        )
        .build()
        .unwrap()
}

async fn runner(server: &Server, budget: TokenBudget) -> TurnRunner {
    let config = OpenAiConfig::new(&server.base_url, "scripted-model")
        .unwrap()
        .with_api_key("sk-test");
    TurnRunner::builder()
        .storage(SqliteStorage::in_memory().await.unwrap())
        .session_store(InMemorySessionStore::new())
        .executor(OpenAiExecutor::new(config).unwrap())
        .tool(forecast())
        .dispatch_input(budget)
        .dispatch_output(budget)
        .build()
}

fn turn(question: &str) -> RawTurnContext {
    RawTurnContext::new("budgeted", "You help.").user_message(question.to_owned())
}

#[tokio::test]
async fn the_per_turn_budget_refuses_the_call_after_the_openai_usage_crossed_it_naming_the_budget()
{
    // The first call (a tool call) reports 600 + 20 tokens; the turn's limit is 500 in total.
    let server = Server::start(vec![forecast_call(600, 20), text("never sent", 1, 1)]).await;
    let runner = runner(&server, TokenBudget::new().per_turn_total(500)).await;
    let outcome = runner.run(turn("Weather in Oslo?")).await.unwrap();

    let TurnStatus::Failed(error) = &outcome.status else {
        panic!("the turn was refused: {:?}", outcome.status);
    };
    let refusal = BudgetExceeded::find(error).expect("a budget refusal behind the error");
    assert_eq!(
        refusal,
        &BudgetExceeded {
            budget: Budget {
                scope: BudgetScope::Turn,
                kind: BudgetKind::Total
            },
            limit: 500,
            used: 620,
        }
    );
    assert!(
        format!("{error:#}")
            .contains("per-turn total token budget of 500 tokens is spent (620 used)")
    );
    assert_eq!(server.requests(), 1, "the second model call was never made");
}

#[tokio::test]
async fn the_per_session_budget_counts_every_turns_reported_usage_and_refuses_the_turn_after() {
    let server = Server::start(vec![
        forecast_call(300, 10),
        text("Sunny in Oslo.", 350, 40),
        text("You are welcome.", 400, 20),
        text("never sent", 1, 1),
    ])
    .await;
    let runner = runner(
        &server,
        TokenBudget::new()
            .per_session_total(1_000)
            .per_turn_input(5_000),
    )
    .await;

    let first = runner
        .run(turn("Weather in Oslo?"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        first
            .context
            .middleware_state::<TurnUsage>()
            .map(|turn| (turn.usage, turn.model_calls)),
        Some((
            Usage {
                input: 650,
                output: 50
            },
            2
        )),
        "both model calls of the turn, as the provider reported them"
    );
    assert_eq!(
        first
            .context
            .middleware_state::<SessionUsage>()
            .map(|s| s.usage),
        Some(Usage {
            input: 650,
            output: 50
        })
    );

    // 700 < 1,000: the second turn may call the model, and ends the session at 1,120.
    let second = runner
        .run(turn("Thanks!"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(
        second
            .context
            .middleware_state::<SessionUsage>()
            .map(|s| (s.usage.total(), s.model_calls)),
        Some((1_120, 3)),
        "the session's usage was loaded from the store and added to"
    );
    assert_eq!(
        second
            .context
            .middleware_state::<TurnUsage>()
            .map(|t| t.usage.total()),
        Some(420),
        "a turn's own usage starts at zero"
    );

    let third = runner.run(turn("One more?")).await.unwrap();
    let TurnStatus::Failed(error) = &third.status else {
        panic!("the session budget is spent: {:?}", third.status);
    };
    assert_eq!(
        BudgetExceeded::find(error).map(|refusal| (refusal.budget, refusal.limit, refusal.used)),
        Some((
            Budget {
                scope: BudgetScope::Session,
                kind: BudgetKind::Total
            },
            1_000,
            1_120
        ))
    );
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn without_reported_usage_a_budget_counts_nothing_and_refuses_nothing() {
    let mut silent = text("Hi.", 0, 0);
    silent.remove(2);
    let server = Server::start(vec![silent]).await;
    let runner = runner(&server, TokenBudget::new().per_turn_total(1)).await;
    let outcome = runner
        .run(turn("Hello"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert!(outcome.reply().is_some());
    assert_eq!(outcome.context.middleware_state::<TurnUsage>(), None);
}

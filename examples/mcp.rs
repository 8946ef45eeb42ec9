//! The quickstart's kind of agent with an MCP server's tools beside its own: the server (by
//! default the reference server `@modelcontextprotocol/server-everything`, started with `npx`)
//! runs as a child process over stdio, its tools are registered as ordinary adk tools named
//! `everything_{tool}`, and each turn's model calls one of them.
//!
//! ```sh
//! cargo run --example mcp --features adk-examples/mcp
//! cargo run --example mcp --features adk-examples/mcp -- path/to/mcp-server-everything stdio
//! ```
//!
//! The model is the deterministic scripted one: it calls `everything_echo` with the question
//! when the server has that tool, then answers from the result. With the `openai` feature and
//! `OPENAI_API_KEY` or `OPENAI_BASE_URL` set, a real model chooses among all the tools.

use std::sync::Arc;

use adk::TurnRunner;
use adk::context::RawTurnContext;
use adk::dispatch::{Executor, ScriptedModel, Step};
use adk::mcp::{McpClient, McpServer};
use adk::pipeline::BoxError;
use adk::primitives::{Message, Tool, ToolCallResults};
use adk::storage::NoopStorage;

/// The questions the example asks, one turn each.
pub const QUESTIONS: [&str; 2] = ["Hello over MCP!", "Is the server still there?"];

/// A local tool beside the server's, as in the quickstart.
pub fn local_clock() -> Result<Tool, BoxError> {
    Ok(Tool::builder("clock")
        .description("The current time in UTC.")
        .handler(|_, _| async { Ok(format!("{:?}", std::time::SystemTime::now())) })
        .build()?)
}

/// The scripted model: call `everything_echo` with the user's text, then answer with the
/// result.
pub fn scripted() -> Arc<dyn Executor> {
    Arc::new(ScriptedModel::from_fn(|ctx| {
        let asked = ctx
            .messages
            .iter()
            .rev()
            .find(|message| message.role() == adk::primitives::Role::User)
            .and_then(Message::content)
            .map(|content| content.render())
            .unwrap_or_default();
        match ctx.tool_calls.iter().next_back() {
            None if ctx.tools.contains("everything_echo") => {
                Step::call("everything_echo", serde_json::json!({ "message": asked }))
            }
            None => Step::reply(format!("I have {} tools.", ctx.tools.len())),
            Some(call) => match call.results() {
                Some(ToolCallResults::Text(text)) => {
                    Step::reply(format!("The MCP server said: {}", text.render()))
                }
                _ => Step::reply("The MCP server answered."),
            },
        }
    }))
}

/// Connects to `server`, runs one turn per question with `model`, and returns the answers.
pub async fn run(server: McpServer, model: Arc<dyn Executor>) -> Result<Vec<String>, BoxError> {
    let client = McpClient::connect(server).await?;
    println!("MCP server tools: {}", client.tool_names().join(", "));
    for skipped in client.skipped() {
        println!("left out: {skipped}");
    }
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(model)
        .tool(local_clock()?)
        .tools(client.tools())
        .dispatch_input(client.refresher())
        .build();
    let mut answers = Vec::new();
    for (index, question) in QUESTIONS.iter().enumerate() {
        println!("\n> {question}");
        let raw = RawTurnContext::new(format!("mcp-example-{index}"), "You use tools.")
            .user_message(*question);
        let outcome = runner.run(raw).await?.into_result()?;
        for call in outcome.context.tool_calls.iter() {
            println!(
                "  [tool {}: {}]",
                call.tool(),
                if call.is_error() { "failed" } else { "ok" }
            );
        }
        let answer = outcome
            .reply()
            .and_then(Message::content)
            .map(|content| content.render())
            .unwrap_or_default();
        println!("{answer}");
        answers.push(answer);
    }
    client.shutdown().await;
    Ok(answers)
}

fn choose_model() -> Result<Arc<dyn Executor>, BoxError> {
    #[cfg(feature = "openai")]
    if let Some(config) = adk::openai::OpenAiConfig::from_env()? {
        return Ok(Arc::new(adk::openai::OpenAiExecutor::new(config)?));
    }
    Ok(scripted())
}

#[allow(
    dead_code,
    reason = "tests/tests/mcp.rs includes this file and calls `run` instead"
)]
fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let server = match args.next() {
        Some(program) => McpServer::stdio("everything", program).args(args),
        None => McpServer::stdio("everything", "npx")
            .args(["-y", "@modelcontextprotocol/server-everything"]),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(server, choose_model()?))?;
    Ok(())
}

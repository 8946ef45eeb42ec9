//! MCP tools are ordinary adk tools: the `tool_execution` pipeline and the ready approval
//! middleware hold them like any other, and a middleware can decide from the server's
//! annotations (`McpToolInfo`) which calls need a human.

use adk::approval::{Approval, Decision};
use adk::context::ToolContext;
use adk::events::Event;
use adk::pipeline::{BoxError, Next};
use adk::primitives::ToolCallResults;

use super::*;

/// One turn through `runner`: the scripted model calls `tool` with `args`, then replies.
/// Returns the call's result text and whether it failed.
async fn one_call(
    builder: adk::runner::TurnRunnerBuilder,
    tool: &str,
    args: Value,
) -> (String, bool) {
    let runner = builder
        .storage(NoopStorage::new())
        .executor(ScriptedModel::steps([
            Step::call(tool, args),
            Step::reply("done"),
        ]))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("mcp-pipeline", "You use tools.").user_message("go"))
        .await
        .expect("the turn runs")
        .into_result()
        .expect("the turn completes");
    let call = outcome.context.tool_calls.first().expect("one tool call");
    let text = match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        other => format!("{other:?}"),
    };
    (text, call.is_error())
}

fn answering(decision: Decision) -> impl Fn(&Event) + Send + Sync + 'static {
    move |event| {
        if let Event::TurnGateOpen { gate } = event {
            gate.resolve(decision.clone())
                .expect("the approval gate waits for a Decision");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_call_waits_for_approval_and_runs_only_when_approved() {
    let Some(programs) = programs("an_mcp_tool_call_waits_for_approval") else {
        return;
    };
    let client = McpClient::connect(everything(programs)).await.unwrap();

    let approved = TurnRunner::builder()
        .tools(client.tools())
        .tool_execution(Approval::tools(["everything_echo"]))
        .observe(answering(Decision::Approve));
    let (text, failed) = one_call(approved, "everything_echo", json!({"message": "hi"})).await;
    assert_eq!((text.as_str(), failed), ("Echo: hi", false));

    let edited = TurnRunner::builder()
        .tools(client.tools())
        .tool_execution(Approval::tools(["everything_echo"]))
        .observe(answering(Decision::edit(json!({"message": "edited"}))));
    let (text, failed) = one_call(edited, "everything_echo", json!({"message": "hi"})).await;
    assert_eq!((text.as_str(), failed), ("Echo: edited", false));

    let denied = TurnRunner::builder()
        .tools(client.tools())
        .tool_execution(Approval::tools(["everything_echo"]))
        .observe(answering(Decision::deny("not today")));
    let (text, failed) = one_call(denied, "everything_echo", json!({"message": "hi"})).await;
    assert!(failed, "a denied call is an error the model reads: {text}");
    assert!(
        text.contains("not today"),
        "the model reads the reason: {text}"
    );
    assert!(
        !text.contains("Echo:"),
        "the server never ran the call: {text}"
    );
}

/// Refuses every call of an MCP tool its server does not declare read-only.
#[adk::middleware(pipeline = tool_execution)]
async fn read_only_mcp_tools(
    ctx: &mut ToolContext,
    next: Next<'_, ToolContext>,
) -> Result<(), BoxError> {
    if McpToolInfo::of(ctx.tool()).is_some_and(|info| info.side_effecting()) {
        ctx.refuse("only read-only MCP tools may run here");
        return Ok(());
    }
    let _ = next.run(ctx).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_middleware_reads_the_servers_annotations_and_refuses_side_effecting_calls() {
    let Some(programs) = programs("a_tool_middleware_reads_the_servers_annotations") else {
        return;
    };
    let client = McpClient::connect(everything(programs)).await.unwrap();

    let runner = || {
        TurnRunner::builder()
            .tools(client.tools())
            .tool_execution(read_only_mcp_tools)
    };
    let (text, failed) = one_call(runner(), "everything_echo", json!({"message": "hi"})).await;
    assert_eq!((text.as_str(), failed), ("Echo: hi", false));

    let (text, failed) = one_call(
        runner(),
        "everything_simulate-research-query",
        json!({"topic": "rust"}),
    )
    .await;
    assert!(failed, "{text}");
    assert!(
        text.contains("only read-only MCP tools may run here"),
        "{text}"
    );
}

//! `tool_calls_this_turn()`: the calls a turn made itself, apart from the calls loaded from
//! history into the same `tool_calls` collection.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::Agent;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::{Rule, ScriptedModel};
use adk::history::LoadHistory;
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Tool, ToolCall, ToolRegistry};
use adk::sqlite::SqliteStorage;
use adk::storage::{NoopStorage, SharedStorage};
use serde_json::json;

/// A tool echoing the key it was asked for.
fn lookup(name: &'static str) -> Tool {
    Tool::builder(name)
        .description("Looks a key up.")
        .handler(move |args: serde_json::Value, _invocation| async move {
            Ok(format!("{name} found {}", args["key"]))
        })
        .build()
        .unwrap()
}

fn keys<'a>(calls: impl Iterator<Item = &'a ToolCall>) -> Vec<String> {
    calls
        .map(|call| format!("{}:{}", call.tool(), call.args()["key"]))
        .collect()
}

#[tokio::test]
async fn with_history_loaded_the_view_holds_only_this_turns_calls_in_order() {
    let agent = Agent::builder("this-turn")
        .model(ScriptedModel::rules([
            Rule::user_says("one").call("first", json!({ "key": "1" })),
            Rule::user_says("two").call("second", json!({ "key": "2" })),
            Rule::after_tool("second").call("first", json!({ "key": "3" })),
            Rule::always().reply("done: {result}"),
        ]))
        .tools([lookup("first"), lookup("second")])
        .storage(SqliteStorage::in_memory().await.unwrap())
        .history(LoadHistory::last_turns(10))
        .build();
    let _first = agent.run("c", "one").await.unwrap().into_result().unwrap();

    let second = agent.run("c", "two").await.unwrap().into_result().unwrap();

    assert_eq!(
        keys(second.context.tool_calls.iter()),
        [r#"first:"1""#, r#"second:"2""#, r#"first:"3""#],
        "the collection holds the loaded call and this turn's"
    );
    assert_eq!(
        keys(second.context.tool_calls_this_turn()),
        [r#"second:"2""#, r#"first:"3""#],
    );
}

#[tokio::test]
async fn a_call_added_directly_is_history_and_a_stored_or_replaced_call_is_this_turns() {
    let raw = RawTurnContext::new("c", "You are terse.");
    let storage = SharedStorage::new(NoopStorage::new());
    let mut ctx = TurnContext::new(raw, storage, ToolRegistry::new()).unwrap();
    let call = |id: &str| ToolCall::new(id, "first", json!({ "key": id })).unwrap();
    ctx.tool_calls.add(call("loaded"));
    ctx.store_tool_call(call("stored")).await.unwrap();
    ctx.store_tool_call(call("doomed")).await.unwrap();
    ctx.replace_tool_call_group(["doomed"], vec![call("replacement")])
        .await
        .unwrap();
    ctx.store_tool_call(call("deleted")).await.unwrap();
    ctx.delete_tool_call("deleted").await.unwrap();

    let ids: Vec<&str> = ctx.tool_calls_this_turn().map(ToolCall::id).collect();
    assert_eq!(ids, ["stored", "replacement"]);
    let all: Vec<&str> = ctx.tool_calls.iter().map(ToolCall::id).collect();
    assert_eq!(all, ["loaded", "stored", "replacement"]);
}

#[tokio::test]
async fn a_dispatch_sees_the_turns_calls_and_its_own_and_hands_its_own_back() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen_by_model = std::sync::Arc::clone(&seen);
    let agent = Agent::builder("this-turn")
        .model(adk::dispatch::executor_fn(
            move |ctx: &mut DispatchContext| {
                let seen = std::sync::Arc::clone(&seen_by_model);
                Box::pin(async move {
                    let call = ToolCall::new(
                        format!("call-{}", ctx.iteration()),
                        "first",
                        json!({ "key": ctx.iteration() }),
                    )?;
                    ctx.store_tool_call(call).await?;
                    let ids: Vec<String> = ctx
                        .tool_calls_this_turn()
                        .map(|call| call.id().to_owned())
                        .collect();
                    seen.lock().unwrap().push(ids);
                    if ctx.iteration() == 1 {
                        ctx.ack()?;
                    }
                    Ok(())
                })
            },
        ))
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.tool_calls
                    .add(ToolCall::new("loaded", "first", json!({ "key": "old" }))?);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .storage(NoopStorage::new())
        .build();

    let outcome = agent.run("c", "hi").await.unwrap().into_result().unwrap();

    assert_eq!(
        *seen.lock().unwrap(),
        [vec!["call-0"], vec!["call-0", "call-1"]],
        "the second iteration sees the first one's call, never the loaded one"
    );
    let ids: Vec<&str> = outcome
        .context
        .tool_calls_this_turn()
        .map(ToolCall::id)
        .collect();
    assert_eq!(ids, ["call-0", "call-1"]);
}

//! The agentic loop end to end through a real `TurnRunner`: a scripted model asks for tools in
//! iteration 0, the executor runs them and records their results, and in iteration 1 the model
//! answers and acknowledges. What reached storage, what the turn holds afterwards and the exact
//! event sequence are all checked.

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::{Executor, ToolCallUpdate};
use adk::events::{DispatchStatus, Event};
use adk::pipeline::{BoxError, BoxFuture, Downstream, from_fn};
use adk::primitives::{
    Message, Role, Tool, ToolCall, ToolCallResults, ToolOutput, tool_call_checksum,
};
use adk::storage::StorageError;
use serde::Deserialize;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// A storage adapter that records every write, in order, as one line each.

adk::storage_adapter! {
    /// Every write the turn made, shared between clones.
    #[derive(Clone, Default)]
    struct RecordingStorage {
        writes: Arc<Mutex<Vec<String>>>,
    }

    impl {
        store_message: |_ctx, message| async move { self.record(format!("store message {}", describe_message(&message))) },
        mutate_message: |_ctx, message| async move { self.record(format!("mutate message {}", describe_message(&message))) },
        delete_message: |_ctx, id| async move { self.record(format!("delete message {id}")) },
        store_tool_call: |_ctx, call| async move { self.record(format!("store tool call {}", describe_call(&call))) },
        mutate_tool_call: |_ctx, call| async move { self.record(format!("mutate tool call {}", describe_call(&call))) },
        delete_tool_call: |_ctx, id| async move { self.record(format!("delete tool call {id}")) },
        store_thought: |_ctx, thought| async move { self.record(format!("store thought {}", thought.id())) },
        mutate_thought: |_ctx, thought| async move { self.record(format!("mutate thought {}", thought.id())) },
        delete_thought: |_ctx, id| async move { self.record(format!("delete thought {id}")) },
        store_memory: |_ctx, memory| async move { self.record(format!("store memory {}", memory.id())) },
        mutate_memory: |_ctx, memory| async move { self.record(format!("mutate memory {}", memory.id())) },
        delete_memory: |_ctx, id| async move { self.record(format!("delete memory {id}")) },
        store_retrievable: |_ctx, retrievable| async move { self.record(format!("store retrievable {}", retrievable.id())) },
        mutate_retrievable: |_ctx, retrievable| async move { self.record(format!("mutate retrievable {}", retrievable.id())) },
        delete_retrievable: |_ctx, id| async move { self.record(format!("delete retrievable {id}")) },
        store_standing_instruction: |_ctx, instruction| async move { self.record(format!("store standing instruction {instruction:?}")) },
        mutate_standing_instruction: |_ctx, instruction| async move { self.record(format!("mutate standing instruction {instruction:?}")) },
        delete_standing_instruction: |_ctx, instruction| async move { self.record(format!("delete standing instruction {instruction:?}")) },
        ..noop
    }
}

impl RecordingStorage {
    fn record(&self, write: String) -> Result<(), StorageError> {
        self.writes
            .lock()
            .map_err(|_| StorageError::backend("the write log lock is poisoned"))?
            .push(write);
        Ok(())
    }

    fn writes(&self) -> Vec<String> {
        self.writes.lock().unwrap().clone()
    }
}

fn describe_message(message: &Message) -> String {
    let content = message
        .content()
        .map(ToString::to_string)
        .unwrap_or_default();
    format!("{} {}: {content}", message.id(), message.role().as_str())
}

fn describe_call(call: &ToolCall) -> String {
    let state = match (call.is_complete(), call.is_error(), call.results()) {
        (false, _, _) => "pending".to_owned(),
        (true, false, Some(ToolCallResults::Text(text))) => format!("done: {text}"),
        (true, true, Some(ToolCallResults::Text(text))) => format!("failed: {text}"),
        (true, _, other) => format!("finished with {other:?}"),
    };
    format!(
        "{} {} {} {state}",
        call.id(),
        call.tool(),
        serde_json::Value::Object(call.args().clone())
    )
}

// ---------------------------------------------------------------------------------------------
// The tool and the scripted model.

#[derive(Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    /// The city to forecast.
    city: String,
}

fn forecast() -> Tool {
    Tool::typed::<ForecastArgs>("forecast")
        .description("Tomorrow's weather for a city.")
        .read_only()
        .handler(|args: ForecastArgs, _invocation| async move {
            let weather = if args.city == "Bergen" {
                "rain"
            } else {
                "sunny"
            };
            Ok(format!("{}: {weather}", args.city))
        })
        .build()
        .unwrap()
}

/// Plays the model: in iteration 0 it asks for a forecast of every city the user named, in
/// iteration 1 it answers from the tool results and acknowledges.
struct ScriptedModel;

const CITIES: [&str; 3] = ["Oslo", "Bergen", "Tromsø"];

impl Executor for ScriptedModel {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            match ctx.iteration() {
                0 => ask_for_forecasts(ctx).await,
                1 => answer(ctx).await,
                other => Err(format!("the script has no iteration {other}").into()),
            }
        })
    }
}

async fn ask_for_forecasts(ctx: &mut DispatchContext) -> Result<(), BoxError> {
    let question = ctx
        .messages
        .iter()
        .rev()
        .find(|message| message.role() == Role::User)
        .and_then(Message::content)
        .map(ToString::to_string)
        .ok_or("the turn has no user message")?;
    let mut calls = Vec::new();
    for city in CITIES.iter().filter(|city| question.contains(*city)) {
        let id = format!("call-{}", calls.len() + 1);
        let args = json!({"city": city});
        ctx.report_tool_call(
            &id,
            ToolCallUpdate::new().tool("forecast").args(args.clone()),
        )?;
        let call = ToolCall::new(id, "forecast", args)?;
        ctx.store_tool_call(call.clone()).await?;
        calls.push(call);
    }
    let mut finished = Vec::new();
    for call in calls {
        let done = match ctx.execute_tool(&call).await {
            Ok(ToolOutput::Text(text)) => call.complete(text),
            Ok(other) => call.fail(format!("unexpected output {other:?}")),
            Err(error) => call.fail(error.to_string()),
        };
        finished.push(done);
    }
    // Recorded last call first: each mutation must keep its record where it stands.
    for done in finished.into_iter().rev() {
        ctx.mutate_tool_call(done).await?;
    }
    Ok(())
}

async fn answer(ctx: &mut DispatchContext) -> Result<(), BoxError> {
    let forecasts: Vec<String> = ctx
        .tool_calls
        .iter()
        .filter_map(|call| match call.results() {
            Some(ToolCallResults::Text(text)) => Some(text.to_string()),
            _ => None,
        })
        .collect();
    let reply = format!("Tomorrow: {}.", forecasts.join("; "));
    ctx.store_message(Message::assistant("m-assistant", reply)?)
        .await?;
    ctx.ack()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_two_iteration_tool_loop_persists_records_in_order_and_leaves_them_in_the_turn() {
    let storage = RecordingStorage::default();
    let events = Arc::new(Mutex::new(Vec::<Event>::new()));
    let recorded = Arc::clone(&events);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .tool(forecast())
        .observe(move |event| recorded.lock().unwrap().push(event.clone()))
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let question = Message::user("m-user", "Weather tomorrow in Oslo and Bergen?")?;
                ctx.store_message(question).await?;
                let downstream = next.run(ctx).await;
                assert!(matches!(downstream, Downstream::Completed));
                Ok::<(), BoxError>(())
            })
        }))
        .executor(ScriptedModel)
        .build();

    let outcome = runner
        .run(RawTurnContext::new(
            "conversation-1",
            "You forecast weather.",
        ))
        .await
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Ack));

    assert_eq!(
        storage.writes(),
        [
            "store message m-user user: Weather tomorrow in Oslo and Bergen?",
            r#"store tool call call-1 forecast {"city":"Oslo"} pending"#,
            r#"store tool call call-2 forecast {"city":"Bergen"} pending"#,
            r#"mutate tool call call-2 forecast {"city":"Bergen"} done: Bergen: rain"#,
            r#"mutate tool call call-1 forecast {"city":"Oslo"} done: Oslo: sunny"#,
            "store message m-assistant assistant: Tomorrow: Oslo: sunny; Bergen: rain.",
        ]
    );

    let tool_calls: Vec<String> = outcome
        .context
        .tool_calls
        .iter()
        .map(describe_call)
        .collect();
    assert_eq!(
        tool_calls,
        [
            r#"call-1 forecast {"city":"Oslo"} done: Oslo: sunny"#,
            r#"call-2 forecast {"city":"Bergen"} done: Bergen: rain"#,
        ]
    );
    let messages: Vec<String> = outcome
        .context
        .messages
        .iter()
        .map(describe_message)
        .collect();
    assert_eq!(
        messages,
        [
            "m-user user: Weather tomorrow in Oslo and Bergen?",
            "m-assistant assistant: Tomorrow: Oslo: sunny; Bergen: rain.",
        ]
    );

    let events = events.lock().unwrap().clone();
    // Iteration 0 completes (output pipeline, flush, iterationEnd); in iteration 1 the
    // executor acks, which skips that iteration's output pipeline and its iterationEnd.
    assert_eq!(
        events.iter().map(Event::name).collect::<Vec<_>>(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "toolCall",
            "toolCall",
            "toolExecutionStart",
            "toolExecutionEnd",
            "toolExecutionStart",
            "toolExecutionEnd",
            "iterationEnd",
            "iterationStart",
            "dispatchEnd",
            "turnEnd",
        ]
    );
    let executed: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolExecutionStart {
                tool_name,
                checksum,
                ..
            } => Some((tool_name.as_str(), checksum.as_str())),
            _ => None,
        })
        .collect();
    let oslo = tool_call_checksum("forecast", json!({"city": "Oslo"}).as_object().unwrap());
    let bergen = tool_call_checksum("forecast", json!({"city": "Bergen"}).as_object().unwrap());
    assert_eq!(
        executed,
        [("forecast", oslo.as_str()), ("forecast", bergen.as_str())]
    );
    let dispatch_end = events
        .iter()
        .find_map(|event| match event {
            Event::DispatchEnd {
                status, iterations, ..
            } => Some((*status, *iterations)),
            _ => None,
        })
        .unwrap();
    assert_eq!(dispatch_end, (DispatchStatus::Ack, 2));
}

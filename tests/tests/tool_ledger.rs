//! The tool ledger: a call of a tool that is not read-only writes an intent before it runs and
//! its result after, and a re-run of the same call id in the same turn is settled by the
//! record: a recorded result is used without running the tool again; an idempotent tool
//! without a result runs again under the same key; an at-most-once tool without a result is
//! not run again and surfaces `OutcomeUnknown`. A handler that panics after its intent was
//! written stands in for a process killed mid-call (the intent stays without a result).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ToolExecutionError, executor_fn};
use adk::events::ErrorCode;
use adk::pipeline::BoxError;
use adk::postgres::PostgresStorage;
use adk::primitives::EffectKind;
use adk::primitives::{Tool, ToolCall, ToolOutput};
use adk::sqlite::{SqliteSessionStore, SqliteStorage};
use adk::state::{SessionKey, SessionStore, SharedSessionStore};
use adk::storage::approvals::ApprovalRequest;
use adk::storage::ledger::{ToolIntent, ToolResult};
use adk::storage::{NoopStorage, SharedStorage, StorageContext, StorageError};
use adk_integration_tests::postgres_database::fresh_options;
use serde::Deserialize;
use serde_json::json;

type Outcome = Result<ToolOutput, ToolExecutionError>;

#[derive(Deserialize, schemars::JsonSchema)]
struct Send {
    to: String,
}

/// What the handler saw on each run: the key it was handed.
type Runs = Arc<Mutex<Vec<Option<String>>>>;

/// A `send` tool with `effect`, whose first run panics when `crash_first` (the intent is
/// written, the result never is) and whose later runs answer `sent to {to}`.
fn send_tool(runs: &Runs, crash_first: bool, effect: fn(SendBuilder) -> SendDeclared) -> Tool {
    let runs = Arc::clone(runs);
    let builder = Tool::typed::<Send>("send").description("Sends a message.");
    effect(builder)
        .handler(move |args: Send, invocation| {
            let runs = Arc::clone(&runs);
            async move {
                let first = {
                    let mut runs = runs.lock().unwrap();
                    runs.push(invocation.idempotency_key().map(str::to_owned));
                    runs.len() == 1
                };
                assert!(!(crash_first && first), "killed mid-call");
                Ok(format!("sent to {}", args.to))
            }
        })
        .build()
        .unwrap()
}

type SendBuilder = adk::primitives::ToolBuilder<(), adk::primitives::Typed<Send>>;
type SendDeclared =
    adk::primitives::ToolBuilder<(), adk::primitives::Typed<Send>, adk::primitives::Declared>;

/// Runs one turn on `storage` whose executor calls `send` twice under the same call id, and
/// returns both outcomes.
async fn call_twice(storage: SharedStorage, tool: Tool) -> (Outcome, Outcome) {
    let slot: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let runner = TurnRunner::builder()
        .storage(storage)
        .tool(tool)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let filled = Arc::clone(&filled);
            Box::pin(async move {
                for _ in 0..2 {
                    let outcome = ctx.call_tool("send", "call-1", json!({"to": "ana"})).await;
                    filled.lock().unwrap().push(outcome);
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("c", "p"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert!(outcome.is_completed());
    let mut outcomes = std::mem::take(&mut *slot.lock().unwrap());
    let second = outcomes.pop().unwrap();
    (outcomes.pop().unwrap(), second)
}

fn text(outcome: &Outcome) -> &str {
    match outcome {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

async fn stores() -> Vec<(&'static str, SharedStorage, Option<tempfile::TempDir>)> {
    let folder = tempfile::tempdir().unwrap();
    let sqlite = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    let mut stores = vec![
        ("memory", SharedStorage::new(NoopStorage::new()), None),
        ("sqlite", SharedStorage::new(sqlite), Some(folder)),
    ];
    // Without ADK_TEST_POSTGRES_URL, `fresh_options` prints that the PostgreSQL half did not
    // run (and fails when ADK_REQUIRE_POSTGRES is set).
    if let Some(options) = fresh_options("tool_ledger") {
        let postgres = PostgresStorage::connect_with(options).await.unwrap();
        stores.push(("postgres", SharedStorage::new(postgres), None));
    }
    stores
}

#[tokio::test]
async fn a_recorded_result_is_used_and_the_tool_is_not_run_again() {
    for (store, storage, _folder) in stores().await {
        for effect in [
            SendBuilder::at_most_once as fn(SendBuilder) -> SendDeclared,
            |builder: SendBuilder| builder.idempotent_by(|args: &Send| format!("to-{}", args.to)),
        ] {
            let runs = Runs::default();
            let (first, second) =
                call_twice(storage.clone(), send_tool(&runs, false, effect)).await;
            assert_eq!(text(&first), "sent to ana", "{store}");
            assert_eq!(text(&second), "sent to ana", "{store}");
            assert_eq!(runs.lock().unwrap().len(), 1, "{store}: ran once");
        }
    }
}

#[tokio::test]
async fn an_at_most_once_call_without_a_result_is_not_run_again_and_its_outcome_is_unknown() {
    for (store, storage, _folder) in stores().await {
        let runs = Runs::default();
        let tool = send_tool(&runs, true, SendBuilder::at_most_once);
        let (first, second) = call_twice(storage, tool).await;
        assert!(
            matches!(first, Err(ToolExecutionError::Panicked { .. })),
            "{store}"
        );
        let error = second.unwrap_err();
        let unknown = error.outcome_unknown().expect("a typed outcome-unknown");
        assert_eq!(
            (unknown.tool.as_str(), unknown.call_id.as_str()),
            ("send", "call-1")
        );
        assert!(
            error.to_string().contains("outcome of this call"),
            "{store}: {error}"
        );
        assert_eq!(runs.lock().unwrap().len(), 1, "{store}: not run again");
    }
}

#[tokio::test]
async fn an_idempotent_call_without_a_result_runs_again_under_the_same_key() {
    for (store, storage, _folder) in stores().await {
        let runs = Runs::default();
        let tool = send_tool(&runs, true, |builder| {
            builder.idempotent_by(|args: &Send| format!("to-{}", args.to))
        });
        let (first, second) = call_twice(storage, tool).await;
        assert!(first.is_err(), "{store}");
        assert_eq!(text(&second), "sent to ana", "{store}");
        let keys = runs.lock().unwrap().clone();
        assert_eq!(
            keys,
            [Some("to-ana".to_owned()), Some("to-ana".to_owned())],
            "{store}"
        );
    }
}

#[tokio::test]
async fn read_only_tools_are_not_recorded_and_always_run() {
    for (store, storage, _folder) in stores().await {
        let runs = Runs::default();
        let tool = send_tool(&runs, false, SendBuilder::read_only);
        let (first, second) = call_twice(storage, tool).await;
        assert_eq!(
            (text(&first), text(&second)),
            ("sent to ana", "sent to ana")
        );
        assert_eq!(runs.lock().unwrap().len(), 2, "{store}");
    }
}

#[tokio::test]
async fn a_call_id_names_one_call_in_one_turn_and_partition() {
    for (store, storage, _folder) in stores().await {
        let intent = || {
            ToolIntent::new(
                "call-1",
                "send",
                "sum",
                Some("k".to_owned()),
                EffectKind::Idempotent,
            )
        };
        let turn = StorageContext::new("c");
        assert_eq!(
            storage.record_tool_intent(&turn, intent()).await.unwrap(),
            None,
            "{store}"
        );
        let again = storage
            .record_tool_intent(&turn, intent())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((again.intent, again.result), (intent(), None), "{store}");
        storage
            .record_tool_result(&turn, "call-1".into(), ToolResult::Text("done".into()))
            .await
            .unwrap();
        let recorded = storage
            .record_tool_intent(&turn, intent())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            recorded.result,
            Some(ToolResult::Text("done".into())),
            "{store}"
        );
        // Another turn of the conversation, and another conversation, have no record.
        let next_turn = StorageContext::new("c");
        assert_eq!(
            storage
                .record_tool_intent(&next_turn, intent())
                .await
                .unwrap(),
            None
        );
        let other = StorageContext::new("d").with_turn_id(turn.turn_id().clone());
        assert_eq!(
            storage.record_tool_intent(&other, intent()).await.unwrap(),
            None
        );
    }
}

/// Runs one turn on `storage` whose executor stores a `send` call, executes it, and, when
/// `mutate`, records the finished call; returns the turn's storage context.
async fn execute_send(storage: SharedStorage, tool: Tool, mutate: bool) -> StorageContext {
    let slot: Arc<Mutex<Option<StorageContext>>> = Arc::default();
    let filled = Arc::clone(&slot);
    let runner = TurnRunner::builder()
        .storage(storage)
        .tool(tool)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let filled = Arc::clone(&filled);
            Box::pin(async move {
                *filled.lock().unwrap() = Some(ctx.storage_context().clone());
                let call = ToolCall::new("call-1", "send", json!({"to": "ana"}))?;
                ctx.store_tool_call(call.clone()).await?;
                let output = ctx.execute_tool(&call).await?;
                if mutate {
                    let ToolOutput::Text(text) = output else {
                        panic!("expected text")
                    };
                    ctx.mutate_tool_call(call.complete(text)).await?;
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("c", "p"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert!(outcome.is_completed());
    slot.lock().unwrap().take().unwrap()
}

/// The ledger's record of `call-1` in the turn of `ctx`.
async fn recorded(storage: &SharedStorage, ctx: &StorageContext) -> Option<ToolResult> {
    let intent = ToolIntent::new("call-1", "send", "sum", None, EffectKind::AtMostOnce);
    storage
        .record_tool_intent(ctx, intent)
        .await
        .unwrap()
        .expect("the intent was recorded")
        .result
}

#[tokio::test]
async fn an_executed_call_s_ledger_result_is_written_with_its_finished_tool_call() {
    for (store, storage, _folder) in stores().await {
        let runs = Runs::default();
        let tool = send_tool(&runs, false, SendBuilder::at_most_once);
        let turn = execute_send(storage.clone(), tool, true).await;
        assert_eq!(
            recorded(&storage, &turn).await,
            Some(ToolResult::Text("sent to ana".into())),
            "{store}"
        );
        let calls = storage.fetch_tool_calls(&turn).await.unwrap();
        if store != "memory" {
            let call = calls.iter().find(|call| call.id() == "call-1").unwrap();
            assert!(call.results().is_some(), "{store}: the call is finished");
        }
    }
}

#[tokio::test]
async fn an_executed_call_the_executor_does_not_record_still_gets_its_ledger_result() {
    for (store, storage, _folder) in stores().await {
        let runs = Runs::default();
        let tool = send_tool(&runs, false, SendBuilder::at_most_once);
        let turn = execute_send(storage.clone(), tool, false).await;
        assert_eq!(
            recorded(&storage, &turn).await,
            Some(ToolResult::Text("sent to ana".into())),
            "{store}: written when the executor returned"
        );
    }
}

#[tokio::test]
async fn a_tool_call_written_with_its_result_that_is_not_stored_is_not_found_and_the_result_kept() {
    for (store, storage, _folder) in stores().await {
        let ctx = StorageContext::new("c");
        let intent = ToolIntent::new("call-9", "send", "sum", None, EffectKind::AtMostOnce);
        storage
            .record_tool_intent(&ctx, intent.clone())
            .await
            .unwrap();
        let call = ToolCall::new("call-9", "send", json!({"to": "ana"}))
            .unwrap()
            .complete("sent");
        let error = storage
            .mutate_tool_call_with_result(&ctx, call, ToolResult::Text("sent".into()))
            .await;
        if store != "memory" {
            assert!(
                matches!(error, Err(StorageError::NotFound { .. })),
                "{store}: {error:?}"
            );
        }
        let record = storage
            .record_tool_intent(&ctx, intent)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            record.result,
            Some(ToolResult::Text("sent".into())),
            "{store}"
        );
    }
}

#[tokio::test]
async fn deleting_a_session_deletes_its_ledger_rows_and_approval_requests_on_sqlite_and_postgres() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("agent.db");
    let sqlite = SqliteStorage::open(&path).await.unwrap();
    let sessions = SqliteSessionStore::open(&path).await.unwrap();
    let mut stores = vec![(
        "sqlite",
        SharedStorage::new(sqlite),
        SharedSessionStore::new(sessions),
    )];
    if let Some(options) = fresh_options("tool_ledger_session") {
        let postgres = PostgresStorage::connect_with(options).await.unwrap();
        let sessions = SharedSessionStore::new(postgres.session_store().await.unwrap());
        stores.push(("postgres", SharedStorage::new(postgres), sessions));
    }
    for (store, storage, sessions) in stores {
        let key = SessionKey::new("app", "ada", "s-1");
        let ctx = |session: &str| {
            StorageContext::new(session.to_owned())
                .with_app_name("app")
                .with_user_id("ada")
                .with_turn_id(adk::storage::TurnId::from("turn-1"))
        };
        let intent = ToolIntent::new("call-1", "send", "sum", None, EffectKind::AtMostOnce);
        sessions
            .create_session(&key, Default::default())
            .await
            .unwrap();
        let request = ApprovalRequest::new("call-1", "send", json!({}), "Send it?", "turn-1");
        for session in ["s-1", "s-2"] {
            storage
                .record_tool_intent(&ctx(session), intent.clone())
                .await
                .unwrap();
            storage
                .record_approval_request(&ctx(session), request.clone())
                .await
                .unwrap();
        }
        sessions.delete_session(&key).await.unwrap();
        assert_eq!(
            storage.pending_approvals(&ctx("s-1")).await.unwrap(),
            Vec::new(),
            "{store}: the deleted session's approval request is gone"
        );
        assert_eq!(
            storage.pending_approvals(&ctx("s-2")).await.unwrap(),
            vec![request.clone()],
            "{store}: another session's approval request stays"
        );
        assert_eq!(
            storage
                .record_tool_intent(&ctx("s-1"), intent.clone())
                .await
                .unwrap(),
            None,
            "{store}: the deleted session's record is gone"
        );
        assert!(
            storage
                .record_tool_intent(&ctx("s-2"), intent)
                .await
                .unwrap()
                .is_some(),
            "{store}: another session's record stays"
        );
    }
}

#[tokio::test]
async fn the_default_ledger_keeps_nothing() {
    let storage = SharedStorage::new(Bare::default());
    let ctx = StorageContext::new("c");
    let intent = ToolIntent::new("call-1", "send", "sum", None, EffectKind::AtMostOnce);
    assert_eq!(
        storage
            .record_tool_intent(&ctx, intent.clone())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        storage.record_tool_intent(&ctx, intent).await.unwrap(),
        None
    );
}

adk::storage_adapter! {
    /// Keeps nothing, and says nothing about the ledger.
    #[derive(Clone, Default)]
    struct Bare {}
    impl {
        ..noop
    }
}

#[tokio::test]
async fn a_call_whose_intent_cannot_be_written_fails_and_its_handler_does_not_run() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("agent.db");
    let storage = SqliteStorage::open(&path).await.unwrap();
    // The ledger's table is gone (a damaged file): every intent write fails.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE tool_ledger")
        .unwrap();
    for effect in [
        SendBuilder::at_most_once as fn(SendBuilder) -> SendDeclared,
        |builder: SendBuilder| builder.idempotent_by(|args: &Send| format!("to-{}", args.to)),
    ] {
        let runs = Runs::default();
        let (first, second) = call_twice(
            SharedStorage::new(storage.clone()),
            send_tool(&runs, false, effect),
        )
        .await;
        for outcome in [first, second] {
            let error = outcome.unwrap_err();
            assert_eq!(error.code(), ErrorCode::ToolDownstreamError);
            assert!(
                error.to_string().contains("recording a tool intent"),
                "{error}"
            );
        }
        assert!(
            runs.lock().unwrap().is_empty(),
            "the handler ran without its intent written"
        );
    }
}

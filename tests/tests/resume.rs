//! `runner.resume` continues a turn a crash interrupted, from what the crash left stored: the
//! question, the model's answer with its tool calls, the results stored so far, and the tool
//! ledger. A crash is simulated by dropping the turn's future while its tool runs (the ledger's
//! intent is written, no result is), or by writing what a crash leaves through the storage
//! contract. Dangling calls are settled by the ledger's rules before the model is called, and
//! the model never reads a call without its result.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{Executor, ScriptedModel, executor_fn};
use adk::events::ErrorCode;
use adk::pipeline::BoxError;
use adk::postgres::PostgresStorage;
use adk::primitives::{Message, Tool, ToolCall, ToolCallResults};
use adk::runner::{ResumeError, Resumption};
use adk::sqlite::SqliteStorage;
use adk::storage::ledger::ToolResult;
use adk::storage::{NoopStorage, SharedStorage, StorageContext, StorageError};
use adk::transcript::Transcript;
use adk_integration_tests::postgres_database::fresh_options;
use serde_json::Value;

const QUESTION: &str = "Weather in Oslo?";

fn raw() -> RawTurnContext {
    RawTurnContext::new("c-1", "Be brief.")
}

fn storage_context() -> StorageContext {
    StorageContext::new("c-1")
}

adk::storage_adapter! {
    /// Messages and tool calls in memory, and no ledger: the storage contract's default. With
    /// `results_refused`, every result written to a stored call fails (the disk is full).
    #[derive(Clone, Default)]
    struct TranscriptOnly {
        messages: Arc<Mutex<Vec<Message>>>,
        calls: Arc<Mutex<Vec<ToolCall>>>,
        results_refused: bool,
    }

    impl {
        fetch_messages: |_ctx| async move { Ok(self.messages.lock().unwrap().clone()) },
        store_message: |_ctx, message| async move {
            self.messages.lock().unwrap().push(message);
            Ok(())
        },
        fetch_tool_calls: |_ctx| async move { Ok(self.calls.lock().unwrap().clone()) },
        store_tool_call: |_ctx, call| async move {
            self.calls.lock().unwrap().push(call);
            Ok(())
        },
        mutate_tool_call: |_ctx, call| async move {
            if self.results_refused {
                return Err(StorageError::backend("the disk is full"));
            }
            let mut calls = self.calls.lock().unwrap();
            match calls.iter_mut().find(|stored| stored.id() == call.id()) {
                Some(stored) => {
                    *stored = call;
                    Ok(())
                }
                None => Err(StorageError::backend("no such call")),
            }
        },
        ..noop
    }
}

/// The stores that keep a transcript and a ledger.
async fn ledger_stores() -> Vec<(&'static str, SharedStorage, Option<tempfile::TempDir>)> {
    let folder = tempfile::tempdir().unwrap();
    let sqlite = SqliteStorage::open(folder.path().join("agent.db"))
        .await
        .unwrap();
    let mut stores = vec![("sqlite", SharedStorage::new(sqlite), Some(folder))];
    // Without ADK_TEST_POSTGRES_URL, `fresh_options` says loudly that the PostgreSQL half did
    // not run (and fails when ADK_REQUIRE_POSTGRES is set).
    if let Some(options) = fresh_options("resume") {
        let postgres = PostgresStorage::connect_with(options).await.unwrap();
        stores.push(("postgres", SharedStorage::new(postgres), None));
    }
    stores
}

/// A weather tool whose handler never returns: the process "dies" while it runs.
fn hanging_weather(started: Arc<tokio::sync::Notify>, effect: Effect) -> Tool {
    let builder = Tool::builder("weather").description("Forecasts.");
    effect(builder)
        .handler(move |_args: Value, _invocation| {
            let started = Arc::clone(&started);
            async move {
                started.notify_one();
                std::future::pending::<()>().await;
                Ok("never".to_owned())
            }
        })
        .build()
        .unwrap()
}

type Effect =
    fn(
        adk::primitives::ToolBuilder,
    )
        -> adk::primitives::ToolBuilder<(), adk::primitives::Untyped, adk::primitives::Declared>;

/// A weather tool that counts its runs and records the idempotency key it was handed.
fn counting_weather(runs: &Runs, effect: Effect) -> Tool {
    let runs = Arc::clone(runs);
    let builder = Tool::builder("weather").description("Forecasts.");
    effect(builder)
        .handler(
            move |_args: Value, invocation: adk::primitives::ToolInvocation| {
                let runs = Arc::clone(&runs);
                async move {
                    runs.lock()
                        .unwrap()
                        .push(invocation.idempotency_key().map(str::to_owned));
                    Ok("4°C".to_owned())
                }
            },
        )
        .build()
        .unwrap()
}

type Runs = Arc<Mutex<Vec<Option<String>>>>;

/// Runs a turn asking for the weather, whose tool hangs, and drops it while the tool runs: what
/// a process killed mid-call leaves behind.
async fn crash_mid_tool(storage: &SharedStorage, effect: Effect) {
    let started = Arc::new(tokio::sync::Notify::new());
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .tool(hanging_weather(Arc::clone(&started), effect))
        .executor(ScriptedModel::new())
        .build();
    let turn = runner.run(raw().user_message(Message::user("q-1", QUESTION).unwrap()));
    tokio::select! {
        _ = turn => panic!("the turn ended although its tool never returns"),
        () = started.notified() => {}
    }
}

/// ScriptedModel, checking before every model call that each call it would read has its result.
struct Checked {
    model: ScriptedModel,
    calls: Arc<AtomicUsize>,
    unpaired: Arc<Mutex<Vec<String>>>,
}

impl Executor for Checked {
    fn execute<'a>(
        &'a self,
        ctx: &'a mut DispatchContext,
    ) -> adk::pipeline::BoxFuture<'a, Result<(), BoxError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let transcript = Transcript::of_dispatch(ctx);
        for answer in transcript.answers() {
            for call in answer.unanswered_calls() {
                self.unpaired.lock().unwrap().push(call.id().to_owned());
            }
        }
        self.model.execute(ctx)
    }
}

/// What a resumed turn runs with: a runner over the storage whose weather tool counts its runs
/// (with the key each was handed) and whose model counts its calls and notes every call it read
/// without a result.
struct Resumer {
    runner: TurnRunner,
    runs: Runs,
    model_calls: Arc<AtomicUsize>,
    unpaired: Arc<Mutex<Vec<String>>>,
}

fn resumer(storage: &SharedStorage, effect: Effect) -> Resumer {
    let runs = Runs::default();
    let model_calls = Arc::new(AtomicUsize::new(0));
    let unpaired = Arc::new(Mutex::new(Vec::new()));
    let model = Checked {
        model: ScriptedModel::new(),
        calls: Arc::clone(&model_calls),
        unpaired: Arc::clone(&unpaired),
    };
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .tool(counting_weather(&runs, effect))
        .executor(model)
        .build();
    Resumer {
        runner,
        runs,
        model_calls,
        unpaired,
    }
}

fn reply_text(resumption: Resumption) -> String {
    let outcome = resumption
        .into_outcome()
        .expect("there was a turn to resume")
        .into_result()
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    outcome.reply().unwrap().content().unwrap().render()
}

async fn stored_call(storage: &SharedStorage) -> ToolCall {
    let calls = storage.fetch_tool_calls(&storage_context()).await.unwrap();
    assert_eq!(calls.len(), 1, "one call stored, once");
    calls.into_iter().next().unwrap()
}

fn result_text(call: &ToolCall) -> String {
    match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        other => panic!("a text result, not {other:?}"),
    }
}

#[tokio::test]
async fn an_idempotent_call_interrupted_mid_tool_runs_again_under_its_key_and_the_turn_ends() {
    for (store, storage, _folder) in ledger_stores().await {
        crash_mid_tool(&storage, |tool| tool.idempotent_per_call()).await;
        let Resumer {
            runner,
            runs,
            model_calls,
            unpaired,
        } = resumer(&storage, |tool| tool.idempotent_per_call());
        let interrupted = runner.interrupted(&raw()).await.unwrap().unwrap();
        assert!(interrupted.turn_id().is_some(), "{store}");
        assert_eq!(interrupted.unanswered_calls().count(), 1, "{store}");

        let reply = reply_text(runner.resume(raw()).await.unwrap());
        assert_eq!(reply, "The weather tool says: 4°C.", "{store}");
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.len(), 1, "{store}: run again once");
        assert!(runs[0].is_some(), "{store}: under the recorded key");
        assert_eq!(
            model_calls.load(Ordering::SeqCst),
            1,
            "{store}: only the reply"
        );
        assert!(unpaired.lock().unwrap().is_empty(), "{store}");
        assert_eq!(result_text(&stored_call(&storage).await), "4°C", "{store}");
        // The turn ended: a second resume finds nothing.
        assert!(
            matches!(
                runner.resume(raw()).await.unwrap(),
                Resumption::NothingToResume
            ),
            "{store}"
        );
    }
}

#[tokio::test]
async fn an_at_most_once_call_interrupted_mid_tool_is_not_run_again_and_the_model_reads_outcome_unknown()
 {
    for (store, storage, _folder) in ledger_stores().await {
        crash_mid_tool(&storage, |tool| tool.at_most_once()).await;
        let Resumer {
            runner,
            runs,
            model_calls,
            unpaired,
        } = resumer(&storage, |tool| tool.at_most_once());
        let reply = reply_text(runner.resume(raw()).await.unwrap());
        assert!(runs.lock().unwrap().is_empty(), "{store}: not run again");
        assert!(
            reply.starts_with("The weather tool failed:") && reply.contains("unknown"),
            "{store}: {reply}"
        );
        let call = stored_call(&storage).await;
        assert!(call.is_error(), "{store}");
        assert!(result_text(&call).contains("is unknown"), "{store}");
        assert_eq!(model_calls.load(Ordering::SeqCst), 1, "{store}");
        assert!(unpaired.lock().unwrap().is_empty(), "{store}");
    }
}

#[tokio::test]
async fn a_call_whose_result_the_ledger_recorded_is_not_run_again_and_its_result_is_used() {
    for (store, storage, _folder) in ledger_stores().await {
        crash_mid_tool(&storage, |tool| tool.at_most_once()).await;
        let Resumer {
            runner,
            runs,
            unpaired,
            ..
        } = resumer(&storage, |tool| tool.at_most_once());
        // What a crash after the ledger's result write, before the call's own record, leaves.
        let interrupted = runner.interrupted(&raw()).await.unwrap().unwrap();
        let turn = storage_context().with_turn_id(interrupted.turn_id().unwrap().clone());
        let call_id = interrupted
            .unanswered_calls()
            .next()
            .unwrap()
            .id()
            .to_owned();
        storage
            .record_tool_result(&turn, call_id, ToolResult::Text("-3°C, recorded".into()))
            .await
            .unwrap();

        let reply = reply_text(runner.resume(raw()).await.unwrap());
        assert_eq!(reply, "The weather tool says: -3°C, recorded.", "{store}");
        assert!(runs.lock().unwrap().is_empty(), "{store}: not run again");
        assert!(unpaired.lock().unwrap().is_empty(), "{store}");
    }
}

#[tokio::test]
async fn without_a_ledger_a_dangling_call_runs_again_at_least_once() {
    let storage = SharedStorage::new(TranscriptOnly::default());
    crash_mid_tool(&storage, |tool| tool.at_most_once()).await;
    let Resumer {
        runner,
        runs,
        unpaired,
        ..
    } = resumer(&storage, |tool| tool.at_most_once());
    let reply = reply_text(runner.resume(raw()).await.unwrap());
    assert_eq!(reply, "The weather tool says: 4°C.");
    assert_eq!(runs.lock().unwrap().len(), 1);
    assert!(unpaired.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_turn_interrupted_before_the_model_answered_runs_from_its_stored_question() {
    let mut stores = ledger_stores().await;
    stores.push((
        "memory",
        SharedStorage::new(TranscriptOnly::default()),
        None,
    ));
    for (store, storage, _folder) in stores {
        // A crash after the question was stored, before the model answered.
        storage
            .store_message(&storage_context(), Message::user("q-1", QUESTION).unwrap())
            .await
            .unwrap();
        let Resumer {
            runner,
            model_calls,
            ..
        } = resumer(&storage, |tool| tool.at_most_once());
        let interrupted = runner.interrupted(&raw()).await.unwrap().unwrap();
        assert!(interrupted.turn_id().is_none(), "{store}");
        assert_eq!(interrupted.user_message().unwrap().id(), "q-1", "{store}");

        let reply = reply_text(runner.resume(raw()).await.unwrap());
        assert_eq!(reply, "The weather tool says: 4°C.", "{store}");
        assert_eq!(
            model_calls.load(Ordering::SeqCst),
            2,
            "{store}: the call, the reply"
        );
        let messages = storage.fetch_messages(&storage_context()).await.unwrap();
        let ids: Vec<&str> = messages.iter().map(Message::id).collect();
        assert_eq!(
            ids.len(),
            2,
            "{store}: the question stored once, and the reply: {ids:?}"
        );
    }
}

#[tokio::test]
async fn a_conversation_whose_last_turn_ended_has_nothing_to_resume() {
    let mut stores = ledger_stores().await;
    stores.push((
        "memory",
        SharedStorage::new(TranscriptOnly::default()),
        None,
    ));
    stores.push(("noop", SharedStorage::new(NoopStorage::new()), None));
    for (store, storage, _folder) in stores {
        let runner = TurnRunner::builder()
            .storage(storage.clone())
            .executor(ScriptedModel::new())
            .build();
        assert!(
            runner.interrupted(&raw()).await.unwrap().is_none(),
            "{store}: empty"
        );
        let outcome = runner.run(raw().user_message("Hello!")).await.unwrap();
        assert!(outcome.is_completed(), "{store}");
        // NoopStorage keeps no transcript: nothing it could resume either.
        assert!(
            matches!(
                runner.resume(raw()).await.unwrap(),
                Resumption::NothingToResume
            ),
            "{store}"
        );
    }
}

#[tokio::test]
async fn resume_refuses_a_new_user_message() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let refused = runner
        .resume(raw().user_message("Again"))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ResumeError::UserMessageGiven),
        "{refused}"
    );
}

#[tokio::test]
async fn a_settled_call_whose_result_cannot_be_stored_fails_the_resume_before_the_model_is_called()
{
    // The storage is down when the resumed turn stores what its calls returned.
    let storage = SharedStorage::new(TranscriptOnly {
        results_refused: true,
        ..TranscriptOnly::default()
    });
    crash_mid_tool(&storage, |tool| tool.idempotent_per_call()).await;
    let Resumer {
        runner,
        runs,
        model_calls,
        ..
    } = resumer(&storage, |tool| tool.idempotent_per_call());
    let outcome = runner
        .resume(raw())
        .await
        .unwrap()
        .into_outcome()
        .expect("there was a turn to resume");
    let error = outcome.error().expect("the resumed turn failed");
    assert_eq!(error.code(), ErrorCode::StorageFailed, "{error}");
    assert_eq!(error.code().as_str(), "E_STORAGE_ERROR");
    assert_eq!(runs.lock().unwrap().len(), 1, "the call was settled");
    assert_eq!(
        model_calls.load(Ordering::SeqCst),
        0,
        "the model read a call without its stored result"
    );
}

#[tokio::test]
async fn a_last_answer_whose_id_names_no_turn_is_refused_and_nothing_runs() {
    let storage = SharedStorage::new(TranscriptOnly::default());
    let ctx = storage_context();
    storage
        .store_message(&ctx, Message::user("q-1", QUESTION).unwrap())
        .await
        .unwrap();
    // A call stored without an answer link: nothing says which turn made it.
    let call = ToolCall::new("call-1", "weather", serde_json::json!({})).unwrap();
    storage.store_tool_call(&ctx, call).await.unwrap();
    let Resumer {
        runner,
        runs,
        model_calls,
        ..
    } = resumer(&storage, |tool| tool.at_most_once());
    assert!(matches!(
        runner.interrupted(&raw()).await,
        Err(ResumeError::UnknownTurn { .. })
    ));
    let refused = runner.resume(raw()).await.unwrap_err();
    assert!(
        matches!(refused, ResumeError::UnknownTurn { .. }),
        "{refused}"
    );
    assert!(runs.lock().unwrap().is_empty(), "the call ran again");
    assert_eq!(model_calls.load(Ordering::SeqCst), 0);
}

//! A turn's user input and its outcome as a specification: the user message handed to
//! `RawTurnContext` is stored before `turn_input` with an id that cannot collide, the model sees
//! it last, a failed turn becomes an `Err` on request, and an aborted dispatch says so.

use adk::context::{AbortReason, InvalidTurnContext};
use adk::dispatch::{Step, executor_fn};
use adk::events::ErrorCode;
use adk::pipeline::from_fn;
use adk::prelude::*;
use adk::storage::StorageError;
use adk_integration_tests::{Log, RecordingStorage};

fn text_of(message: &Message) -> String {
    message
        .content()
        .map(|content| content.render())
        .unwrap_or_default()
}

fn ask(text: &str) -> RawTurnContext {
    RawTurnContext::new("conversation-1", "You are a test.").user_message(text)
}

#[tokio::test]
async fn the_user_message_is_stored_before_turn_input_runs() {
    let storage = RecordingStorage::new();
    let log = Log::new();
    let seen = log.clone();
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .executor(ScriptedModel::new())
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let seen = seen.clone();
            Box::pin(async move {
                let stored = ctx.fetch_messages().await?;
                seen.push(format!("stored before turn_input: {}", stored.len()));
                let own = ctx.user_message().map(text_of).unwrap_or_default();
                seen.push(format!("ctx.user_message: {own}"));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();

    let outcome = runner
        .run(ask("Hello!"))
        .await
        .unwrap()
        .into_result()
        .unwrap();

    assert_eq!(
        log.entries(),
        ["stored before turn_input: 1", "ctx.user_message: Hello!"]
    );
    assert_eq!(text_of(&storage.messages()[0]), "Hello!");
    assert_eq!(
        outcome.reply().map(text_of).as_deref(),
        Some(
            "Hello! I am a scripted model: ask me the time, the weather in a city, or a sum like 2 + 3."
        )
    );
}

#[tokio::test]
async fn user_message_ids_never_collide_even_after_messages_were_deleted() {
    let storage = RecordingStorage::new();
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .executor(ScriptedModel::new())
        .build();
    let mut ids = std::collections::HashSet::new();
    for text in ["one", "two", "three"] {
        let outcome = runner.run(ask(text)).await.unwrap().into_result().unwrap();
        let user = outcome
            .context
            .user_message()
            .expect("the turn's user message");
        assert!(ids.insert(user.id().to_owned()), "{} reused", user.id());
    }
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn a_history_loader_finds_the_user_message_once_and_last() {
    let earlier = [
        Message::user("old-1", "What is 1 + 1?").unwrap(),
        Message::assistant("old-2", "2").unwrap(),
    ];
    let storage = RecordingStorage::with_messages(earlier);
    let runner = TurnRunner::builder()
        .storage(storage)
        .executor(ScriptedModel::new())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let history = ctx.fetch_messages().await?;
                ctx.messages.extend(history);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();

    let outcome = runner
        .run(ask("And 2 + 2?"))
        .await
        .unwrap()
        .into_result()
        .unwrap();

    let texts: Vec<String> = outcome.context.messages.iter().map(text_of).collect();
    assert_eq!(texts[..3], ["What is 1 + 1?", "2", "And 2 + 2?"]);
    assert_eq!(texts.len(), 4, "{texts:?}");
}

#[tokio::test]
async fn a_message_given_whole_keeps_its_own_id() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .build();
    let raw = RawTurnContext::new("c", "p").user_message(Message::user("mine-7", "hi").unwrap());
    let outcome = runner.run(raw).await.unwrap().into_result().unwrap();
    assert_eq!(outcome.context.messages.first().unwrap().id(), "mine-7");
    assert_eq!(outcome.reply().unwrap().id(), "mine-7-reply");
}

#[tokio::test]
async fn empty_user_text_is_refused_before_anything_runs() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedModel::new())
        .build();
    let refused = runner.run(ask("")).await.unwrap_err();
    assert!(
        matches!(refused, InvalidTurnContext::UserMessage(_)),
        "{refused}"
    );
}

adk::storage_adapter! {
    #[derive(Clone, Default)]
    struct RefusingStore;
    impl {
        store_message: |_ctx, _message| async { Err(StorageError::backend("disk full")) },
        ..noop
    }
}

#[tokio::test]
async fn a_user_message_that_cannot_be_stored_fails_the_turn_before_turn_input() {
    let log = Log::new();
    let runner = TurnRunner::builder()
        .storage(RefusingStore)
        .executor(ScriptedModel::new())
        .turn_input(log.marker("turn_input"))
        .build();
    let outcome = runner.run(ask("Hello!")).await.unwrap();
    assert!(log.entries().is_empty());
    assert_eq!(outcome.dispatch, None);
    let error = outcome.into_result().unwrap_err();
    assert_eq!(error.code(), ErrorCode::StorageFailed);
    assert!(format!("{error:#}").contains("disk full"), "{error:#}");
}

#[tokio::test]
async fn into_result_turns_a_failed_turn_into_its_error_and_keeps_an_abort_ok() {
    let failing = executor_fn(|_ctx: &mut DispatchContext| {
        Box::pin(async { Err::<(), BoxError>("the model is down".into()) })
    });
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(failing)
        .build();
    let error = runner
        .run(ask("hi"))
        .await
        .unwrap()
        .into_result()
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ExecutorError);
    assert!(
        format!("{error:#}").contains("the model is down"),
        "{error:#}"
    );

    let refusing = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.abort("budget spent");
            Ok::<(), BoxError>(())
        })
    });
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(refusing)
        .build();
    let outcome = runner.run(ask("hi")).await.unwrap().into_result().unwrap();
    assert!(
        matches!(&outcome.status, TurnStatus::DispatchAborted(AbortReason::Requested(reason)) if reason == "budget spent"),
        "{:?}",
        outcome.status
    );
    assert!(outcome.reply().is_none());
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The word.
    word: String,
}

fn dictionary() -> Tool {
    Tool::typed::<Lookup>("dictionary")
        .description("Defines a word.")
        .read_only()
        .handler(|args: Lookup, _invocation| async move {
            let known = ["adk"].contains(&args.word.as_str()).then_some(());
            known.ok_or(format!("no entry for {:?}", args.word))?;
            let parsed: u32 = "7".parse()?; // a std error through `?`
            Ok(format!(
                "an agent development kit ({parsed} letters in the entry)"
            ))
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn scripted_steps_call_a_users_typed_tool_then_reply_and_a_failing_handler_is_recorded() {
    let model = ScriptedModel::steps([
        Step::call("dictionary", Lookup { word: "adk".into() }),
        Step::call("dictionary", Lookup { word: "zzz".into() }),
        Step::reply("Done."),
    ]);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(model.clone())
        .tool(dictionary())
        .build();
    let outcome = runner
        .run(ask("Define adk"))
        .await
        .unwrap()
        .into_result()
        .unwrap();

    let calls: Vec<_> = outcome.context.tool_calls.iter().collect();
    assert_eq!(calls.len(), 2);
    assert!(!calls[0].is_error());
    assert!(
        calls[1].is_error(),
        "the handler's Err(String) is a failed call"
    );
    assert_ne!(calls[0].id(), calls[1].id());
    assert_eq!(outcome.reply().map(text_of).as_deref(), Some("Done."));

    // The list is spent: the next turn's dispatch fails and says why.
    let error = runner
        .run(ask("again"))
        .await
        .unwrap()
        .into_result()
        .unwrap_err();
    assert!(
        format!("{error:#}").contains("ran out of steps"),
        "{error:#}"
    );
}

#[tokio::test]
async fn a_scripted_step_with_invalid_arguments_is_a_failed_tool_call_not_a_crash() {
    let model = ScriptedModel::steps([
        Step::call("dictionary", serde_json::json!({ "word": 5 })),
        Step::reply("Sorry."),
    ]);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(model)
        .tool(dictionary())
        .build();
    let outcome = runner
        .run(ask("Define 5"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert!(outcome.context.tool_calls.first().unwrap().is_error());
    assert_eq!(outcome.reply().map(text_of).as_deref(), Some("Sorry."));
}

#[tokio::test]
async fn a_scripted_function_chooses_each_step_from_the_dispatch() {
    let model = ScriptedModel::from_fn(|ctx: &DispatchContext| {
        if ctx.tool_calls.is_empty() {
            Step::call("dictionary", Lookup { word: "adk".into() })
        } else {
            Step::reply(format!("{} call(s) made", ctx.tool_calls.len()))
        }
    });
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(model)
        .tool(dictionary())
        .build();
    for _ in 0..2 {
        let outcome = runner
            .run(ask("Define adk"))
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert_eq!(
            outcome.reply().map(text_of).as_deref(),
            Some("1 call(s) made")
        );
    }
}

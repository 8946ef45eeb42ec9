//! Loading history: a fetch window asks for the last N records or those after a point, SQLite
//! serves it from its index, a windowed fetch is exact whatever the adapter does, and a dispatch
//! reads the turn's loaded history without its own changes leaking back into the turn.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{Collection, DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Message, Role, StandingInstruction, ToolRegistry};
use adk::sqlite::SqliteStorage;
use adk::storage::{FetchWindow, SharedStorage, StorageAdapter, StorageContext};
use adk_integration_tests::RecordingStorage;

fn message(id: &str) -> Message {
    Message::user(id, format!("text of {id}")).unwrap()
}

fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(Message::id).collect()
}

async fn sqlite_with_ten_messages() -> (SqliteStorage, StorageContext) {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let ctx = StorageContext::new("conversation-1");
    for n in 0..10 {
        storage
            .store_message(&ctx, message(&format!("m{n}")))
            .await
            .unwrap();
    }
    // Another conversation's records never enter a window.
    let other = StorageContext::new("conversation-2");
    storage.store_message(&other, message("x9")).await.unwrap();
    (storage, ctx)
}

#[tokio::test]
async fn sqlite_serves_the_last_n_messages_oldest_first() {
    let (storage, ctx) = sqlite_with_ten_messages().await;
    // A mutate keeps the record's place, so it does not move into or out of the window.
    storage
        .mutate_message(&ctx, Message::user("m8", "edited").unwrap())
        .await
        .unwrap();
    let window = ctx.clone().with_fetch_window(FetchWindow::Last(3));
    let fetched = storage.fetch_messages(&window).await.unwrap();
    assert_eq!(ids(&fetched), ["m7", "m8", "m9"]);
    assert_eq!(
        fetched[1].content().unwrap().render(),
        "edited",
        "the window returns the current record"
    );
    let all = ctx.clone().with_fetch_window(FetchWindow::Last(50));
    assert_eq!(storage.fetch_messages(&all).await.unwrap().len(), 10);
    let none = ctx.clone().with_fetch_window(FetchWindow::Last(0));
    assert!(storage.fetch_messages(&none).await.unwrap().is_empty());
}

#[tokio::test]
async fn sqlite_serves_the_messages_after_a_point_and_everything_for_an_unknown_point() {
    let (storage, ctx) = sqlite_with_ten_messages().await;
    let after = ctx
        .clone()
        .with_fetch_window(FetchWindow::After("m6".into()));
    assert_eq!(
        ids(&storage.fetch_messages(&after).await.unwrap()),
        ["m7", "m8", "m9"]
    );
    let unknown = ctx
        .clone()
        .with_fetch_window(FetchWindow::After("x9".into()));
    assert_eq!(storage.fetch_messages(&unknown).await.unwrap().len(), 10);
}

#[tokio::test]
async fn sqlite_fetches_standing_instructions_whole_under_a_window() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let ctx = StorageContext::new("conversation-1");
    for text in ["one", "two", "three"] {
        storage
            .store_standing_instruction(&ctx, StandingInstruction::from(text))
            .await
            .unwrap();
    }
    let window = ctx.with_fetch_window(FetchWindow::Last(1));
    assert_eq!(
        storage
            .refresh_standing_instructions(&window)
            .await
            .unwrap()
            .len(),
        3
    );
}

#[tokio::test]
async fn a_windowed_fetch_is_trimmed_to_the_window_when_the_adapter_ignores_it() {
    let storage = RecordingStorage::with_messages((0..6).map(|n| message(&format!("m{n}"))));
    let ctx = TurnContext::new(
        RawTurnContext::new("conversation-1", "You are a test."),
        SharedStorage::new(storage.clone()),
        ToolRegistry::new(),
    )
    .unwrap();
    let last = ctx
        .fetch_messages_within(FetchWindow::Last(2))
        .await
        .unwrap();
    assert_eq!(ids(&last), ["m4", "m5"]);
    let after = ctx
        .fetch_messages_within(FetchWindow::After("m3".into()))
        .await
        .unwrap();
    assert_eq!(ids(&after), ["m4", "m5"]);
    assert_eq!(
        ctx.fetch_messages_within(FetchWindow::All)
            .await
            .unwrap()
            .len(),
        6
    );
}

#[tokio::test]
async fn a_dispatch_sees_the_loaded_history_and_its_direct_edits_stay_its_own() {
    let storage = RecordingStorage::with_messages((0..4).map(|n| message(&format!("m{n}"))));
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let history = ctx.fetch_messages_within(FetchWindow::Last(3)).await?;
                ctx.messages.extend(history);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                // Prompt packing: the model sees less, the turn keeps its history.
                ctx.messages.remove("m1");
                ctx.messages
                    .replace(Message::user("m2", "shortened").unwrap());
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let seen: Vec<&str> = ctx.messages.iter().map(Message::id).collect();
                assert_eq!(seen, ["m2", "m3"]);
                ctx.store_message(Message::assistant("reply", "hello").unwrap())
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "You are a test."))
        .await
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let turn: Vec<&str> = outcome.context.messages.iter().map(Message::id).collect();
    assert_eq!(turn, ["m1", "m2", "m3", "reply"]);
    assert_eq!(
        outcome
            .context
            .messages
            .get("m2")
            .unwrap()
            .content()
            .unwrap()
            .render(),
        "text of m2"
    );
}

/// Runs a turn whose executor stores `answer` then runs `after_store` on the dispatch, and
/// returns the ids and texts of the turn's messages.
async fn turn_messages_after(after_store: fn(&mut DispatchContext)) -> Vec<String> {
    let runner = TurnRunner::builder()
        .storage(RecordingStorage::new())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_message(Message::assistant("answer", "stored").unwrap())
                    .await?;
                after_store(ctx);
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "You are a test.").user_message("hi"))
        .await
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    outcome
        .context
        .messages
        .iter()
        .map(|message| {
            let text = message.content().map(|text| text.render());
            // The user message's id is minted afresh each turn.
            let id = match message.role() {
                Role::User if text.as_deref() == Some("hi") => "user",
                _ => message.id(),
            };
            format!("{id}={}", text.unwrap_or_default())
        })
        .collect()
}

#[tokio::test]
async fn the_turn_gets_the_stored_message_and_not_the_dispatchs_direct_edits_made_after_it() {
    let untouched = turn_messages_after(|_| {}).await;
    assert_eq!(untouched, ["user=hi", "answer=stored"]);

    let edited = turn_messages_after(|ctx| {
        ctx.messages
            .replace(Message::assistant("answer", "edited").unwrap());
        ctx.messages
            .add(Message::user("extra", "not stored").unwrap());
    })
    .await;
    assert_eq!(edited, untouched);

    let replaced = turn_messages_after(|ctx| {
        let mut copy = ctx.messages.clone();
        copy.remove("answer");
        ctx.messages = copy;
    })
    .await;
    assert_eq!(replaced, untouched);

    let emptied = turn_messages_after(|ctx| ctx.messages.clear()).await;
    assert_eq!(emptied, untouched);
}

/// What a turn holds after a dispatch whose `dispatch_input` took the whole `messages` collection
/// out of the dispatch context and kept it beyond the dispatch (an archive the test still holds),
/// and whose executor stored an answer then acked (`ack`) or nacked; with the ids the archive got.
async fn turn_after_a_dispatch_kept_its_messages_elsewhere(
    ack: bool,
) -> (Vec<String>, Vec<String>) {
    let archive: Arc<Mutex<Vec<Collection<Message>>>> = Arc::default();
    let kept = Arc::clone(&archive);
    let runner = TurnRunner::builder()
        .storage(RecordingStorage::new())
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let archive = Arc::clone(&kept);
            Box::pin(async move {
                // Hands the transcript on whole, leaving the model an empty one.
                let transcript = std::mem::take(&mut ctx.messages);
                archive.lock().unwrap().push(transcript);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                assert!(ctx.messages.is_empty());
                ctx.store_message(Message::assistant("answer", "stored").unwrap())
                    .await?;
                if ack {
                    ctx.ack()?;
                } else {
                    ctx.nack("refused")?;
                }
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation-1", "You are a test.").user_message("hi"))
        .await
        .unwrap();
    assert_eq!(outcome.is_completed(), ack, "{:?}", outcome.status);
    let described = |messages: &Collection<Message>| -> Vec<String> {
        messages
            .iter()
            .map(|message| match message.role() {
                // The user message's id is minted afresh each turn.
                Role::User => "user".to_owned(),
                _ => message.id().to_owned(),
            })
            .collect()
    };
    // Still held: the records it took never came back to the dispatch.
    let archived = archive.lock().unwrap();
    assert_eq!(archived.len(), 1);
    (
        described(&outcome.context.messages),
        described(&archived[0]),
    )
}

/// The dispatch's collections are public fields, so a middleware may take one out whole and keep
/// it beyond the dispatch. The turn's records do not live only in that field (the dispatch shares
/// them, it does not take them over): the turn keeps them whatever becomes of the field, and gets
/// the stored answer on ack only.
#[tokio::test]
async fn the_turn_keeps_its_records_when_a_dispatch_middleware_takes_the_collection_away() {
    let (turn, archived) = turn_after_a_dispatch_kept_its_messages_elsewhere(true).await;
    assert_eq!(turn, ["user", "answer"]);
    assert_eq!(archived, ["user"]);

    let (turn, archived) = turn_after_a_dispatch_kept_its_messages_elsewhere(false).await;
    assert_eq!(turn, ["user"]);
    assert_eq!(archived, ["user"]);
}

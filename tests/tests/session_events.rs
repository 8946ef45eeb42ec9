//! Session events as a specification: a completed turn appends the user's message, each tool
//! call and its result and the model's answer, with the turn's state delta on the last, in the
//! same commit as the state; a failed turn appends nothing; a window reads the recent ones.

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, Next, from_fn};
use adk::primitives::{Message, ToolCall};
use adk::state::{
    EventContent, EventPart, GetSessionConfig, InMemorySessionStore, SessionKey, SessionStore,
    StateKey,
};
use adk::storage::NoopStorage;
use serde_json::json;

const VISITS: StateKey<u32> = adk::state_key!("visits" => u32);
const CITY: StateKey<String> = adk::state_key!("user:city" => String);

/// A runner whose model calls `weather` once, then answers; `turn_input` counts visits.
fn weather_runner(store: impl SessionStore) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store)
        .turn_input(from_fn(
            |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
                Box::pin(async move {
                    let visits = ctx.state().get(VISITS)?.unwrap_or(0);
                    ctx.state_mut().set(VISITS, visits + 1)?;
                    ctx.state_mut().set(CITY, "Paris".to_owned())?;
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                if ctx.iteration() == 0 {
                    let id = format!("call-{}", ctx.turn_id());
                    let call = ToolCall::new(id, "weather", json!({"city": "Paris"}))?;
                    ctx.store_tool_call(call.complete("sunny, 21")).await?;
                    return Ok(());
                }
                let id = format!("answer-{}", ctx.turn_id());
                ctx.store_message(Message::assistant(id, "Sunny, 21 °C in Paris.")?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

fn raw(session: &str, question: &str) -> RawTurnContext {
    RawTurnContext::new(session, "You are a weather bot.")
        .app_name("weather")
        .user_id("ada")
        .user_message(question)
}

/// Runs two turns and checks the events every store must hold afterwards.
async fn two_turns_append_their_events(store: impl SessionStore + Clone) {
    let runner = weather_runner(store.clone());
    for question in ["Weather in Paris?", "And tomorrow?"] {
        let outcome = runner.run(raw("s-1", question)).await.expect("valid input");
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    let key = SessionKey::new("weather", "ada", "s-1");
    let session = store
        .get_session_with(&key, GetSessionConfig::default())
        .await
        .expect("reads")
        .expect("the session exists");
    let summary: Vec<(String, String, String)> = session
        .events
        .iter()
        .map(|event| {
            let content = event
                .content
                .as_ref()
                .expect("every turn event has content");
            let part = match &content.parts[..] {
                [EventPart::Text(text)] => format!("text {text}"),
                [EventPart::FunctionCall { name, args, .. }] => format!("call {name} {args:?}"),
                [EventPart::FunctionResponse { name, response, .. }] => {
                    format!("result {name} {response:?}")
                }
                other => format!("{other:?}"),
            };
            (event.author.clone(), content.role.clone(), part)
        })
        .collect();
    let turn = |question: &str| {
        vec![
            (
                "user".to_owned(),
                "user".to_owned(),
                format!("text {question}"),
            ),
            (
                "weather".to_owned(),
                "model".to_owned(),
                r#"call weather {"city": String("Paris")}"#.to_owned(),
            ),
            (
                "weather".to_owned(),
                "user".to_owned(),
                r#"result weather {"result": String("sunny, 21")}"#.to_owned(),
            ),
            (
                "weather".to_owned(),
                "model".to_owned(),
                "text Sunny, 21 °C in Paris.".to_owned(),
            ),
        ]
    };
    let mut expected = turn("Weather in Paris?");
    expected.extend(turn("And tomorrow?"));
    assert_eq!(summary, expected);
    // One invocation id per turn; the delta rides on each turn's last event only.
    let invocations: Vec<&str> = session
        .events
        .iter()
        .map(|event| event.invocation_id.as_str())
        .collect();
    assert_eq!(invocations[0], invocations[3]);
    assert_ne!(invocations[3], invocations[4]);
    let deltas: Vec<_> = session
        .events
        .iter()
        .map(|event| event.state_delta.clone())
        .collect();
    assert_eq!(
        deltas[3],
        *json!({"visits": 1, "user:city": "Paris"})
            .as_object()
            .unwrap()
    );
    // The second turn wrote the city again: a write is in the delta even when unchanged.
    assert_eq!(
        deltas[7],
        *json!({"visits": 2, "user:city": "Paris"})
            .as_object()
            .unwrap()
    );
    assert!(
        deltas
            .iter()
            .enumerate()
            .all(|(index, delta)| index == 3 || index == 7 || delta.is_empty())
    );
    assert!(
        session
            .events
            .windows(2)
            .all(|pair| pair[0].timestamp < pair[1].timestamp)
    );
    // The two most recent: the second turn's result and answer.
    let recent = store
        .get_session_with(&key, GetSessionConfig::recent(2))
        .await
        .expect("reads")
        .expect("the session exists");
    assert_eq!(recent.events, session.events[6..]);
    let since = store
        .get_session_with(&key, GetSessionConfig::after(session.events[4].timestamp))
        .await
        .expect("reads")
        .expect("the session exists");
    assert_eq!(since.events, session.events[4..]);
}

#[tokio::test]
async fn a_turn_appends_its_events_to_the_in_memory_store() {
    two_turns_append_their_events(InMemorySessionStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_appends_its_events_to_the_sqlite_store() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let store = adk::sqlite::SqliteSessionStore::open(folder.path().join("sessions.db"))
        .await
        .expect("opens");
    two_turns_append_their_events(store).await;
}

#[tokio::test]
async fn a_turn_that_fails_appends_no_events() {
    let store = InMemorySessionStore::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_message(Message::assistant("half", "I was about to")?)
                    .await?;
                Err::<(), BoxError>("the model failed".into())
            })
        }))
        .build();
    let outcome = runner
        .run(raw("s-1", "Weather?"))
        .await
        .expect("valid input");
    assert!(!outcome.is_completed());
    let read = store
        .get_session_with(
            &SessionKey::new("weather", "ada", "s-1"),
            GetSessionConfig::default(),
        )
        .await
        .expect("reads");
    assert_eq!(read, None, "a failed turn commits neither state nor events");
}

#[tokio::test]
async fn a_short_cut_reply_is_appended_as_the_turns_answer() {
    let store = InMemorySessionStore::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(from_fn(
            |ctx: &mut TurnContext, _next: Next<'_, TurnContext>| {
                Box::pin(async move {
                    ctx.state_mut().set(VISITS, 1)?;
                    ctx.complete_with("From the cache: sunny.").await?;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async move { Err::<(), BoxError>("the executor must not run".into()) })
        }))
        .build();
    let outcome = runner
        .run(raw("s-1", "Weather?"))
        .await
        .expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let session = store
        .get_session_with(
            &SessionKey::new("weather", "ada", "s-1"),
            GetSessionConfig::default(),
        )
        .await
        .expect("reads")
        .expect("the session exists");
    let texts: Vec<(String, Option<EventContent>)> = session
        .events
        .iter()
        .map(|event| (event.author.clone(), event.content.clone()))
        .collect();
    assert_eq!(
        texts,
        vec![
            ("user".to_owned(), Some(EventContent::user_text("Weather?"))),
            (
                "weather".to_owned(),
                Some(EventContent::model_text("From the cache: sunny."))
            ),
        ]
    );
    assert_eq!(
        session.events[1].state_delta,
        *json!({"visits": 1}).as_object().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_appends_its_events_to_the_postgres_store() {
    let Some(options) = adk_integration_tests::postgres_database::fresh_options("session_events")
    else {
        return;
    };
    let store = adk::postgres::PostgresSessionStore::connect_with(options)
        .await
        .expect("connects");
    two_turns_append_their_events(store).await;
}

//! Compaction (`adk::compaction::Compaction`): a scripted session crosses the threshold; the next
//! request holds the summary plus the recent turns, every tool call with its result; the raw
//! records stay in storage; a fork made before the compaction does not see it; the state
//! survives a restart.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::compaction::{Compaction, CompactionState, ExecutorSummarizer, SUMMARY_PREFIX};
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::{ScriptedModel, Step};
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Role, Tool};
use adk::sqlite::{SqliteSessionStore, SqliteStorage};
use adk::state::{Fork, SessionKey};
use adk::storage::{StorageAdapter, StorageContext};
use adk::tokens::{Heuristic, TokenCounter};
use serde::Deserialize;

/// What one request (the dispatch's first iteration) held.
#[derive(Clone, Debug, Default)]
struct Request {
    instructions: Vec<String>,
    messages: Vec<(Role, String)>,
    message_ids: Vec<String>,
    /// Each call's id and whether it has its result.
    calls: Vec<(String, bool)>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

fn weather() -> Tool {
    Tool::typed::<WeatherArgs>("weather")
        .description("Today's weather.")
        .read_only()
        .handler(|args: WeatherArgs, _invocation| async move {
            Ok(format!(
                "{} is rainy today, with a cold wind from the north",
                args.city
            ))
        })
        .build()
        .unwrap()
}

struct Session {
    runner: TurnRunner,
    requests: Arc<Mutex<Vec<Request>>>,
    summaries: Arc<Mutex<Vec<String>>>,
    storage: SqliteStorage,
}

async fn open(dir: &std::path::Path) -> Session {
    open_with(dir, false).await
}

async fn open_with(dir: &std::path::Path, hard_retention: bool) -> Session {
    let storage = SqliteStorage::open(dir.join("conversation.sqlite3"))
        .await
        .unwrap();
    let sessions = SqliteSessionStore::open(dir.join("sessions.sqlite3"))
        .await
        .unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let summaries = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&requests);
    let record = from_fn(move |ctx: &mut DispatchContext, next| {
        if ctx.iteration() == 0 {
            seen.lock().unwrap().push(Request {
                instructions: ctx
                    .standing_instructions
                    .iter()
                    .map(|i| i.render())
                    .collect(),
                messages: ctx
                    .messages
                    .iter()
                    .map(|m| {
                        (
                            m.role(),
                            m.content().map(|c| c.render()).unwrap_or_default(),
                        )
                    })
                    .collect(),
                message_ids: ctx.messages.iter().map(|m| m.id().to_owned()).collect(),
                calls: ctx
                    .tool_calls
                    .iter()
                    .map(|c| (c.id().to_owned(), c.is_complete()))
                    .collect(),
            });
        }
        Box::pin(async move {
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    });
    // The summariser: a scripted model that says how much it was given.
    let asked = Arc::clone(&summaries);
    let summarizer = ScriptedModel::from_fn(move |ctx| {
        let request = ctx
            .messages
            .last()
            .and_then(|m| m.content())
            .map(|c| c.render())
            .unwrap_or_default();
        asked.lock().unwrap().push(request.clone());
        let lines = request
            .lines()
            .filter(|line| line.starts_with("User: "))
            .count();
        Step::reply(format!(
            "The user asked {lines} questions about the weather."
        ))
    });
    let compaction = Compaction::new(
        ExecutorSummarizer::new(summarizer),
        TokenCounter::new(Heuristic),
    )
    .threshold(260)
    .keep_recent(150);
    let compaction = if hard_retention {
        compaction.with_hard_retention()
    } else {
        compaction
    };
    let runner = TurnRunner::builder()
        .shared_storage(adk::storage::SharedStorage::new(storage.clone()))
        .session_store(sessions)
        .executor(ScriptedModel::new())
        .tool(weather())
        .turn_input(compaction)
        .dispatch_input(record)
        .build();
    Session {
        runner,
        requests,
        summaries,
        storage,
    }
}

fn ask(thread: &str, id: &str, city: &str) -> RawTurnContext {
    RawTurnContext::new("trip", "You help.")
        .thread_id(thread)
        .user_message(
            adk::primitives::Message::user(id, format!("What is the weather in {city}?")).unwrap(),
        )
}

fn last(requests: &Arc<Mutex<Vec<Request>>>) -> Request {
    requests.lock().unwrap().last().cloned().unwrap()
}

fn state(outcome: &adk::TurnOutcome) -> CompactionState {
    outcome
        .context
        .middleware_state::<CompactionState>()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_session_past_the_threshold_loads_the_summary_and_recent_turns_and_forks_and_restarts_keep_theirs()
 {
    let dir = tempfile::tempdir().unwrap();
    let session = open(dir.path()).await;
    let key = SessionKey::new("default", "default", "trip");
    let cities = ["Oslo", "Bergen", "Tromso", "Bodo", "Alta", "Molde"];

    // Turn by turn until the threshold is crossed; each turn is a tool call and its answer.
    let mut compacted_at = None;
    for (n, city) in cities.iter().enumerate() {
        if n == 2 {
            // A fork of the conversation as it is before any compaction.
            session
                .runner
                .fork(Fork::new(key.clone(), "main", "alt"))
                .await
                .unwrap();
        }
        let outcome = session
            .runner
            .run(ask("main", &format!("q{n}"), city))
            .await
            .unwrap()
            .into_result()
            .unwrap();
        assert!(outcome.reply().is_some());
        if state(&outcome).compactions > 0 {
            compacted_at = Some(n);
            break;
        }
        assert!(
            last(&session.requests).instructions.is_empty(),
            "no summary before the threshold"
        );
    }
    let compacted_at = compacted_at.expect("the session crossed the threshold");
    assert!(
        compacted_at >= 2,
        "the first turns fitted under the threshold"
    );

    // The request of the turn that compacted: the summary, then only the recent whole turns.
    let request = last(&session.requests);
    let summary = format!("{SUMMARY_PREFIX}The user asked ");
    assert!(
        request.instructions.iter().any(|i| i.starts_with(&summary)),
        "{:?}",
        request.instructions
    );
    assert_eq!(
        request.messages.first().map(|(role, _)| *role),
        Some(Role::User),
        "the kept history starts with a whole turn: {:?}",
        request.messages
    );
    assert!(
        !request
            .messages
            .iter()
            .any(|(_, text)| text.contains("Oslo")),
        "the first turn is summarised, not loaded"
    );
    assert!(!request.calls.is_empty(), "the kept turns hold tool calls");
    assert!(
        request.calls.iter().all(|(_, answered)| *answered),
        "every call with its result"
    );
    let asked = session.summaries.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("User: What is the weather in Oslo?"));
    assert!(
        asked[0].contains("Tool weather({\"city\":\"Oslo\"}) returned: Oslo is rainy"),
        "{}",
        asked[0]
    );

    // The raw records stay in storage.
    let stored = session
        .storage
        .fetch_messages(&StorageContext::new("trip"))
        .await
        .unwrap();
    assert!(
        stored.iter().any(|m| m.id() == "q0"),
        "compaction changes what is loaded, not what is kept"
    );

    // The next turn loads the summary and the unsummarised turns; nothing is summarised again.
    let next = session
        .runner
        .run(ask("main", "q-next", "Oslo"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let after = state(&next);
    assert_eq!(after.compactions, 1);
    let request = last(&session.requests);
    assert!(request.instructions.iter().any(|i| i.starts_with(&summary)));
    assert!(request.calls.iter().all(|(_, answered)| *answered));

    // The fork made before the compaction does not see it.
    let forked = session
        .runner
        .run(ask("alt", "f0", "Paris"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    assert_eq!(state(&forked).compactions, 0);
    let request = last(&session.requests);
    assert!(
        request.instructions.is_empty(),
        "no summary in the fork: {:?}",
        request.instructions
    );
    assert!(
        request
            .messages
            .iter()
            .any(|(_, text)| text.contains("Oslo")),
        "the fork loads its raw history"
    );

    // A restart: new stores over the same files, a new runner.
    let from = after.from;
    drop(session);
    let session = open(dir.path()).await;
    let restarted = session
        .runner
        .run(ask("main", "q-restart", "Rome"))
        .await
        .unwrap()
        .into_result()
        .unwrap();
    let state = state(&restarted);
    assert!(
        state.compactions >= 1,
        "the compaction state survived the restart"
    );
    assert!(state.from >= from);
    let request = last(&session.requests);
    assert!(
        request.instructions.iter().any(|i| i.starts_with(&summary)),
        "{:?}",
        request.instructions
    );
    assert!(
        !request.message_ids.iter().any(|id| id == "q0"),
        "the summarised turn stays summarised"
    );
    assert!(request.message_ids.iter().any(|id| id == "q-restart"));
}

#[tokio::test]
async fn hard_retention_deletes_the_summarised_records_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let session = open_with(dir.path(), true).await;
    let mut compacted = None;
    for (n, city) in ["Oslo", "Bergen", "Tromso", "Bodo", "Alta", "Molde"]
        .iter()
        .enumerate()
    {
        let outcome = session
            .runner
            .run(ask("main", &format!("q{n}"), city))
            .await
            .unwrap()
            .into_result()
            .unwrap();
        if state(&outcome).compactions > 0 {
            compacted = Some(state(&outcome));
            break;
        }
    }
    let compacted = compacted.expect("the session crossed the threshold");
    let ctx = StorageContext::new("trip");
    let messages = session.storage.fetch_messages(&ctx).await.unwrap();
    let calls = session.storage.fetch_tool_calls(&ctx).await.unwrap();
    assert!(
        !messages.iter().any(|m| m.id() == "q0"),
        "the summarised question is gone"
    );
    assert!(
        messages
            .iter()
            .all(|m| m.created_at() >= compacted.from.unwrap()),
        "only what is still loaded raw is kept"
    );
    assert!(
        calls
            .iter()
            .all(|c| c.created_at() >= compacted.from.unwrap())
    );
    assert!(
        messages.iter().any(|m| m.role() == Role::User),
        "the kept turns stay"
    );
}

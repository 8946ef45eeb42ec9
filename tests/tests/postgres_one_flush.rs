//! A turn on PostgreSQL storage and the session store its `session_store_one_flush` hands out
//! flushes the server's log once (issue 33): the turn's assistant messages are held back and written in the transaction
//! that commits its state and events, while nothing the turn or its caller relies on is lost
//! or reordered (see `adk::storage` `held`, `docs/postgres.md`).
//!
//! Each test uses its own schema in the database named by `ADK_TEST_POSTGRES_URL`; without it
//! the tests pass without checking anything and say so (see `adk_integration_tests::postgres_database`).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::events::ErrorCode;
use adk::pipeline::BoxError;
use adk::postgres::{PostgresStorage, tokio_postgres};
use adk::primitives::Message;
use adk::runner::TurnStatus;
use adk::state::StateKey;
use adk::state::contention::Add;
use adk::storage::{StorageAdapter, StorageContext};
use adk_integration_tests::one_flush::{AnswerId, Then, answering};
use adk_integration_tests::postgres_database::{
    fresh_options, fresh_schema_name, schema_client, test_url,
};
use serde_json::json;

/// The storage, the session store it hands out, a plain connection to their schema, and the
/// schema's name.
async fn fresh(label: &str) -> Option<(PostgresStorage, TurnRunnerParts)> {
    let url = test_url()?;
    let schema = fresh_schema_name(label);
    let options = fresh_options(label)?.schema(schema.clone()).unwrap();
    let storage = PostgresStorage::connect_with(options).await.unwrap();
    let client = schema_client(&url, &schema).await;
    Some((storage, TurnRunnerParts { client }))
}

struct TurnRunnerParts {
    client: tokio_postgres::Client,
}

/// A runner whose executor stores the answer `m-<turn>`, counts its turns in session state,
/// then does `then`.
async fn runner(storage: &PostgresStorage, then: Then) -> TurnRunner {
    TurnRunner::builder()
        .storage(storage.clone())
        .session_store(storage.session_store_one_flush().await.unwrap())
        .executor(answering(storage.clone(), AnswerId::PerTurn, then))
        .build()
}

fn raw(conversation: &str) -> RawTurnContext {
    RawTurnContext::new(conversation, "Be brief.")
        .app_name("shop")
        .user_id("ada")
}

/// The id of the transaction that last wrote the row, as text.
async fn writer(client: &tokio_postgres::Client, sql: &str, id: &str) -> String {
    client.query_one(sql, &[&id]).await.unwrap().get(0)
}

/// The messages stored for `conversation` (app `shop`, user `ada`), oldest first.
async fn stored(storage: &PostgresStorage, conversation: &str) -> Vec<Message> {
    storage
        .fetch_messages(
            &StorageContext::new(conversation)
                .with_app_name("shop")
                .with_user_id("ada"),
        )
        .await
        .unwrap()
}

/// The transaction that wrote the stored message `id`.
async fn message_writer(client: &tokio_postgres::Client, id: &str) -> String {
    writer(
        client,
        "SELECT xmin::TEXT FROM adk_rs_messages WHERE id = $1",
        id,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_answer_is_written_in_the_transaction_that_commits_its_state() {
    let Some((storage, parts)) = fresh("one_flush").await else {
        return;
    };
    let runner = runner(&storage, Then::Answer).await;
    // The first turn creates the session (the locking commit); the second commits to an
    // existing session in one round trip.
    for _ in 0..2 {
        let outcome = runner.run(raw("c-1")).await.unwrap();
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    let answers = stored(&storage, "c-1").await;
    assert_eq!(answers.len(), 2, "both answers are stored");
    let last = answers[1].id().to_owned();
    let answer_writer = message_writer(&parts.client, &last).await;
    let session_writer = writer(
        &parts.client,
        "SELECT xmin::TEXT FROM sessions WHERE id = $1",
        "c-1",
    )
    .await;
    assert_eq!(
        answer_writer, session_writer,
        "the answer and the session's state were written by one transaction"
    );
    let session = parts
        .client
        .query_one("SELECT state::TEXT FROM sessions WHERE id = 'c-1'", &[])
        .await
        .unwrap();
    let state: String = session.get(0);
    assert!(state.contains("\"turns\": 2"), "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_answer_is_read_back_by_its_turn_and_stored_when_the_turn_fails_uncommitted() {
    let Some((storage, parts)) = fresh("held_failed").await else {
        return;
    };
    for (conversation, then) in [("c-2", Then::ReadBackAndFail), ("c-3", Then::Fail)] {
        let outcome = runner(&storage, then)
            .await
            .run(raw(conversation))
            .await
            .unwrap();
        let TurnStatus::Failed(error) = &outcome.status else {
            panic!("the turn failed: {:?}", outcome.status);
        };
        assert_eq!(error.code(), ErrorCode::ExecutorError, "{error:?}");
        let cause = std::error::Error::source(error).map(ToString::to_string);
        assert_eq!(
            cause.as_deref(),
            Some("the executor failed after answering"),
            "{conversation}: {error}"
        );
        let answers = stored(&storage, conversation).await;
        assert_eq!(
            answers.len(),
            1,
            "{conversation}: the stored answer is kept"
        );
        let sessions = parts
            .client
            .query_one(
                "SELECT COUNT(*) FROM sessions WHERE id = $1",
                &[&conversation],
            )
            .await
            .unwrap();
        assert_eq!(
            sessions.get::<_, i64>(0),
            0,
            "a failed turn commits nothing"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_session_store_leaves_each_answer_in_a_transaction_of_its_own() {
    let Some((storage, parts)) = fresh("two_flushes").await else {
        return;
    };
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(storage.session_store().await.unwrap())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let id = format!("m-{}", ctx.turn_id());
                ctx.store_message(Message::assistant(id, "an answer")?)
                    .await?;
                ctx.state_mut().set_value("answered", json!(true))?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    for _ in 0..2 {
        let outcome = runner.run(raw("c-4")).await.unwrap();
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    let answers = stored(&storage, "c-4").await;
    let answer_writer = message_writer(&parts.client, answers[1].id()).await;
    let session_writer = writer(
        &parts.client,
        "SELECT xmin::TEXT FROM sessions WHERE id = $1",
        "c-4",
    )
    .await;
    assert_ne!(
        answer_writer, session_writer,
        "without the one-flush store, store_message commits the answer when it is called"
    );
}

/// A counter every turn of `a_merge_key_turn_commits_its_answer_and_its_merge_in_one_transaction`
/// adds one to.
const VISITS: StateKey<u64, Add> = adk::state_key!("app:visits" => u64, on_conflict = add);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_key_turn_commits_its_answer_and_its_merge_in_one_transaction() {
    let Some((storage, parts)) = fresh("one_flush_merge").await else {
        return;
    };
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(storage.session_store_one_flush().await.unwrap())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let id = format!("m-{}", ctx.turn_id());
                ctx.store_message(Message::assistant(id, "an answer")?)
                    .await?;
                ctx.state_mut().add(VISITS, 1)?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    // The first turn creates the session (the locking commit); the second adds to the counter
    // of an existing session, which nothing changed since the turn loaded it.
    for _ in 0..2 {
        let outcome = runner.run(raw("c-5")).await.unwrap();
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    let answers = stored(&storage, "c-5").await;
    assert_eq!(answers.len(), 2, "both answers are stored");
    let answer_writer = message_writer(&parts.client, answers[1].id()).await;
    let app_writer = writer(
        &parts.client,
        "SELECT xmin::TEXT FROM app_states WHERE app_name = $1",
        "shop",
    )
    .await;
    assert_eq!(
        answer_writer, app_writer,
        "the answer and the merged counter were written by one transaction: the merge took the \
         one round trip, not the locking transaction (which writes the held answer before it)"
    );
    let app = parts
        .client
        .query_one(
            "SELECT (state -> 'visits')::TEXT FROM app_states WHERE app_name = 'shop'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(app.get::<_, String>(0), "2");
}

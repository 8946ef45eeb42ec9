//! Answer links in storage: rows written before records carried an `AnswerLink` are linked in
//! place when an SQLite file or a PostgreSQL database is migrated, so they load as the answers
//! the model gave — an answer whose tool call was written before its text reads back with the
//! text first and the call's result after — and rows that already have links are left alone.
//! (That links round-trip through both batteries is part of the storage conformance suite.)
//!
//! The PostgreSQL test uses its own schema in the database named by `ADK_TEST_POSTGRES_URL`;
//! without it the test passes without checking anything and says so.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::postgres::{PostgresOptions, PostgresStorage, tokio_postgres};
use adk::primitives::{AnswerLink, Message, Thought, Timestamp, ToolCall};
use adk::sqlite::SqliteStorage;
use adk::storage::{StorageAdapter, StorageContext};
use adk::transcript::{Call, Entry, Part, Transcript};
use adk_integration_tests::postgres_database::{fresh_schema_name, test_url};

fn at(milliseconds: i64) -> Timestamp {
    Timestamp::from_millisecond(1_767_225_600_000 + milliseconds).unwrap()
}

/// One table's legacy rows: (table without prefix, id, turn id, record JSON), in insertion order.
type Row = (&'static str, String, &'static str, String);

/// Two turns as adk wrote them. `turn-1` before links existed, as the OpenAI executor did: the
/// answer's tool call created first (while the answer was assembled), its reasoning and text a
/// moment later, then the call ran; after its result, a second answer. `turn-2` by a newer adk,
/// already linked.
fn rows() -> Vec<Row> {
    let question = Message::user("u-1", "Weather in Oslo?")
        .unwrap()
        .with_created_at(at(0));
    let call = ToolCall::new("c-1", "weather", serde_json::json!({"city": "Oslo"}))
        .unwrap()
        .with_created_at(at(10))
        .complete("4 °C")
        .with_completed_at(Some(at(500)));
    let reasoning = Thought::new("r-1", "they want Oslo's weather")
        .unwrap()
        .with_created_at(at(15));
    let check = Message::assistant("m-1", "Let me check.")
        .unwrap()
        .with_created_at(at(20));
    let answer = Message::assistant("m-2", "4 °C in Oslo.")
        .unwrap()
        .with_created_at(at(900));
    let later = Message::user("u-2", "And tomorrow?")
        .unwrap()
        .with_created_at(at(1_000));
    let linked = Message::assistant("m-3", "Colder.")
        .unwrap()
        .with_answer(AnswerLink::new("turn-2-dispatch-0", 0))
        .unwrap()
        .with_created_at(at(1_100));
    vec![
        ("messages", "u-1".into(), "turn-1", json(&question)),
        ("thoughts", "r-1".into(), "turn-1", json(&reasoning)),
        ("messages", "m-1".into(), "turn-1", json(&check)),
        ("tool_calls", "c-1".into(), "turn-1", json(&call)),
        ("messages", "m-2".into(), "turn-1", json(&answer)),
        ("messages", "u-2".into(), "turn-2", json(&later)),
        ("messages", "m-3".into(), "turn-2", json(&linked)),
    ]
}

fn json(record: &impl serde::Serialize) -> String {
    serde_json::to_string(record).unwrap()
}

/// `user:id`, or an answer as `id[part ...]`.
fn shape(transcript: &Transcript<'_>) -> Vec<String> {
    transcript
        .iter()
        .map(|entry| match entry {
            Entry::User(message) => format!("user:{}", message.id()),
            Entry::Answer(answer) => {
                let parts: Vec<String> = answer
                    .parts()
                    .iter()
                    .map(|part| match part {
                        Part::Text(message) => format!("text:{}", message.id()),
                        Part::Reasoning(thought) => format!("think:{}", thought.id()),
                        Part::Call(Call::Answered(call)) => format!("call:{}", call.call().id()),
                        Part::Call(Call::Unanswered(call)) => format!("pending:{}", call.id()),
                    })
                    .collect();
                format!("{}[{}]", answer.id().unwrap_or("-"), parts.join(" "))
            }
        })
        .collect()
}

const EXPECTED: [&str; 5] = [
    "user:u-1",
    "legacy/turn-1/0[think:r-1 text:m-1 call:c-1]",
    "legacy/turn-1/1[text:m-2]",
    "user:u-2",
    "turn-2-dispatch-0[text:m-3]",
];

async fn loaded_shape(storage: &impl StorageAdapter, ctx: &StorageContext) -> Vec<String> {
    let messages = storage.fetch_messages(ctx).await.unwrap();
    let thoughts = storage.fetch_thoughts(ctx).await.unwrap();
    let calls = storage.fetch_tool_calls(ctx).await.unwrap();
    shape(&Transcript::new(&messages, &thoughts, &calls))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_2_sqlite_file_is_linked_in_place_and_loads_as_the_answers_the_model_gave() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("version-2.db");
    // Version 3 changed no table, only the records: a version 3 file with its version set back
    // to 2 and rows written as version 2 wrote them is a version 2 file.
    drop(SqliteStorage::open(&path).await.unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    for (table, id, turn, record) in rows() {
        connection
            .execute(
                &format!(
                    "INSERT INTO {table} (app_name, user_id, conversation_id, thread_id, id,
                                          turn_id, record)
                     VALUES ('default', 'default', 'legacy', 'main', ?1, ?2, ?3)"
                ),
                [&id, turn, &record],
            )
            .unwrap();
    }
    // A version 2 file has no tool ledger (version 4) nor approvals (version 5) either.
    connection
        .execute_batch("DROP TABLE tool_ledger; DROP TABLE tool_approvals")
        .unwrap();
    connection.pragma_update(None, "user_version", 2).unwrap();
    let sequences = |connection: &rusqlite::Connection| -> Vec<(i64, String)> {
        let mut statement = connection
            .prepare("SELECT sequence, id FROM messages ORDER BY sequence")
            .unwrap();
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let before = sequences(&connection);
    drop(connection);

    let storage = SqliteStorage::open(&path).await.unwrap();
    let ctx = StorageContext::new("legacy");
    assert_eq!(loaded_shape(&storage, &ctx).await, EXPECTED);
    drop(storage);

    let connection = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, 5);
    // Rewritten in place: every row keeps its place in fetch order.
    assert_eq!(sequences(&connection), before);
    // The link is in the stored record, not inferred again on every read.
    let stored: String = connection
        .query_row("SELECT record FROM messages WHERE id = 'm-1'", [], |row| {
            row.get(0)
        })
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        stored["answer"],
        serde_json::json!({"id": "legacy/turn-1/0", "position": 1})
    );
    drop(connection);

    // Opening again changes nothing.
    let storage = SqliteStorage::open(&path).await.unwrap();
    assert_eq!(loaded_shape(&storage, &ctx).await, EXPECTED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_database_at_migration_2_is_linked_in_place_and_loads_as_the_answers_the_model_gave()
 {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("legacy_links");
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    // Migration 3 changed no table, only the records: a database migrated to 3 with the record
    // of migration 3 removed and rows written as migration 2 left them is at migration 2.
    drop(
        PostgresStorage::connect_with(options.clone())
            .await
            .unwrap(),
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET search_path = \"{schema}\"; DELETE FROM adk_rs_migrations WHERE version >= 3; \
             DROP TABLE adk_rs_thread_forks; DROP TABLE adk_rs_tool_ledger; \
             DROP TABLE adk_rs_tool_approvals"
        ))
        .await
        .unwrap();
    for (table, id, turn, record) in rows() {
        let record: serde_json::Value = serde_json::from_str(&record).unwrap();
        client
            .execute(
                &format!(
                    "INSERT INTO adk_rs_{table} (app_name, user_id, session_id, thread_id, id,
                                                 turn_id, record)
                     VALUES ('default', 'default', 'legacy', 'main', $1, $2, $3)"
                ),
                &[&id, &turn, &tokio_postgres::types::Json(record)],
            )
            .await
            .unwrap();
    }

    let storage = PostgresStorage::connect_with(options.clone())
        .await
        .unwrap();
    let ctx = StorageContext::new("legacy");
    assert_eq!(loaded_shape(&storage, &ctx).await, EXPECTED);
    let stored: tokio_postgres::types::Json<serde_json::Value> = client
        .query_one("SELECT record FROM adk_rs_tool_calls WHERE id = 'c-1'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        stored.0["answer"],
        serde_json::json!({"id": "legacy/turn-1/0", "position": 2})
    );
    let versions: Vec<i64> = client
        .query(
            "SELECT version FROM adk_rs_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7]);
}

//! PostgreSQL errors name their cause: the server's message and SQLSTATE (value too long,
//! index row too large, a NUL byte) are in the error's message, not only in its source chain,
//! and an id of 10 KB is cut, not copied whole into the message.
//!
//! Runs when `ADK_TEST_POSTGRES_URL` names a database
//! (`.ci/postgres run cargo test -p adk-integration-tests --test postgres_errors`); skipped
//! loudly otherwise.

use adk::postgres::{PostgresSessionStore, PostgresStorage};
use adk::primitives::Message;
use adk::state::{SessionKey, SessionStore};
use adk::storage::StorageContext;
use adk_integration_tests::postgres_database::fresh_options;
use serde_json::Map;

/// 10,000 characters that do not compress (PostgreSQL compresses index entries), from a small
/// linear congruential generator.
fn incompressible_id() -> String {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    (0..10_000)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(b'a' + u8::try_from((seed >> 33) % 26).expect("below 26"))
        })
        .collect()
}

fn assert_names_the_cause(message: &str, sqlstate: &str) {
    assert!(
        !message.ends_with("db error") && !message.contains(": db error"),
        "the cause is in the message: {message}"
    );
    assert!(
        message.contains(&format!("({sqlstate})")),
        "the message names SQLSTATE {sqlstate}: {message}"
    );
    assert!(
        message.len() < 1_500,
        "ids are cut, not copied whole ({} bytes): {message}",
        message.len()
    );
}

#[tokio::test]
async fn a_message_id_too_large_to_index_names_the_cause_with_the_id_cut() {
    let Some(options) = fresh_options("pgerr_index") else {
        eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
        return;
    };
    let storage = PostgresStorage::connect_with(options)
        .await
        .expect("connects");
    let message = Message::user(incompressible_id(), "hello").expect("valid");
    let error =
        adk::storage::StorageAdapter::store_message(&storage, &StorageContext::new("s-1"), message)
            .await
            .expect_err("an index row over the btree limit is refused");
    let text = format!("{error}");
    assert_names_the_cause(&text, "54000");
    assert!(text.contains("index row"), "{text}");
}

#[tokio::test]
async fn a_nul_byte_in_a_message_names_the_cause() {
    let Some(options) = fresh_options("pgerr_nul") else {
        eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
        return;
    };
    let storage = PostgresStorage::connect_with(options)
        .await
        .expect("connects");
    let message = Message::user("m-1", "before\0after").expect("valid");
    let error =
        adk::storage::StorageAdapter::store_message(&storage, &StorageContext::new("s-1"), message)
            .await
            .expect_err("PostgreSQL cannot store a NUL byte in text or JSONB");
    let text = format!("{error}");
    assert!(
        !text.ends_with("db error") && text.contains("(22"),
        "a data exception (SQLSTATE class 22) is named: {text}"
    );
}

#[tokio::test]
async fn a_session_id_too_long_for_its_column_names_the_cause_with_the_id_cut() {
    let Some(options) = fresh_options("pgerr_long") else {
        eprintln!("not checked on PostgreSQL: ADK_TEST_POSTGRES_URL is not set");
        return;
    };
    let store = PostgresSessionStore::connect_with(options)
        .await
        .expect("connects");
    let key = SessionKey::new("app", "ada", incompressible_id().as_str());
    let error = store
        .create_session(&key, Map::new())
        .await
        .expect_err("google-adk's id column is VARCHAR(128)");
    let text = format!("{error}");
    assert_names_the_cause(&text, "22001");
    assert!(text.contains("value too long"), "{text}");
}

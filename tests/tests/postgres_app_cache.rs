//! The PostgreSQL session store keeps the app's state between turns (`adk/src/postgres/app_cache.rs`):
//! a load is sent the app's document only when the row is not the version the store holds, and
//! a commit's app write hands back what the store needs to keep the document it wrote (the keys
//! it set, or the whole document). What a load returns must still be exactly the stored row:
//! these pin that every other writer's change is seen at the next load, that a turn reads what
//! this store just committed, key order included, and that a stale write is still refused.
//!
//! Most commits here are sent with a companion turn of another session, both started in one poll
//! on a one-thread runtime, so the two are one group (the folded statements); the kept
//! documents are checked for a turn committed alone too.
//!
//! Each test uses its own schema in the database named by `ADK_TEST_POSTGRES_URL`; without it
//! the tests pass without checking anything and say so (see `adk_integration_tests::postgres_database`).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::ids::ThreadId;
use adk::postgres::PostgresSessionStore;
use adk::postgres::tokio_postgres::Client;
use adk::state::{SessionKey, SessionStore, SessionStoreError, State, TurnCommit};
use adk_integration_tests::postgres_database::{
    fresh_options, fresh_schema_name, schema_client, test_url,
};
use futures_util::future::join;
use serde_json::{Map, Value, json};

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Two stores on one fresh schema (two processes, as far as their kept documents go) and a plain
/// connection to it, with session `s-1` of `ada` in app `shop` created with `app:mode` = "a" and
/// `app:other` = 0.
async fn two_stores(
    label: &str,
) -> Option<(
    PostgresSessionStore,
    PostgresSessionStore,
    Client,
    SessionKey,
)> {
    let url = test_url()?;
    let schema = fresh_schema_name(label);
    let options = || {
        fresh_options(label)
            .unwrap()
            .schema(schema.clone())
            .unwrap()
    };
    let first = PostgresSessionStore::connect_with(options()).await.unwrap();
    let second = PostgresSessionStore::connect_with(options()).await.unwrap();
    let key = SessionKey::new("shop", "ada", "s-1");
    first
        .create_session(&key, object(json!({"app:mode": "a", "app:other": 0})))
        .await
        .unwrap();
    first
        .create_session(&companion(), Map::new())
        .await
        .unwrap();
    let client = schema_client(&url, &schema).await;
    Some((first, second, client, key))
}

/// The session whose turn goes with each commit, so that the commit is a group's.
fn companion() -> SessionKey {
    SessionKey::new("shop", "cy", "s-3")
}

/// A turn of `key` setting session key `turns` to `value`, loaded now.
async fn session_turn(sessions: &PostgresSessionStore, key: &SessionKey, value: u64) -> TurnCommit {
    let thread = ThreadId::default();
    let mut state = State::from_loaded(sessions.load_turn(key, &thread).await.unwrap());
    state.set_value("turns", json!(value)).unwrap();
    state.to_commit(&thread)
}

/// Loads the turn and commits `app:mode` = `mode`, in one group with a turn of the companion
/// session.
async fn set_mode(sessions: &PostgresSessionStore, key: &SessionKey, mode: &str) {
    commit_app(sessions, key, Sent::InAGroup, |state| {
        state.set_value("app:mode", json!(mode)).unwrap();
    })
    .await;
}

/// How a test's commit is sent: in one group with a turn of the companion session, or alone.
#[derive(Clone, Copy)]
enum Sent {
    InAGroup,
    Alone,
}

/// Loads the turn, applies `change` to its state and commits it as `sent` says.
async fn commit_app(
    sessions: &PostgresSessionStore,
    key: &SessionKey,
    sent: Sent,
    change: impl FnOnce(&mut State),
) {
    let thread = ThreadId::default();
    let mut state = State::from_loaded(sessions.load_turn(key, &thread).await.unwrap());
    change(&mut state);
    let mine = match sent {
        Sent::Alone => sessions.commit_turn(key, state.to_commit(&thread)).await,
        Sent::InAGroup => {
            let other = session_turn(sessions, &companion(), 7).await;
            let (mine, theirs) = join(
                sessions.commit_turn(key, state.to_commit(&thread)),
                sessions.commit_turn(&companion(), other),
            )
            .await;
            theirs.unwrap();
            mine
        }
    };
    mine.unwrap();
}

async fn app_loaded(sessions: &PostgresSessionStore, key: &SessionKey) -> Map<String, Value> {
    Map::clone(
        &sessions
            .load_turn(key, &ThreadId::default())
            .await
            .unwrap()
            .app,
    )
}

#[tokio::test]
async fn the_turn_after_a_commit_reads_the_app_state_it_wrote_in_every_session_of_the_app() {
    let Some((sessions, _, _, key)) = two_stores("app_cache_own").await else {
        return;
    };
    set_mode(&sessions, &key, "b").await;
    assert_eq!(
        app_loaded(&sessions, &key).await,
        object(json!({"mode": "b", "other": 0}))
    );
    // Another session of the app (another user, too) loads the same document.
    let other = SessionKey::new("shop", "bo", "s-2");
    sessions.create_session(&other, Map::new()).await.unwrap();
    set_mode(&sessions, &other, "c").await;
    assert_eq!(
        app_loaded(&sessions, &key).await,
        object(json!({"mode": "c", "other": 0}))
    );
}

#[tokio::test]
async fn another_stores_commit_between_two_loads_is_seen() {
    let Some((first, second, _, key)) = two_stores("app_cache_second_store").await else {
        return;
    };
    set_mode(&first, &key, "b").await;
    assert_eq!(app_loaded(&first, &key).await["mode"], json!("b"));
    set_mode(&second, &key, "c").await;
    assert_eq!(app_loaded(&first, &key).await["mode"], json!("c"));
    // And back: the first store's commit is seen by the second.
    set_mode(&first, &key, "d").await;
    assert_eq!(app_loaded(&second, &key).await["mode"], json!("d"));
}

// A plain `UPDATE` that leaves `update_time` alone still makes a new row version (a new `xmin`).
#[tokio::test]
async fn a_plain_sql_write_that_keeps_the_update_time_is_seen_at_the_next_load() {
    let Some((sessions, _, client, key)) = two_stores("app_cache_plain_sql").await else {
        return;
    };
    set_mode(&sessions, &key, "b").await;
    assert_eq!(app_loaded(&sessions, &key).await["mode"], json!("b"));
    client
        .batch_execute(
            "UPDATE app_states SET state = state || '{\"mode\": \"z\", \"new\": 1}' \
             WHERE app_name = 'shop'",
        )
        .await
        .unwrap();
    assert_eq!(
        app_loaded(&sessions, &key).await,
        object(json!({"mode": "z", "other": 0, "new": 1}))
    );
}

#[tokio::test]
async fn a_key_another_writer_deleted_is_gone_at_the_next_load() {
    let Some((sessions, _, client, key)) = two_stores("app_cache_delete").await else {
        return;
    };
    set_mode(&sessions, &key, "b").await;
    assert!(app_loaded(&sessions, &key).await.contains_key("other"));
    client
        .batch_execute("UPDATE app_states SET state = state - 'other' WHERE app_name = 'shop'")
        .await
        .unwrap();
    assert_eq!(
        app_loaded(&sessions, &key).await,
        object(json!({"mode": "b"}))
    );
    // A row deleted whole: the app has no state.
    client
        .batch_execute("DELETE FROM app_states WHERE app_name = 'shop'")
        .await
        .unwrap();
    assert_eq!(app_loaded(&sessions, &key).await, Map::new());
}

#[tokio::test]
async fn a_turn_that_loaded_the_kept_document_is_refused_when_another_store_changed_its_key() {
    let Some((first, second, _, key)) = two_stores("app_cache_stale").await else {
        return;
    };
    let thread = ThreadId::default();
    set_mode(&first, &key, "b").await;
    // Loaded from the kept document (the first store wrote it), then changed by the second.
    let mut stale = State::from_loaded(first.load_turn(&key, &thread).await.unwrap());
    set_mode(&second, &key, "c").await;
    stale.set_value("app:mode", json!("d")).unwrap();
    let error = first
        .commit_turn(&key, stale.to_commit(&thread))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SessionStoreError::Stale { keys } if keys == &["app:mode"]),
        "{error}"
    );
    assert_eq!(app_loaded(&first, &key).await["mode"], json!("c"));
}

// A commit's app write that overwrites the version the store holds answers with only the keys it
// set, and the store applies them and the removals to the document it holds. What the next load
// hands the turn must be the row exactly as a load sent it whole would: the same keys and
// values, numbers as the server prints them, and the keys in the order the server keeps them
// (shorter first, then bytewise), nested objects included.
async fn a_kept_document_is_the_row_as_the_server_sends_it(label: &str, sent: Sent) {
    let Some((first, second, client, key)) = two_stores(label).await else {
        return;
    };
    // The first commit's answer is the whole document (the store held none): now it holds one.
    commit_app(&first, &key, sent, |state| {
        state.set_value("app:mode", json!("b")).unwrap();
    })
    .await;
    commit_app(&first, &key, sent, |state| {
        for (name, value) in [
            ("app:zz", json!(1.0)),
            ("app:a", json!(1e20)),
            ("app:mode", json!({"zeta": 1, "al": [2.50, "x"], "b": null})),
            ("app:\u{e9}t\u{e9}", json!(-7)),
            ("app:longer-than-the-rest", json!("text")),
        ] {
            state.set_value(name, value).unwrap();
        }
    })
    .await;
    // Kept from the write: the store sends the version it holds and is sent no document.
    let kept = app_loaded(&first, &key).await;
    // Sent whole: the second store holds no document.
    let sent_whole = app_loaded(&second, &key).await;
    let stored: Value = client
        .query_one("SELECT state FROM app_states WHERE app_name = 'shop'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        serde_json::to_string(&kept).unwrap(),
        serde_json::to_string(&sent_whole).unwrap(),
        "the same text, so the same keys in the same order, at every level"
    );
    assert_eq!(Value::Object(kept.clone()), stored);
    let keys: Vec<&str> = kept.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "a",
            "zz",
            "mode",
            "other",
            "\u{e9}t\u{e9}",
            "longer-than-the-rest"
        ],
        "shorter first, then bytewise"
    );
    let nested: Vec<&str> = kept["mode"]
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(nested, ["b", "al", "zeta"]);
    // And the next commit applies its keys and removals to that document in turn.
    commit_app(&first, &key, sent, |state| {
        state.set_value("app:b", json!(2)).unwrap();
        assert!(state.delete("app:zz"));
        assert!(state.delete("app:other"));
    })
    .await;
    assert_eq!(
        serde_json::to_string(&app_loaded(&first, &key).await).unwrap(),
        serde_json::to_string(&app_loaded(&second, &key).await).unwrap()
    );
}

#[tokio::test]
async fn a_document_kept_from_a_groups_write_is_the_row_as_the_server_sends_it() {
    a_kept_document_is_the_row_as_the_server_sends_it("app_cache_applied_group", Sent::InAGroup)
        .await;
}

#[tokio::test]
async fn a_document_kept_from_a_lone_turns_write_is_the_row_as_the_server_sends_it() {
    a_kept_document_is_the_row_as_the_server_sends_it("app_cache_applied_alone", Sent::Alone).await;
}

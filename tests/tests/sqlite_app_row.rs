//! `SqliteSessionStore` keeps the app row it last read or wrote parsed, so a turn does not parse
//! the app's whole state twice; these pin that what it serves is always the row as stored: a row
//! another connection changed is read afresh, and a commit checks its stale keys against it.

use adk::ids::ThreadId;
use adk::sqlite::SqliteSessionStore;
use adk::state::{SessionKey, SessionStore, SessionStoreError, State};
use rusqlite::Connection;
use serde_json::{Map, Value, json};

fn map(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

async fn turn(store: &SqliteSessionStore, key: &SessionKey) -> State {
    State::from_loaded(
        store
            .load_turn(key, &ThreadId::default())
            .await
            .expect("the turn loads"),
    )
}

/// Writes the app's row from another connection, as google-adk or another process would.
fn write_app_row(path: &std::path::Path, state: &str) {
    Connection::open(path)
        .expect("a second connection")
        .execute(
            "UPDATE app_states SET state = ?1 WHERE app_name = 'shop'",
            [state],
        )
        .expect("the app row is rewritten");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_row_another_connection_rewrote_is_loaded_and_checked_as_stored() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.expect("the store");
    let key = SessionKey::new("shop", "ada", "s-1");
    store
        .create_session(&key, map(json!({"app:count": 0, "app:other": "kept"})))
        .await
        .expect("the session");

    // A turn writes the app row: the store keeps what it wrote.
    let mut first = turn(&store, &key).await;
    first.set_value("app:count", json!(1)).expect("a write");
    store
        .commit_turn(&key, first.to_commit(&ThreadId::default()))
        .await
        .expect("the first commit");

    // Another connection rewrites the row: the next load sees its values, not the kept ones.
    write_app_row(&path, r#"{"count": 7, "other": "kept"}"#);
    let mut second = turn(&store, &key).await;
    assert_eq!(second.value("app:count"), Some(&json!(7)));

    // And rewrites it again before the turn commits: the commit is refused as stale.
    write_app_row(&path, r#"{"count": 8, "other": "kept"}"#);
    second.set_value("app:count", json!(100)).expect("a write");
    match store
        .commit_turn(&key, second.to_commit(&ThreadId::default()))
        .await
    {
        Err(SessionStoreError::Stale { keys }) => assert_eq!(keys, ["app:count"]),
        other => panic!("expected the app key to be stale, got {other:?}"),
    }
    assert_eq!(
        store.app_state(&key.app).await.expect("the app state"),
        map(json!({"count": 8, "other": "kept"}))
    );

    // A turn loaded after it commits on top of the row as stored, keeping the other keys.
    let mut third = turn(&store, &key).await;
    third.set_value("app:count", json!(9)).expect("a write");
    store
        .commit_turn(&key, third.to_commit(&ThreadId::default()))
        .await
        .expect("the third commit");
    assert_eq!(
        store.app_state(&key.app).await.expect("the app state"),
        map(json!({"count": 9, "other": "kept"}))
    );
    // The next load serves the row this store just wrote.
    assert_eq!(turn(&store, &key).await.value("app:count"), Some(&json!(9)));
}

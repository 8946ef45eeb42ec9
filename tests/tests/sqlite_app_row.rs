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

fn app_row_text(path: &std::path::Path) -> String {
    Connection::open(path)
        .expect("a second connection")
        .query_row(
            "SELECT state FROM app_states WHERE app_name = 'shop'",
            [],
            |row| row.get(0),
        )
        .expect("the app row")
}

/// A commit serializes only the app keys it changed and copies the rest from the text it wrote
/// last; the row must still be byte for byte what `json.dumps` writes for the whole state, and
/// a row another writer laid out differently is written afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_row_rewritten_key_by_key_is_the_json_dumps_layout_of_the_whole_state() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.expect("the store");
    let key = SessionKey::new("shop", "ada", "s-1");
    store
        .create_session(
            &key,
            map(json!({"app:a": 1, "app:é": "日本", "app:z": [1.5]})),
        )
        .await
        .expect("the session");
    let writes = [
        ("app:a", json!(2)),
        ("app:new", json!({"n": null})),
        ("app:z", json!(1e-5)),
    ];
    for (name, value) in writes {
        let mut state = turn(&store, &key).await;
        state.set_value(name, value).expect("a write");
        store
            .commit_turn(&key, state.to_commit(&ThreadId::default()))
            .await
            .expect("the commit");
    }
    assert_eq!(
        app_row_text(&path),
        r#"{"a": 2, "\u00e9": "\u65e5\u672c", "z": 1e-05, "new": {"n": null}}"#
    );
    // Another writer lays the row out its own way (compact, another order): the next commit
    // rewrites all of it in `json.dumps` layout, in the order it was read.
    write_app_row(&path, r#"{"z":3,"a":2,"new":{"n":null}}"#);
    let mut state = turn(&store, &key).await;
    state.set_value("app:a", json!(5)).expect("a write");
    store
        .commit_turn(&key, state.to_commit(&ThreadId::default()))
        .await
        .expect("the commit");
    assert_eq!(
        app_row_text(&path),
        r#"{"z": 3, "a": 5, "new": {"n": null}}"#
    );
}

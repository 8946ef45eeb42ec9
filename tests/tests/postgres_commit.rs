//! The PostgreSQL session store's one-round-trip commit (issue 33): a turn's writes to an
//! existing session go in one pipeline whose checked writes abort it when a value went stale,
//! so a commit is still all or nothing, however it fails, and many turns writing the app's one
//! row at once all land.
//!
//! Each test uses its own schema in the database named by `ADK_TEST_POSTGRES_URL`; without it
//! the tests pass without checking anything and say so (see `adk_integration_tests::postgres_database`).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::ids::ThreadId;
use adk::postgres::PostgresSessionStore;
use adk::state::{
    GetSessionConfig, MiddlewareStateRecord, MiddlewareStateWrite, RecordScope, SessionEvent,
    SessionKey, SessionStore, SessionStoreError, State, StateChange, StateWrite, TurnCommit,
};
use adk_integration_tests::postgres_database::fresh_options;
use serde_json::{Map, Value, json};

async fn sessions_fresh(label: &str) -> Option<PostgresSessionStore> {
    let options = fresh_options(label)?;
    Some(PostgresSessionStore::connect_with(options).await.unwrap())
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Loads the turn, increments `turns`, `user:turns` and `app:<name>`, and commits.
async fn increment(sessions: &PostgresSessionStore, key: &SessionKey, app_key: &str) {
    let thread = ThreadId::default();
    let mut state = State::from_loaded(sessions.load_turn(key, &thread).await.unwrap());
    for name in ["turns", "user:turns", app_key] {
        let next = state.value(name).and_then(Value::as_u64).unwrap_or(0) + 1;
        state.set_value(name, json!(next)).unwrap();
    }
    let mut commit = state.to_commit(&thread);
    commit.events = vec![SessionEvent::new("turn", "agent", jiff::Timestamp::now())];
    sessions.commit_turn(key, commit).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_sessions_committing_to_the_apps_one_row_at_once_all_land() {
    let Some(sessions) = sessions_fresh("commit_app_row").await else {
        return;
    };
    let keys: Vec<SessionKey> = (0..64)
        .map(|n| SessionKey::new("shop", format!("user-{n}"), format!("s-{n}")))
        .collect();
    for round in 0..4 {
        let tasks: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(n, key)| {
                let (sessions, key) = (sessions.clone(), key.clone());
                tokio::spawn(async move {
                    increment(&sessions, &key, &format!("app:turns_{n}")).await;
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let app = sessions.app_state(&"shop".into()).await.unwrap();
        for n in 0..64 {
            assert_eq!(app[&format!("turns_{n}")], json!(round + 1), "app key {n}");
        }
    }
    for key in &keys {
        let session = sessions
            .get_session_with(key, GetSessionConfig::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(session.state["turns"], json!(4));
        assert_eq!(session.state["user:turns"], json!(4));
        assert_eq!(session.events.len(), 4, "one event per commit");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_key_gone_stale_refuses_the_commit_and_keeps_its_session_writes_and_events_out() {
    let Some(sessions) = sessions_fresh("commit_stale_app").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    let thread = ThreadId::default();
    sessions
        .create_session(&key, object(json!({"step": 0, "app:mode": "a"})))
        .await
        .unwrap();
    let mut stale = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    let mut first = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    first.set_value("app:mode", json!("b")).unwrap();
    sessions
        .commit_turn(&key, first.to_commit(&thread))
        .await
        .unwrap();

    // The session part is fine on its own; the app part is not.
    stale.set_value("step", json!(1)).unwrap();
    stale.set_value("app:mode", json!("c")).unwrap();
    let mut commit = stale.to_commit(&thread);
    commit.events = vec![SessionEvent::new("turn", "agent", jiff::Timestamp::now())];
    commit.middleware = vec![MiddlewareStateWrite::Put(MiddlewareStateRecord {
        scope: RecordScope::Session,
        key: "planner".into(),
        version: 1,
        json: json!({"plan": "stale"}),
    })];
    let error = sessions.commit_turn(&key, commit).await.unwrap_err();
    assert!(
        matches!(&error, SessionStoreError::Stale { keys } if keys == &["app:mode"]),
        "{error}"
    );

    let loaded = sessions.load_turn(&key, &thread).await.unwrap();
    assert_eq!(loaded.session, object(json!({"step": 0})));
    assert_eq!(loaded.app, object(json!({"mode": "b"})));
    assert!(loaded.middleware.is_empty());
    let session = sessions
        .get_session_with(&key, GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert!(session.events.is_empty(), "{:?}", session.events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_to_one_key_apply_in_order_and_deletes_remove_keys_of_every_scope() {
    let Some(sessions) = sessions_fresh("commit_order").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    sessions
        .create_session(
            &key,
            object(json!({"keep": 1, "gone": 2, "user:gone": 3, "app:gone": 4, "nested": {"a": [1.5, null]}})),
        )
        .await
        .unwrap();
    let write = |name: &str, change: StateChange, expected: Option<Value>| StateWrite {
        name: name.into(),
        change,
        expected,
    };
    let commit = TurnCommit {
        session: vec![
            write("gone", StateChange::Set(json!(5)), Some(json!(2))),
            write("gone", StateChange::Delete, Some(json!(2))),
            write("fresh", StateChange::Delete, None),
            write("fresh", StateChange::Set(Value::Null), None),
            write(
                "nested",
                StateChange::Set(json!({"b": true})),
                Some(json!({"a": [1.5, null]})),
            ),
        ],
        user: vec![write("gone", StateChange::Delete, Some(json!(3)))],
        app: vec![write("gone", StateChange::Delete, Some(json!(4)))],
        ..TurnCommit::default()
    };
    sessions.commit_turn(&key, commit).await.unwrap();

    let loaded = sessions
        .load_turn(&key, &ThreadId::default())
        .await
        .unwrap();
    assert_eq!(
        loaded.session,
        object(json!({"keep": 1, "fresh": null, "nested": {"b": true}}))
    );
    assert!(loaded.user.is_empty(), "{:?}", loaded.user);
    assert!(loaded.app.is_empty(), "{:?}", loaded.app);
}

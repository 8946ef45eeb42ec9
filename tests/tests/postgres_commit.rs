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
use adk_integration_tests::postgres_database::{
    fresh_options, fresh_schema_name, schema_client, test_url,
};
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
    assert_eq!(*loaded.app, object(json!({"mode": "b"})));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_document_of_thousands_of_keys_is_checked_key_by_key_on_every_write() {
    let Some(sessions) = sessions_fresh("commit_large_app").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    let thread = ThreadId::default();
    // Thousands of keys: the stored document is compressed and kept out of line (TOAST), and
    // the checked write reads it once for all its checks.
    let mut initial: Map<String, Value> =
        (0..3000).map(|n| (format!("app:k{n}"), json!(n))).collect();
    initial.insert("step".into(), json!(0));
    sessions.create_session(&key, initial).await.unwrap();
    let write = |name: &str, change: StateChange, expected: Option<Value>| StateWrite {
        name: name.into(),
        change,
        expected,
    };

    // A delete whose expected value is stale, among checks that hold, is refused.
    let stale = TurnCommit {
        session: vec![write("step", StateChange::Set(json!(1)), Some(json!(0)))],
        app: vec![
            write("k1", StateChange::Set(json!(-1)), Some(json!(1))),
            write("k2999", StateChange::Delete, Some(json!(2998))),
        ],
        ..TurnCommit::default()
    };
    let error = sessions.commit_turn(&key, stale).await.unwrap_err();
    assert!(
        matches!(&error, SessionStoreError::Stale { keys } if keys == &["app:k2999"]),
        "{error}"
    );

    let fresh = TurnCommit {
        session: vec![write("step", StateChange::Set(json!(1)), Some(json!(0)))],
        app: vec![
            write("k1", StateChange::Set(json!(-1)), Some(json!(1))),
            write("k2999", StateChange::Delete, Some(json!(2999))),
            write("new", StateChange::Set(json!("x")), None),
        ],
        ..TurnCommit::default()
    };
    sessions.commit_turn(&key, fresh).await.unwrap();
    let loaded = sessions.load_turn(&key, &thread).await.unwrap();
    assert_eq!(loaded.session, object(json!({"step": 1})));
    assert_eq!(loaded.app.len(), 3000);
    assert_eq!(loaded.app["k0"], json!(0));
    assert_eq!(loaded.app["k1"], json!(-1));
    assert_eq!(loaded.app["k2998"], json!(2998));
    assert!(!loaded.app.contains_key("k2999"));
    assert_eq!(loaded.app["new"], json!("x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_columns_are_compressed_with_lz4_where_the_server_has_it() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("commit_lz4");
    let options = fresh_options("commit_lz4")
        .unwrap()
        .schema(schema.clone())
        .unwrap();
    PostgresSessionStore::connect_with(options).await.unwrap();
    let client = schema_client(&url, &schema).await;
    let has_lz4: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_settings \
             WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let methods: Vec<(String, String)> = client
        .query(
            "SELECT attrelid::regclass::TEXT, attcompression::TEXT FROM pg_attribute \
             WHERE attrelid IN ('app_states'::regclass, 'user_states'::regclass, \
             'sessions'::regclass) AND attname = 'state' ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    if !has_lz4 {
        eprintln!("NOTE: this PostgreSQL has no lz4: the state columns keep the default method");
    }
    // 'l' is lz4; '' is the server's default (pglz unless configured).
    let method = if has_lz4 { "l" } else { "" };
    assert_eq!(
        methods,
        ["app_states", "sessions", "user_states"]
            .map(|table| (table.to_owned(), method.to_owned()))
    );
}

/// A session with app keys `mode` ("a") and `other` (0), a turn loaded from it that sets
/// `app:mode` to "c", and another connection holding the app's row locked by an uncommitted
/// write of `change`: the turn's commit is started while the row is held, and must wait for it.
/// Returns what the commit came to once the holder committed, and the app's state then.
async fn commit_behind_a_held_app_row(
    label: &str,
    change: Value,
) -> Option<(Result<(), SessionStoreError>, Map<String, Value>)> {
    let url = test_url()?;
    let schema = fresh_schema_name(label);
    let options = fresh_options(label)
        .unwrap()
        .schema(schema.clone())
        .unwrap();
    let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
    let key = SessionKey::new("shop", "ada", "s-1");
    let thread = ThreadId::default();
    sessions
        .create_session(&key, object(json!({"app:mode": "a", "app:other": 0})))
        .await
        .unwrap();
    let mut turn = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    turn.set_value("app:mode", json!("c")).unwrap();
    let commit = turn.to_commit(&thread);

    let holder = schema_client(&url, &schema).await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute(
            "UPDATE app_states SET state = state || $1::JSONB WHERE app_name = 'shop'",
            &[&tokio_postgres_json(change)],
        )
        .await
        .unwrap();
    let committing = tokio::spawn({
        let sessions = sessions.clone();
        async move { sessions.commit_turn(&key, commit).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !committing.is_finished(),
        "the commit did not wait for the app's row held by another transaction"
    );
    holder.batch_execute("COMMIT").await.unwrap();
    let committed = committing.await.unwrap();
    let app = sessions.app_state(&"shop".into()).await.unwrap();
    Some((committed, app))
}

fn tokio_postgres_json(value: Value) -> adk::postgres::tokio_postgres::types::Json<Value> {
    adk::postgres::tokio_postgres::types::Json(value)
}

// The one-round-trip commit locks each row in the statement that checks and writes it: these
// pin that the check runs against the row as the commit it waited for left it, not as it was
// when the statement started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_waited_for_the_app_row_is_refused_when_the_holder_changed_its_key() {
    let Some((committed, app)) =
        commit_behind_a_held_app_row("commit_wait_stale", json!({"mode": "b"})).await
    else {
        return;
    };
    let error = committed.unwrap_err();
    assert!(
        matches!(&error, SessionStoreError::Stale { keys } if keys == &["app:mode"]),
        "{error}"
    );
    assert_eq!(app, object(json!({"mode": "b", "other": 0})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_waited_for_the_app_row_keeps_the_other_keys_the_holder_wrote() {
    let Some((committed, app)) =
        commit_behind_a_held_app_row("commit_wait_other", json!({"other": 1})).await
    else {
        return;
    };
    committed.unwrap();
    assert_eq!(app, object(json!({"mode": "c", "other": 1})));
}

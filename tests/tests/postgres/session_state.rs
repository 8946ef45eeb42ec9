//! Session state: the session store meets the state contract in Google ADK's v1 tables, reads
//! and continues what google-adk wrote, refuses other schema versions, and refuses every stale
//! commit whole, through one pool or eight.

use super::*;

/// A session store in a fresh schema, or `None` when no test database is configured.
async fn sessions_fresh(label: &str) -> Option<PostgresSessionStore> {
    let options = fresh_options(label)?;
    Some(PostgresSessionStore::connect_with(options).await.unwrap())
}

fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_state_conformance_suite_passes() {
    let Some(sessions) = sessions_fresh("state_conformance").await else {
        return;
    };
    let passed = state_conformance::check(&sessions)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(passed, state_conformance::RULES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_session_stores_with_their_own_pools_pass_the_state_suite_at_once() {
    let Some(options) = fresh_options("state_conformance_x4") else {
        return;
    };
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let options = options.clone();
            tokio::spawn(async move {
                let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
                state_conformance::check(&sessions).await
            })
        })
        .collect();
    for run in runs {
        run.await
            .unwrap()
            .unwrap_or_else(|failure| panic!("{failure}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_is_kept_in_google_adks_v1_tables_with_jsonb_state() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("adk_layout");
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let storage = PostgresStorage::connect_with(options).await.unwrap();
    let sessions = storage.session_store().await.unwrap();
    let key = SessionKey::new("a", "u1", "s1");
    let initial = serde_json::json!({"app:k": 1, "user:k": 2, "sk": null, "temp:t": 3});
    sessions
        .create_session(&key, object(initial))
        .await
        .unwrap();

    let client = raw_client(&url, &schema).await;
    let column_types: Vec<(String, String, String)> = client
        .query(
            "SELECT table_name::TEXT, column_name::TEXT, data_type::TEXT
               FROM information_schema.columns
              WHERE table_schema = $1
                AND table_name IN ('app_states', 'user_states', 'sessions', 'events')
                AND column_name IN ('state', 'update_time', 'event_data')
              ORDER BY table_name, column_name",
            &[&schema],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("app_states", "state", "jsonb"),
        ("app_states", "update_time", "timestamp without time zone"),
        ("events", "event_data", "jsonb"),
        ("sessions", "state", "jsonb"),
        ("sessions", "update_time", "timestamp without time zone"),
        ("user_states", "state", "jsonb"),
        ("user_states", "update_time", "timestamp without time zone"),
    ]
    .iter()
    .map(|(table, column, kind)| ((*table).into(), (*column).into(), (*kind).into()))
    .collect();
    assert_eq!(column_types, expected);

    let row = client
        .query_one(
            "SELECT (SELECT state FROM app_states WHERE app_name = 'a'),
                    (SELECT state FROM user_states WHERE app_name = 'a' AND user_id = 'u1'),
                    (SELECT state FROM sessions WHERE app_name = 'a' AND user_id = 'u1' AND id = 's1'),
                    (SELECT value FROM adk_internal_metadata WHERE key = 'schema_version')",
            &[],
        )
        .await
        .unwrap();
    let (app, user, session): (serde_json::Value, serde_json::Value, serde_json::Value) =
        (row.get(0), row.get(1), row.get(2));
    assert_eq!(app, serde_json::json!({"k": 1}));
    assert_eq!(user, serde_json::json!({"k": 2}));
    assert_eq!(session, serde_json::json!({"sk": null}));
    assert_eq!(row.get::<_, String>(3), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_written_by_google_adk_into_its_own_tables_is_read_and_continued() {
    let Some(url) = test_url() else {
        return;
    };
    let schema = fresh_schema_name("adk_first");
    let client = raw_client(&url, &schema).await;
    // What google-adk's DatabaseSessionService leaves on PostgreSQL (v1 schema), made first.
    client
        .batch_execute(
            "CREATE TABLE adk_internal_metadata (key VARCHAR(128) PRIMARY KEY, value VARCHAR(256) NOT NULL);
             INSERT INTO adk_internal_metadata VALUES ('schema_version', '1');
             CREATE TABLE app_states (app_name VARCHAR(128) PRIMARY KEY, state JSONB NOT NULL,
                 update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL);
             CREATE TABLE user_states (app_name VARCHAR(128), user_id VARCHAR(128), state JSONB NOT NULL,
                 update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (app_name, user_id));
             CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128),
                 state JSONB NOT NULL, create_time TIMESTAMP WITHOUT TIME ZONE NOT NULL,
                 update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (app_name, user_id, id));
             CREATE TABLE events (id VARCHAR(128), app_name VARCHAR(128), user_id VARCHAR(128),
                 session_id VARCHAR(128), invocation_id VARCHAR(256) NOT NULL,
                 timestamp TIMESTAMP WITHOUT TIME ZONE NOT NULL, event_data JSONB,
                 PRIMARY KEY (id, app_name, user_id, session_id),
                 FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id)
                     ON DELETE CASCADE);
             INSERT INTO app_states VALUES ('a', '{\"k\": 1, \"k2\": \"A\"}', '2026-01-02 03:04:05.000001');
             INSERT INTO user_states VALUES ('a', 'u1', '{\"k\": 2, \"k2\": \"U\"}', '2026-01-02 03:04:05.000001');
             INSERT INTO sessions VALUES ('a', 'u1', 's1', '{\"sk\": null, \"sk2\": \"S\"}',
                 '2026-01-02 03:04:05.000001', '2026-01-02 03:04:05.123456');
             INSERT INTO events VALUES ('e1', 'a', 'u1', 's1', 'i1', '2026-01-02 03:04:05.123456', '{}');",
        )
        .await
        .unwrap();

    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
    let key = SessionKey::new("a", "u1", "s1");
    let session = sessions.get_session(&key).await.unwrap().unwrap();
    assert_eq!(
        session.state,
        object(serde_json::json!({
            "sk": null, "sk2": "S", "user:k": 2, "user:k2": "U", "app:k": 1, "app:k2": "A"
        }))
    );
    assert_eq!(
        session.last_update_time.to_string(),
        "2026-01-02T03:04:05.123456Z"
    );

    // A turn continues from there, and ADK's own event row is left alone.
    let mut turn = State::from_loaded(
        sessions
            .load_turn(&key, &ThreadId::default())
            .await
            .unwrap(),
    );
    turn.set_value("user:k", serde_json::json!(3)).unwrap();
    sessions
        .commit_turn(&key, turn.to_commit(&ThreadId::default()))
        .await
        .unwrap();
    let user: serde_json::Value = client
        .query_one(
            "SELECT state FROM user_states WHERE app_name = 'a' AND user_id = 'u1'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(user, serde_json::json!({"k": 3, "k2": "U"}));
    let events: i64 = client
        .query_one("SELECT count(*) FROM events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(events, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adk_session_tables_of_another_schema_version_are_refused_with_the_version_named() {
    let Some(url) = test_url() else {
        return;
    };
    // Version 2 (a future google-adk), stamped in the metadata table.
    let schema = fresh_schema_name("adk_v2");
    raw_client(&url, &schema)
        .await
        .batch_execute(
            "CREATE TABLE adk_internal_metadata (key VARCHAR(128) PRIMARY KEY, value VARCHAR(256) NOT NULL);
             INSERT INTO adk_internal_metadata VALUES ('schema_version', '2');",
        )
        .await
        .unwrap();
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let error = PostgresSessionStore::connect_with(options.clone())
        .await
        .unwrap_err();
    let SessionStoreError::Backend(source) = &error else {
        panic!("expected a backend error, got {error}");
    };
    assert!(
        matches!(
            source.downcast_ref::<PostgresError>(),
            Some(PostgresError::AdkSchemaVersion { found }) if found == "2"
        ),
        "{error}"
    );
    assert!(error.to_string().contains("schema version `2`"), "{error}");
    // The storage does not read those tables, so it still connects.
    PostgresStorage::connect_with(options).await.unwrap();

    // Version 0 (legacy google-adk): session tables but no metadata table. Stamping it as
    // version 1 would let both sides misread it, so connecting refuses to migrate it.
    let schema = fresh_schema_name("adk_v0");
    raw_client(&url, &schema)
        .await
        .batch_execute(
            "CREATE TABLE sessions (app_name VARCHAR(128), user_id VARCHAR(128), id VARCHAR(128),
                 state JSONB, create_time TIMESTAMP, update_time TIMESTAMP,
                 PRIMARY KEY (app_name, user_id, id));
             CREATE TABLE events (id VARCHAR(128), app_name VARCHAR(128), user_id VARCHAR(128),
                 session_id VARCHAR(128), actions BYTEA, PRIMARY KEY (id, app_name, user_id, session_id));",
        )
        .await
        .unwrap();
    let options = PostgresOptions::from_url(&url)
        .unwrap()
        .schema(&schema)
        .unwrap();
    let error = PostgresSessionStore::connect_with(options)
        .await
        .unwrap_err();
    let message = format!("{error}: {:?}", std::error::Error::source(&error));
    assert!(message.contains("schema version 0"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_commit_applies_neither_its_state_nor_its_middleware_records() {
    let Some(sessions) = sessions_fresh("stale_records").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    let thread = ThreadId::default();
    sessions
        .create_session(&key, object(serde_json::json!({"step": 0})))
        .await
        .unwrap();
    let mut first = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    let mut second = State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
    first.set_value("step", serde_json::json!(1)).unwrap();
    sessions
        .commit_turn(&key, first.to_commit(&thread))
        .await
        .unwrap();

    second.set_value("step", serde_json::json!(2)).unwrap();
    second
        .set_value("user:seen", serde_json::json!(true))
        .unwrap();
    let mut commit = second.to_commit(&thread);
    commit.middleware = vec![MiddlewareStateWrite::Put(MiddlewareStateRecord {
        scope: RecordScope::Thread(thread.clone()),
        key: "planner".into(),
        version: 1,
        json: serde_json::json!({"plan": "second"}),
    })];
    let error = sessions.commit_turn(&key, commit).await.unwrap_err();
    assert!(
        matches!(&error, SessionStoreError::Stale { keys } if keys == &["step"]),
        "{error}"
    );

    let loaded = sessions.load_turn(&key, &thread).await.unwrap();
    assert_eq!(loaded.session, object(serde_json::json!({"step": 1})));
    assert!(loaded.user.is_empty());
    assert!(loaded.middleware.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_incremented_through_eight_pools_with_retries_lose_no_increment() {
    const STORES: usize = 8;
    const INCREMENTS: u64 = 15;
    let Some(options) = fresh_options("counters") else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "counted");
    let thread = ThreadId::default();
    let tasks: Vec<_> = (0..STORES)
        .map(|_| {
            let (options, key, thread) = (options.clone(), key.clone(), thread.clone());
            tokio::spawn(async move {
                // Its own pool, as another process would have.
                let sessions = PostgresSessionStore::connect_with(options.pool_size(2))
                    .await
                    .unwrap();
                let mut refused = 0_u64;
                for _ in 0..INCREMENTS {
                    loop {
                        let mut turn =
                            State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap());
                        for name in ["user:count", "count"] {
                            let count = turn.value(name).and_then(|n| n.as_u64()).unwrap_or(0);
                            turn.set_value(name, serde_json::json!(count + 1)).unwrap();
                        }
                        match sessions.commit_turn(&key, turn.to_commit(&thread)).await {
                            Ok(()) => break,
                            Err(error) if error.is_stale() => refused += 1,
                            Err(error) => panic!("{error}"),
                        }
                    }
                }
                refused
            })
        })
        .collect();
    let mut refused = 0;
    for task in tasks {
        refused += task.await.unwrap();
    }
    let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
    let state = sessions.get_session(&key).await.unwrap().unwrap().state;
    let total = STORES as u64 * INCREMENTS;
    assert_eq!(
        state["count"],
        serde_json::json!(total),
        "{refused} refusals"
    );
    assert_eq!(state["user:count"], serde_json::json!(total));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_deletes_its_middleware_records_and_a_new_one_starts_without_them() {
    let Some(sessions) = sessions_fresh("delete_records").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s-1");
    let record = |scope: RecordScope| {
        MiddlewareStateWrite::Put(MiddlewareStateRecord {
            scope,
            key: "planner::PlanState<alloc::vec::Vec<planner::Step>>".repeat(8),
            version: 3,
            json: serde_json::json!({"steps": 2}),
        })
    };
    let commit = TurnCommit {
        user: vec![StateWrite {
            name: "theme".into(),
            change: StateChange::Set(serde_json::json!("dark")),
            expected: None,
        }],
        middleware: vec![
            record(RecordScope::Session),
            record(RecordScope::Thread(ThreadId::default())),
        ],
        ..TurnCommit::default()
    };
    sessions.commit_turn(&key, commit).await.unwrap();
    let loaded = sessions
        .load_turn(&key, &ThreadId::default())
        .await
        .unwrap();
    assert_eq!(loaded.middleware.len(), 2);

    sessions.delete_session(&key).await.unwrap();
    let loaded = sessions
        .load_turn(&key, &ThreadId::default())
        .await
        .unwrap();
    assert!(loaded.middleware.is_empty());
    assert_eq!(
        loaded.user["theme"], "dark",
        "user state outlives the session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_longer_than_adks_128_characters_is_refused_whole_by_the_commit() {
    let Some(sessions) = sessions_fresh("long_id").await else {
        return;
    };
    let key = SessionKey::new("shop", "ada", "s".repeat(129));
    let mut turn = State::from_loaded(
        sessions
            .load_turn(&key, &ThreadId::default())
            .await
            .unwrap(),
    );
    turn.set_value("user:seen", serde_json::json!(true))
        .unwrap();
    let error = sessions
        .commit_turn(&key, turn.to_commit(&ThreadId::default()))
        .await
        .unwrap_err();
    let message = format!("{error}: {:?}", std::error::Error::source(&error));
    assert!(message.contains("value too long"), "{message}");
    assert!(
        sessions
            .user_state(&key.app, &key.user)
            .await
            .unwrap()
            .is_empty()
    );
}

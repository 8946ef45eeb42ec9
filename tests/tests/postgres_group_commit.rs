//! The PostgreSQL session store's group commit (issue 33): turns committing at once are sent
//! as one transaction, so the server flushes its log once for many turns, while each turn is
//! told its own result: a stale turn is refused with its stale keys and the others of its group
//! still commit, two commits of one session apply as if one after the other, and a turn
//! dropped while its commit is queued leaves the others whole.
//!
//! Which transaction wrote a row is its `xmin`: rows written by one transaction share it.
//! The tests run on a one-thread runtime and start their commits in one poll, so the commits
//! are all queued before the flusher runs.
//!
//! Each test uses its own schema in the database named by `ADK_TEST_POSTGRES_URL`; without it
//! the tests pass without checking anything and say so (see `adk_integration_tests::postgres_database`).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::ids::ThreadId;
use adk::postgres::{PostgresSessionStore, tokio_postgres};
use adk::state::{
    GetSessionConfig, SessionEvent, SessionKey, SessionStore, SessionStoreError, State,
    StateChange, StateWrite, TurnCommit,
};
use adk_integration_tests::postgres_database::{
    fresh_options, fresh_schema_name, schema_client, test_url,
};
use futures_util::FutureExt;
use futures_util::future::join_all;
use serde_json::{Map, Value, json};

/// The store and a plain connection to its schema.
async fn fresh(label: &str) -> Option<(PostgresSessionStore, tokio_postgres::Client)> {
    let url = test_url()?;
    let schema = fresh_schema_name(label);
    let options = fresh_options(label)?.schema(schema.clone()).unwrap();
    let sessions = PostgresSessionStore::connect_with(options).await.unwrap();
    let client = schema_client(&url, &schema).await;
    Some((sessions, client))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn keys(count: usize) -> Vec<SessionKey> {
    (0..count)
        .map(|n| SessionKey::new("shop", format!("user-{n}"), format!("s-{n}")))
        .collect()
}

/// Creates each session, loads it, and returns a commit that sets `turns` to 1,
/// `app:turn_<n>` to 1 and adds one event.
async fn one_turn_each(sessions: &PostgresSessionStore, keys: &[SessionKey]) -> Vec<TurnCommit> {
    let thread = ThreadId::default();
    let mut commits = Vec::new();
    for (n, key) in keys.iter().enumerate() {
        sessions.create_session(key, Map::new()).await.unwrap();
        let mut state = State::from_loaded(sessions.load_turn(key, &thread).await.unwrap());
        state.set_value("turns", json!(1)).unwrap();
        state.set_value(format!("app:turn_{n}"), json!(1)).unwrap();
        let mut commit = state.to_commit(&thread);
        commit.events = vec![SessionEvent::new("turn", "agent", jiff::Timestamp::now())];
        commits.push(commit);
    }
    commits
}

/// How many transactions last wrote the sessions rows of `keys`.
async fn transactions(client: &tokio_postgres::Client, keys: &[SessionKey]) -> usize {
    let ids: Vec<&str> = keys.iter().map(|key| key.session.as_str()).collect();
    let row = client
        .query_one(
            "SELECT COUNT(DISTINCT xmin::TEXT) FROM sessions WHERE id = ANY($1)",
            &[&ids],
        )
        .await
        .unwrap();
    usize::try_from(row.get::<_, i64>(0)).unwrap()
}

async fn assert_landed(sessions: &PostgresSessionStore, key: &SessionKey, n: usize) {
    let session = sessions
        .get_session_with(key, GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.state["turns"], json!(1), "session {n}");
    assert_eq!(session.events.len(), 1, "session {n}: one event");
    let app = sessions.app_state(&key.app).await.unwrap();
    assert_eq!(
        app[&format!("turn_{n}")],
        json!(1),
        "app key of session {n}"
    );
}

#[tokio::test]
async fn turns_of_many_sessions_committing_at_once_share_transactions_and_all_land() {
    let Some((sessions, client)) = fresh("group_many").await else {
        return;
    };
    let keys = keys(40);
    let commits = one_turn_each(&sessions, &keys).await;
    let results = join_all(
        keys.iter()
            .zip(commits)
            .map(|(key, commit)| sessions.commit_turn(key, commit)),
    )
    .await;
    for result in results {
        result.unwrap();
    }
    for (n, key) in keys.iter().enumerate() {
        assert_landed(&sessions, key, n).await;
    }
    let transactions = transactions(&client, &keys).await;
    assert!(
        transactions <= keys.len() / 4,
        "{} turns committed in {transactions} transactions",
        keys.len()
    );
}

#[tokio::test]
async fn a_stale_turn_in_a_group_is_refused_with_its_stale_keys_while_the_others_commit() {
    let Some((sessions, client)) = fresh("group_stale").await else {
        return;
    };
    let thread = ThreadId::default();
    let keys = keys(8);
    let mut commits = one_turn_each(&sessions, &keys).await;
    let stale_key = SessionKey::new("shop", "ada", "s-stale");
    sessions
        .create_session(&stale_key, object(json!({"app:mode": "a", "step": 0})))
        .await
        .unwrap();
    let mut stale = State::from_loaded(sessions.load_turn(&stale_key, &thread).await.unwrap());
    let mut first = State::from_loaded(sessions.load_turn(&stale_key, &thread).await.unwrap());
    first.set_value("app:mode", json!("b")).unwrap();
    sessions
        .commit_turn(&stale_key, first.to_commit(&thread))
        .await
        .unwrap();
    stale.set_value("step", json!(1)).unwrap();
    stale.set_value("app:mode", json!("c")).unwrap();
    let mut stale_commit = stale.to_commit(&thread);
    stale_commit.events = vec![SessionEvent::new("turn", "agent", jiff::Timestamp::now())];
    // The stale turn in the middle of the group: turns before and after it share its transaction.
    commits.insert(4, stale_commit);
    let mut all_keys = keys.clone();
    all_keys.insert(4, stale_key.clone());

    let mut results = join_all(
        all_keys
            .iter()
            .zip(commits)
            .map(|(key, commit)| sessions.commit_turn(key, commit)),
    )
    .await;
    let refused = results.remove(4).unwrap_err();
    assert!(
        matches!(&refused, SessionStoreError::Stale { keys } if keys == &["app:mode"]),
        "{refused}"
    );
    for result in results {
        result.unwrap();
    }
    for (n, key) in keys.iter().enumerate() {
        assert_landed(&sessions, key, n).await;
    }
    let loaded = sessions.load_turn(&stale_key, &thread).await.unwrap();
    assert_eq!(loaded.session, object(json!({"step": 0})));
    assert_eq!(loaded.app["mode"], json!("b"));
    let stale_session = sessions
        .get_session_with(&stale_key, GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert!(
        stale_session.events.is_empty(),
        "{:?}",
        stale_session.events
    );
    assert!(
        transactions(&client, &keys).await < keys.len(),
        "the others still share a transaction"
    );
}

#[tokio::test]
async fn two_commits_of_one_session_in_one_group_apply_as_if_one_after_the_other() {
    let Some((sessions, _client)) = fresh("group_one_session").await else {
        return;
    };
    let thread = ThreadId::default();
    let key = SessionKey::new("shop", "ada", "s-1");
    sessions
        .create_session(&key, object(json!({"a": 0, "b": 0, "app:n": 0})))
        .await
        .unwrap();
    let load = || async { State::from_loaded(sessions.load_turn(&key, &thread).await.unwrap()) };

    // Different keys: both apply, the second on top of the first.
    let (mut first, mut second) = (load().await, load().await);
    first.set_value("a", json!(1)).unwrap();
    second.set_value("b", json!(1)).unwrap();
    let mut commits = vec![first.to_commit(&thread), second.to_commit(&thread)];
    for commit in &mut commits {
        commit.events = vec![SessionEvent::new("turn", "agent", jiff::Timestamp::now())];
    }
    for result in join_all(
        commits
            .into_iter()
            .map(|commit| sessions.commit_turn(&key, commit)),
    )
    .await
    {
        result.unwrap();
    }
    let session = sessions
        .get_session_with(&key, GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.state["a"], json!(1));
    assert_eq!(session.state["b"], json!(1));
    assert_eq!(session.events.len(), 2);

    // One key, both loaded before either committed: the first queued wins, the second is
    // refused as stale, in the session's scope and in the app's.
    let (mut first, mut second) = (load().await, load().await);
    for (state, value) in [(&mut first, 2), (&mut second, 3)] {
        state.set_value("a", json!(value)).unwrap();
        state.set_value("app:n", json!(value)).unwrap();
    }
    let results = join_all(
        [first.to_commit(&thread), second.to_commit(&thread)]
            .map(|commit| sessions.commit_turn(&key, commit)),
    )
    .await;
    let mut results = results.into_iter();
    results.next().unwrap().unwrap();
    let refused = results.next().unwrap().unwrap_err();
    assert!(
        matches!(&refused, SessionStoreError::Stale { keys } if keys.contains(&"a".to_owned())),
        "{refused}"
    );
    let loaded = sessions.load_turn(&key, &thread).await.unwrap();
    assert_eq!(loaded.session["a"], json!(2));
    assert_eq!(loaded.app["n"], json!(2));
}

#[tokio::test]
async fn a_turn_dropped_while_its_commit_is_queued_leaves_the_others_of_its_group_whole() {
    let Some((sessions, client)) = fresh("group_dropped").await else {
        return;
    };
    let keys = keys(12);
    let mut commits = one_turn_each(&sessions, &keys).await;
    // The dropped turn's commit is queued (its first poll) and then its future is dropped,
    // before the flusher has sent anything.
    let dropped = commits.remove(0);
    assert!(
        sessions
            .commit_turn(&keys[0], dropped)
            .now_or_never()
            .is_none(),
        "a queued commit waits for the flusher"
    );
    let results = join_all(
        keys[1..]
            .iter()
            .zip(commits)
            .map(|(key, commit)| sessions.commit_turn(key, commit)),
    )
    .await;
    for result in results {
        result.unwrap();
    }
    for (n, key) in keys.iter().enumerate().skip(1) {
        assert_landed(&sessions, key, n).await;
    }
    // The dropped turn's commit is applied whole (with the others) or not at all.
    let session = sessions
        .get_session_with(&keys[0], GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    let app = sessions.app_state(&keys[0].app).await.unwrap();
    let applied = session.state.get("turns") == Some(&json!(1));
    assert_eq!(session.events.len(), usize::from(applied), "{session:?}");
    assert_eq!(app.get("turn_0") == Some(&json!(1)), applied, "{app:?}");
    assert!(transactions(&client, &keys[1..]).await < keys.len() - 1);
}

#[tokio::test]
async fn turns_writing_one_app_row_in_one_group_apply_in_order_each_checked_against_the_ones_before()
 {
    let Some((sessions, client)) = fresh("group_folded").await else {
        return;
    };
    let keys = keys(4);
    for key in &keys {
        sessions.create_session(key, Map::new()).await.unwrap();
    }
    let write = |name: &str, change: StateChange, expected: Option<Value>| StateWrite {
        name: name.into(),
        change,
        expected,
    };
    let app = |writes: Vec<StateWrite>| TurnCommit {
        app: writes,
        events: vec![SessionEvent::new("turn", "agent", jiff::Timestamp::now())],
        ..TurnCommit::default()
    };
    // Each commit expects what the ones before it in the group leave, as if it had loaded
    // after them; the last expects what was stored before the group, which the second changed.
    let commits = [
        app(vec![write("x", StateChange::Set(json!(1)), None)]),
        app(vec![
            write("x", StateChange::Delete, Some(json!(1))),
            write("y", StateChange::Set(json!(2)), None),
        ]),
        app(vec![write("x", StateChange::Set(json!(3)), None)]),
        app(vec![write("y", StateChange::Set(json!(4)), None)]),
    ];
    let mut results = join_all(
        keys.iter()
            .zip(commits)
            .map(|(key, commit)| sessions.commit_turn(key, commit)),
    )
    .await;
    let refused = results.pop().unwrap().unwrap_err();
    assert!(
        matches!(&refused, SessionStoreError::Stale { keys } if keys == &["app:y"]),
        "{refused}"
    );
    for result in results {
        result.unwrap();
    }
    let stored = sessions.app_state(&keys[0].app).await.unwrap();
    assert_eq!(stored, object(json!({"x": 3, "y": 2})));
    assert_eq!(
        transactions(&client, &keys[..3]).await,
        1,
        "one transaction"
    );
}

// A group's events go in one statement: one turn's event id that another turn of the group
// also uses fails that statement, and each turn is then sent on its own, so only the second
// turn with the id fails, with the database's error, and the others commit.
#[tokio::test]
async fn a_turn_whose_event_id_another_turn_of_its_group_took_fails_alone() {
    let Some((sessions, _client)) = fresh("group_event_id").await else {
        return;
    };
    let keys = keys(2);
    let mut commits = one_turn_each(&sessions, &keys).await;
    // A second turn of session 1, loaded before the first commits and writing another key,
    // whose event reuses the id of the first turn's (an event's key is its id in its session).
    let thread = ThreadId::default();
    let mut second = State::from_loaded(sessions.load_turn(&keys[1], &thread).await.unwrap());
    second.set_value("other", json!(1)).unwrap();
    let mut second = second.to_commit(&thread);
    let mut event = SessionEvent::new("turn", "agent", jiff::Timestamp::now());
    event.id.clone_from(&commits[1].events[0].id);
    second.events = vec![event];
    commits.push(second);
    let results = join_all(
        [&keys[0], &keys[1], &keys[1]]
            .into_iter()
            .zip(commits)
            .map(|(key, commit)| sessions.commit_turn(key, commit)),
    )
    .await;
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(results[1].is_ok(), "{:?}", results[1]);
    assert!(
        matches!(&results[2], Err(SessionStoreError::Backend(_))),
        "{:?}",
        results[2]
    );
    assert_landed(&sessions, &keys[0], 0).await;
    assert_landed(&sessions, &keys[1], 1).await;
    let session = sessions
        .get_session_with(&keys[1], GetSessionConfig::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.state.get("other"), None, "{:?}", session.state);
}

/// Logs every `UPDATE` statement on the session and user tables (one row a statement, however
/// many rows it wrote), so a test sees how many statements wrote them.
async fn log_update_statements(client: &tokio_postgres::Client) {
    client
        .batch_execute(
            "CREATE TABLE update_statements (table_name TEXT NOT NULL);
             CREATE FUNCTION log_update_statement() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN INSERT INTO update_statements VALUES (TG_TABLE_NAME); RETURN NULL; END $$;
             CREATE TRIGGER log_sessions AFTER UPDATE ON sessions
                 FOR EACH STATEMENT EXECUTE FUNCTION log_update_statement();
             CREATE TRIGGER log_user_states AFTER UPDATE ON user_states
                 FOR EACH STATEMENT EXECUTE FUNCTION log_update_statement();",
        )
        .await
        .unwrap();
}

/// How many `UPDATE` statements that committed wrote `table`.
async fn update_statements(client: &tokio_postgres::Client, table: &str) -> i64 {
    client
        .query_one(
            "SELECT COUNT(*) FROM update_statements WHERE table_name = $1",
            &[&table],
        )
        .await
        .unwrap()
        .get(0)
}

/// Creates each session with `state` and loads it.
async fn loaded_sessions(
    sessions: &PostgresSessionStore,
    keys: &[SessionKey],
    state: &Value,
) -> Vec<State> {
    let thread = ThreadId::default();
    let mut loaded = Vec::new();
    for key in keys {
        sessions
            .create_session(key, object(state.clone()))
            .await
            .unwrap();
        loaded.push(State::from_loaded(
            sessions.load_turn(key, &thread).await.unwrap(),
        ));
    }
    loaded
}

/// Commits every loaded turn at once, each setting `step` and `user:seen` to 1 after `also`,
/// and returns each turn's result.
async fn commit_each_at_once(
    sessions: &PostgresSessionStore,
    keys: &[SessionKey],
    loaded: Vec<State>,
    also: impl Fn(&mut State),
) -> Vec<Result<(), SessionStoreError>> {
    let thread = ThreadId::default();
    let commits = loaded.into_iter().map(|mut state| {
        also(&mut state);
        state.set_value("step", json!(1)).unwrap();
        state.set_value("user:seen", json!(1)).unwrap();
        state.to_commit(&thread)
    });
    join_all(
        keys.iter()
            .zip(commits)
            .map(|(key, commit)| sessions.commit_turn(key, commit)),
    )
    .await
}

/// Asserts that session `n`'s turn landed: `step` and its user's `seen` are 1.
async fn assert_stepped(sessions: &PostgresSessionStore, key: &SessionKey, n: usize) {
    let loaded = sessions.load_turn(key, &ThreadId::default()).await.unwrap();
    assert_eq!(loaded.session, object(json!({"step": 1})), "session {n}");
    assert_eq!(loaded.user, object(json!({"seen": 1})), "session {n}");
}

// Turns of different sessions in one group: their session rows are written by one statement
// and their users' rows by another, each row still checked against what its turn loaded.
#[tokio::test]
async fn a_group_writes_its_sessions_rows_in_one_statement_and_its_users_rows_in_another() {
    let Some((sessions, client)) = fresh("group_rows").await else {
        return;
    };
    let keys = keys(8);
    let state = json!({"step": 0, "gone": true, "user:seen": 0});
    let loaded = loaded_sessions(&sessions, &keys, &state).await;
    log_update_statements(&client).await;
    let results = commit_each_at_once(&sessions, &keys, loaded, |state| {
        state.delete("gone");
    })
    .await;
    for (n, result) in results.into_iter().enumerate() {
        result.unwrap();
        assert_stepped(&sessions, &keys[n], n).await;
    }
    assert_eq!(update_statements(&client, "sessions").await, 1);
    assert_eq!(update_statements(&client, "user_states").await, 1);
}

// A session key and a user key gone stale in a group written a statement a scope: the group
// is sent again a statement a row, which names each stale turn with its keys; the others
// commit together and the stale turns write nothing.
#[tokio::test]
async fn stale_session_and_user_keys_in_a_group_refuse_only_their_turns() {
    let Some((sessions, client)) = fresh("group_rows_stale").await else {
        return;
    };
    let thread = ThreadId::default();
    let keys = keys(8);
    let state = json!({"step": 0, "user:seen": 0});
    let loaded = loaded_sessions(&sessions, &keys, &state).await;
    // Sessions 2 and 5 move on after their turns loaded: 2's `step`, 5's user's `user:seen`.
    for (n, name) in [(2, "step"), (5, "user:seen")] {
        let mut other = State::from_loaded(sessions.load_turn(&keys[n], &thread).await.unwrap());
        other.set_value(name, json!(9)).unwrap();
        sessions
            .commit_turn(&keys[n], other.to_commit(&thread))
            .await
            .unwrap();
    }
    let results = commit_each_at_once(&sessions, &keys, loaded, |_| {}).await;
    for (n, result) in results.into_iter().enumerate() {
        let loaded = sessions.load_turn(&keys[n], &thread).await.unwrap();
        match n {
            2 => {
                assert!(
                    matches!(&result, Err(SessionStoreError::Stale { keys }) if keys == &["step"]),
                    "{result:?}"
                );
                assert_eq!(loaded.session, object(json!({"step": 9})));
                assert_eq!(loaded.user, object(json!({"seen": 0})));
            }
            5 => {
                assert!(
                    matches!(&result, Err(SessionStoreError::Stale { keys }) if keys == &["user:seen"]),
                    "{result:?}"
                );
                assert_eq!(loaded.session, object(json!({"step": 0})));
                assert_eq!(loaded.user, object(json!({"seen": 9})));
            }
            _ => {
                result.unwrap();
                assert_stepped(&sessions, &keys[n], n).await;
            }
        }
    }
    let committed: Vec<SessionKey> = [0, 1, 3, 4, 6, 7].map(|n| keys[n].clone()).into();
    assert_eq!(
        transactions(&client, &committed).await,
        1,
        "the others in one transaction"
    );
}

// A session deleted after its turn loaded, committed in a group written a statement a scope:
// its row is missing, so the session statement falls short and the group is sent again a
// statement a row; that turn then runs the locking transaction, which refuses it as a turn
// alone is refused (the `step` it loaded went with the session), and the others commit
// together.
#[tokio::test]
async fn a_session_deleted_under_its_turn_in_a_group_refuses_only_that_turn() {
    let Some((sessions, client)) = fresh("group_rows_deleted").await else {
        return;
    };
    let thread = ThreadId::default();
    let keys = keys(8);
    let state = json!({"step": 0, "user:seen": 0});
    let loaded = loaded_sessions(&sessions, &keys, &state).await;
    sessions.delete_session(&keys[3]).await.unwrap();
    let results = commit_each_at_once(&sessions, &keys, loaded, |_| {}).await;
    for (n, result) in results.into_iter().enumerate() {
        let loaded = sessions.load_turn(&keys[n], &thread).await.unwrap();
        if n == 3 {
            assert!(
                matches!(&result, Err(SessionStoreError::Stale { keys }) if keys == &["step"]),
                "{result:?}"
            );
            assert!(loaded.session.is_empty(), "{:?}", loaded.session);
            assert_eq!(loaded.user, object(json!({"seen": 0})));
        } else {
            result.unwrap();
            assert_stepped(&sessions, &keys[n], n).await;
        }
    }
    let others: Vec<SessionKey> = [0, 1, 2, 4, 5, 6, 7].map(|n| keys[n].clone()).into();
    assert_eq!(
        transactions(&client, &others).await,
        1,
        "the others in one transaction"
    );
}

// A group whose session rows are locked one by one, in key order, waits for a row another
// transaction holds, and checks and writes that row as the holder left it: the holder's other
// key stays, and every turn of the group lands.
#[tokio::test]
async fn a_group_that_waited_for_a_session_row_writes_it_as_the_holder_left_it() {
    let Some((sessions, client)) = fresh("group_waited").await else {
        return;
    };
    let keys = keys(4);
    let state = json!({"step": 0, "user:seen": 0});
    let loaded = loaded_sessions(&sessions, &keys, &state).await;
    client.batch_execute("BEGIN").await.unwrap();
    client
        .batch_execute("UPDATE sessions SET state = state || '{\"other\": 1}' WHERE id = 's-2'")
        .await
        .unwrap();
    let committing = tokio::spawn({
        let (sessions, keys) = (sessions.clone(), keys.clone());
        async move { commit_each_at_once(&sessions, &keys, loaded, |_| {}).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !committing.is_finished(),
        "the group did not wait for the session row another transaction holds"
    );
    client.batch_execute("COMMIT").await.unwrap();
    for (n, result) in committing.await.unwrap().into_iter().enumerate() {
        result.unwrap_or_else(|error| panic!("turn {n}: {error}"));
    }
    for (n, key) in keys.iter().enumerate() {
        if n == 2 {
            let loaded = sessions.load_turn(key, &ThreadId::default()).await.unwrap();
            assert_eq!(loaded.session, object(json!({"step": 1, "other": 1})));
            assert_eq!(loaded.user, object(json!({"seen": 1})));
        } else {
            assert_stepped(&sessions, key, n).await;
        }
    }
}

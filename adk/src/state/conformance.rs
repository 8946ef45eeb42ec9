//! A conformance suite for [`SessionStore`] implementations: every rule of the contract, run
//! against your store unchanged (the in-memory and SQLite stores run it in adk's own tests).
//!
//! Each rule uses a fresh app name (a UUID), so the suite can run against a shared database and
//! ignores what it did not write. [`check`] runs every rule and stops at the first failure;
//! [`RULES`] names them. Run it on a tokio runtime with its timer enabled (`#[tokio::test]`
//! has one): the listing rule waits a few milliseconds between sessions so their update times
//! differ.
//!
//! ```
//! use adk::state::InMemorySessionStore;
//! use adk::state::conformance;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let passed = conformance::check(&InMemorySessionStore::new()).await.unwrap();
//! assert_eq!(passed, conformance::RULES);
//! # });
//! ```

mod contention;

use std::fmt;

use futures_util::future::join_all;
use serde_json::{Map, Value, json};

use super::store::{SessionKey, SessionStore, TurnCommit};
use super::{EventContent, EventPart, GetSessionConfig, SessionEvent, SessionStoreError, State};
use crate::ids::{AppName, ThreadId, UserId};
use crate::middleware_state::{MiddlewareStateRecord, MiddlewareStateWrite, RecordScope};

/// The rules [`check`] verifies, in the order it runs them (the last eight check the contention
/// policies of [`contention`](crate::state::contention)).
pub const RULES: &[&str] = &[
    "create_session_drops_temp_keys_and_returns_the_merged_state",
    "create_session_with_a_taken_id_is_refused_as_already_exists",
    "get_session_of_a_missing_session_is_none",
    "app_and_user_state_are_stored_without_their_prefix",
    "user_state_is_shared_by_the_users_sessions_only",
    "app_state_is_shared_by_every_user_of_the_app_only",
    "list_sessions_filters_by_user_and_orders_by_last_update",
    "delete_session_keeps_app_and_user_state",
    "a_commit_applies_app_user_and_session_writes_together",
    "null_is_stored_as_a_value_and_a_delete_removes_the_key",
    "temp_keys_are_never_persisted",
    "a_commit_to_a_missing_session_creates_it",
    "a_stale_overwrite_is_refused_and_applies_nothing",
    "concurrent_commits_to_different_keys_all_land",
    "concurrent_overwrites_of_one_key_let_exactly_one_win",
    "middleware_records_load_by_session_and_thread_scope",
    "copy_thread_records_replaces_the_target_threads_records",
    "copying_a_thread_onto_itself_keeps_its_records",
    "empty_and_malformed_thread_ids_are_refused_before_anything_is_written",
    "a_commit_appends_its_events_with_its_state_and_reads_them_back_whole",
    "a_refused_commit_appends_no_events",
    "event_windows_return_the_recent_events_and_those_at_or_after_a_time",
    "deleting_a_session_deletes_its_events",
    "a_counter_merge_adds_to_the_value_stored_at_commit_and_is_never_stale",
    "concurrent_counter_merges_all_land_and_none_is_refused",
    "last_writer_wins_is_never_stale_and_the_later_commit_wins",
    "union_and_max_merge_into_the_value_stored_at_commit",
    "a_user_merge_function_sees_the_value_stored_at_commit",
    "a_merge_the_stored_value_cannot_take_is_refused_and_applies_nothing",
    "a_stale_refusal_names_every_conflicting_key",
    "merges_outside_a_turn_apply_to_the_stored_value",
];

/// A rule the store broke.
#[derive(Debug)]
pub struct ConformanceFailure {
    /// The rule, one of [`RULES`].
    pub rule: &'static str,
    /// What was expected and what was found, or the store's error.
    pub message: String,
}

impl fmt::Display for ConformanceFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "session store rule `{}` failed: {}",
            self.rule, self.message
        )
    }
}

impl std::error::Error for ConformanceFailure {}

/// Runs every rule of [`RULES`] against `store`, returning the rules passed.
///
/// # Errors
///
/// The first rule the store broke.
pub async fn check(store: &impl SessionStore) -> Result<Vec<&'static str>, ConformanceFailure> {
    let mut passed = Vec::new();
    for &rule in RULES {
        let mut run = Run {
            rule,
            app: AppName::from(format!("conformance-{}", uuid::Uuid::now_v7())),
        };
        run.rule(store).await?;
        passed.push(rule);
    }
    Ok(passed)
}

struct Run {
    rule: &'static str,
    app: AppName,
}

fn map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

impl Run {
    fn key(&self, user: &str, session: &str) -> SessionKey {
        SessionKey::new(self.app.clone(), user, session)
    }

    fn fail(&self, message: impl Into<String>) -> ConformanceFailure {
        ConformanceFailure {
            rule: self.rule,
            message: message.into(),
        }
    }

    fn ok<T>(&self, result: Result<T, SessionStoreError>) -> Result<T, ConformanceFailure> {
        result.map_err(|error| self.fail(format!("the store failed: {error}")))
    }

    fn expect_eq<T: PartialEq + fmt::Debug>(
        &self,
        what: &str,
        expected: T,
        found: T,
    ) -> Result<(), ConformanceFailure> {
        if expected == found {
            Ok(())
        } else {
            Err(self.fail(format!("{what}: expected {expected:?}, found {found:?}")))
        }
    }

    async fn state_of(
        &self,
        store: &impl SessionStore,
        key: &SessionKey,
    ) -> Result<Map<String, Value>, ConformanceFailure> {
        match self.ok(store.get_session(key).await)? {
            Some(session) => Ok(session.state),
            None => Err(self.fail(format!("session {key} is missing"))),
        }
    }

    /// A turn's state as loaded now, for building commits the way the runner does.
    async fn turn(
        &self,
        store: &impl SessionStore,
        key: &SessionKey,
    ) -> Result<State, ConformanceFailure> {
        Ok(State::from_loaded(
            self.ok(store.load_turn(key, &ThreadId::default()).await)?,
        ))
    }

    async fn commit(
        &self,
        store: &impl SessionStore,
        key: &SessionKey,
        state: &State,
    ) -> Result<(), ConformanceFailure> {
        self.ok(store
            .commit_turn(key, state.to_commit(&ThreadId::default()))
            .await)
    }

    fn set(&self, state: &mut State, key: &str, value: Value) -> Result<(), ConformanceFailure> {
        state
            .set_value(key, value)
            .map_err(|error| self.fail(error.to_string()))
    }

    async fn rule(&mut self, store: &impl SessionStore) -> Result<(), ConformanceFailure> {
        let key = self.key("u1", "s1");
        match self.rule {
            "create_session_drops_temp_keys_and_returns_the_merged_state" => {
                let initial = map(json!({"sk": 1, "user:uk": 2, "app:ak": 3, "temp:tk": 4}));
                let created = self.ok(store.create_session(&key, initial).await)?;
                let expected = map(json!({"sk": 1, "user:uk": 2, "app:ak": 3}));
                self.expect_eq("created state", &expected, &created.state)?;
                self.expect_eq("stored state", expected, self.state_of(store, &key).await?)
            }
            "create_session_with_a_taken_id_is_refused_as_already_exists" => {
                self.ok(store.create_session(&key, map(json!({"a": 1}))).await)?;
                match store.create_session(&key, map(json!({"a": 2}))).await {
                    Err(SessionStoreError::AlreadyExists { .. }) => {}
                    other => {
                        return Err(self.fail(format!("expected AlreadyExists, got {other:?}")));
                    }
                }
                self.expect_eq(
                    "state after the refused create",
                    map(json!({"a": 1})),
                    self.state_of(store, &key).await?,
                )
            }
            "get_session_of_a_missing_session_is_none" => {
                let found = self.ok(store.get_session(&key).await)?;
                self.expect_eq("missing session", None, found)
            }
            "app_and_user_state_are_stored_without_their_prefix" => {
                let initial = map(json!({"user:theme": "dark", "app:motd": "hi"}));
                self.ok(store.create_session(&key, initial).await)?;
                self.expect_eq(
                    "user state",
                    map(json!({"theme": "dark"})),
                    self.ok(store.user_state(&key.app, &key.user).await)?,
                )?;
                self.expect_eq(
                    "app state",
                    map(json!({"motd": "hi"})),
                    self.ok(store.app_state(&key.app).await)?,
                )
            }
            "user_state_is_shared_by_the_users_sessions_only" => {
                self.ok(store
                    .create_session(&key, map(json!({"user:lang": "fr"})))
                    .await)?;
                let sibling = self.key("u1", "s2");
                let created = self.ok(store.create_session(&sibling, Map::new()).await)?;
                self.expect_eq(
                    "sibling session",
                    Some(&json!("fr")),
                    created.state.get("user:lang"),
                )?;
                let stranger = self.key("u2", "s3");
                let created = self.ok(store.create_session(&stranger, Map::new()).await)?;
                self.expect_eq(
                    "another user's session",
                    None,
                    created.state.get("user:lang"),
                )
            }
            "app_state_is_shared_by_every_user_of_the_app_only" => {
                self.ok(store
                    .create_session(&key, map(json!({"app:flag": true})))
                    .await)?;
                let other_user = self.key("u2", "s2");
                let created = self.ok(store.create_session(&other_user, Map::new()).await)?;
                self.expect_eq(
                    "another user",
                    Some(&json!(true)),
                    created.state.get("app:flag"),
                )?;
                let other_app =
                    SessionKey::new(format!("{}-other", self.app), UserId::from("u1"), "s1");
                let created = self.ok(store.create_session(&other_app, Map::new()).await)?;
                self.expect_eq("another app", None, created.state.get("app:flag"))
            }
            "list_sessions_filters_by_user_and_orders_by_last_update" => {
                let (a, b, c) = (
                    self.key("u1", "a"),
                    self.key("u1", "b"),
                    self.key("u2", "c"),
                );
                for session in [&a, &b, &c] {
                    self.ok(store
                        .create_session(session, map(json!({"user:x": 1})))
                        .await)?;
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                let mut turn = self.turn(store, &a).await?;
                self.set(&mut turn, "touched", json!(true))?;
                self.commit(store, &a, &turn).await?;
                let ids = |sessions: Vec<super::Session>| {
                    sessions
                        .into_iter()
                        .map(|session| session.key.session.to_string())
                        .collect::<Vec<_>>()
                };
                let mine = ids(self.ok(store.list_sessions(&key.app, Some(&key.user)).await)?);
                self.expect_eq("u1's sessions", vec!["b".to_owned(), "a".to_owned()], mine)?;
                let all = self.ok(store.list_sessions(&key.app, None).await)?;
                if let Some(listed) = all.iter().find(|session| session.key == c) {
                    self.expect_eq(
                        "listed merged state",
                        Some(&json!(1)),
                        listed.state.get("user:x"),
                    )?;
                }
                self.expect_eq(
                    "all sessions",
                    vec!["b".to_owned(), "c".to_owned(), "a".to_owned()],
                    ids(all),
                )
            }
            "delete_session_keeps_app_and_user_state" => {
                let initial = map(json!({"s": 1, "user:u": 2, "app:a": 3}));
                self.ok(store.create_session(&key, initial).await)?;
                self.ok(store.delete_session(&key).await)?;
                self.ok(store.delete_session(&key).await)?;
                self.expect_eq(
                    "deleted session",
                    None,
                    self.ok(store.get_session(&key).await)?,
                )?;
                self.expect_eq(
                    "user state",
                    map(json!({"u": 2})),
                    self.ok(store.user_state(&key.app, &key.user).await)?,
                )?;
                self.expect_eq(
                    "app state",
                    map(json!({"a": 3})),
                    self.ok(store.app_state(&key.app).await)?,
                )
            }
            "a_commit_applies_app_user_and_session_writes_together" => {
                self.ok(store.create_session(&key, map(json!({"keep": 0}))).await)?;
                let mut turn = self.turn(store, &key).await?;
                self.set(&mut turn, "app:a", json!(1))?;
                self.set(&mut turn, "user:u", json!([1, 2]))?;
                self.set(&mut turn, "s", json!({"deep": true}))?;
                self.commit(store, &key, &turn).await?;
                self.expect_eq(
                    "state after the commit",
                    map(json!({"keep": 0, "s": {"deep": true}, "user:u": [1, 2], "app:a": 1})),
                    self.state_of(store, &key).await?,
                )
            }
            "null_is_stored_as_a_value_and_a_delete_removes_the_key" => {
                self.ok(store
                    .create_session(&key, map(json!({"gone": 1, "user:gone": 2})))
                    .await)?;
                let mut turn = self.turn(store, &key).await?;
                self.set(&mut turn, "nothing", Value::Null)?;
                self.set(&mut turn, "user:nothing", Value::Null)?;
                turn.delete("gone");
                turn.delete("user:gone");
                self.commit(store, &key, &turn).await?;
                self.expect_eq(
                    "state",
                    map(json!({"nothing": null, "user:nothing": null})),
                    self.state_of(store, &key).await?,
                )
            }
            "temp_keys_are_never_persisted" => {
                self.ok(store.create_session(&key, map(json!({"temp:a": 1}))).await)?;
                let mut turn = self.turn(store, &key).await?;
                self.set(&mut turn, "temp:b", json!(2))?;
                self.set(&mut turn, "kept", json!(3))?;
                self.commit(store, &key, &turn).await?;
                self.expect_eq(
                    "state",
                    map(json!({"kept": 3})),
                    self.state_of(store, &key).await?,
                )?;
                let loaded = self.ok(store.load_turn(&key, &ThreadId::default()).await)?;
                self.expect_eq(
                    "loaded session state",
                    map(json!({"kept": 3})),
                    loaded.session,
                )
            }
            "a_commit_to_a_missing_session_creates_it" => {
                let mut turn = self.turn(store, &key).await?;
                self.set(&mut turn, "first", json!(1))?;
                self.commit(store, &key, &turn).await?;
                self.expect_eq(
                    "state",
                    map(json!({"first": 1})),
                    self.state_of(store, &key).await?,
                )
            }
            "a_stale_overwrite_is_refused_and_applies_nothing" => {
                self.ok(store.create_session(&key, map(json!({"x": 0}))).await)?;
                let mut first = self.turn(store, &key).await?;
                let mut second = self.turn(store, &key).await?;
                self.set(&mut first, "x", json!("first"))?;
                self.commit(store, &key, &first).await?;
                self.set(&mut second, "x", json!("second"))?;
                self.set(&mut second, "user:y", json!("second"))?;
                self.set(&mut second, "app:z", json!("second"))?;
                match store
                    .commit_turn(&key, second.to_commit(&ThreadId::default()))
                    .await
                {
                    Err(SessionStoreError::Stale { keys }) => {
                        self.expect_eq("stale keys", vec!["x".to_owned()], keys)?;
                    }
                    other => return Err(self.fail(format!("expected Stale, got {other:?}"))),
                }
                self.expect_eq(
                    "state after the refusal",
                    map(json!({"x": "first"})),
                    self.state_of(store, &key).await?,
                )
            }
            "concurrent_commits_to_different_keys_all_land" => {
                self.ok(store.create_session(&key, Map::new()).await)?;
                let mut turns = Vec::new();
                for index in 0..16 {
                    let mut turn = self.turn(store, &key).await?;
                    self.set(&mut turn, &format!("k{index}"), json!(index))?;
                    self.set(&mut turn, &format!("user:k{index}"), json!(index))?;
                    turns.push(turn);
                }
                let commits = turns
                    .iter()
                    .map(|turn| store.commit_turn(&key, turn.to_commit(&ThreadId::default())));
                for result in join_all(commits).await {
                    self.ok(result)?;
                }
                let state = self.state_of(store, &key).await?;
                self.expect_eq("keys landed", 32, state.len())
            }
            "concurrent_overwrites_of_one_key_let_exactly_one_win" => {
                self.ok(store.create_session(&key, map(json!({"n": 0}))).await)?;
                let mut turns = Vec::new();
                for index in 0..16 {
                    let mut turn = self.turn(store, &key).await?;
                    self.set(&mut turn, "n", json!(index + 1))?;
                    self.set(&mut turn, &format!("side{index}"), json!(index))?;
                    turns.push(turn);
                }
                let commits = turns
                    .iter()
                    .map(|turn| store.commit_turn(&key, turn.to_commit(&ThreadId::default())));
                let results = join_all(commits).await;
                let winners: Vec<usize> = results
                    .iter()
                    .enumerate()
                    .filter(|(_, result)| result.is_ok())
                    .map(|(index, _)| index)
                    .collect();
                for result in &results {
                    if let Err(error) = result
                        && !error.is_stale()
                    {
                        return Err(self.fail(format!("expected Stale, got {error}")));
                    }
                }
                self.expect_eq("winning commits", 1, winners.len())?;
                let winner = winners[0];
                self.expect_eq(
                    "state",
                    map(json!({"n": winner + 1, format!("side{winner}"): winner})),
                    self.state_of(store, &key).await?,
                )
            }
            "middleware_records_load_by_session_and_thread_scope" => {
                let main = ThreadId::default();
                let other = ThreadId::from("other");
                let record = |scope: RecordScope, key: &str, version: u32| MiddlewareStateRecord {
                    scope,
                    key: key.to_owned(),
                    version,
                    json: json!({"v": version}),
                };
                let mut commit = TurnCommit {
                    thread: main.clone(),
                    ..TurnCommit::default()
                };
                commit.middleware = vec![
                    MiddlewareStateWrite::Put(record(RecordScope::Session, "shared", 1)),
                    MiddlewareStateWrite::Put(record(RecordScope::Thread(main.clone()), "mine", 2)),
                    MiddlewareStateWrite::Put(record(
                        RecordScope::Thread(other.clone()),
                        "theirs",
                        3,
                    )),
                    MiddlewareStateWrite::Put(record(RecordScope::Thread(main.clone()), "gone", 4)),
                    MiddlewareStateWrite::Delete {
                        scope: RecordScope::Thread(main.clone()),
                        key: "gone".to_owned(),
                    },
                ];
                self.ok(store.commit_turn(&key, commit).await)?;
                let mut loaded = self.ok(store.load_turn(&key, &main).await)?.middleware;
                loaded.sort_by(|left, right| left.key.cmp(&right.key));
                self.expect_eq(
                    "main thread's records",
                    vec![
                        record(RecordScope::Thread(main.clone()), "mine", 2),
                        record(RecordScope::Session, "shared", 1),
                    ],
                    loaded,
                )
            }
            "copy_thread_records_replaces_the_target_threads_records" => {
                let (from, to) = (ThreadId::from("from"), ThreadId::from("to"));
                let put = |thread: &ThreadId, key: &str| {
                    MiddlewareStateWrite::Put(MiddlewareStateRecord {
                        scope: RecordScope::Thread(thread.clone()),
                        key: key.to_owned(),
                        version: 1,
                        json: json!(key),
                    })
                };
                let commit = TurnCommit {
                    middleware: vec![put(&from, "copied"), put(&to, "replaced")],
                    ..TurnCommit::default()
                };
                self.ok(store.commit_turn(&key, commit).await)?;
                self.ok(store.copy_thread_records(&key, &from, &to).await)?;
                let loaded = self.ok(store.load_turn(&key, &to).await)?.middleware;
                let keys: Vec<_> = loaded.iter().map(|record| record.key.as_str()).collect();
                self.expect_eq("the target thread's records", vec!["copied"], keys)?;
                let source = self.ok(store.load_turn(&key, &from).await)?.middleware;
                self.expect_eq("the source thread's records", 1, source.len())
            }
            "copying_a_thread_onto_itself_keeps_its_records" => {
                // A store that clears the target before copying the source loses the thread.
                let thread = ThreadId::from("draft");
                let kept = MiddlewareStateRecord {
                    scope: RecordScope::Thread(thread.clone()),
                    key: "planner".to_owned(),
                    version: 1,
                    json: json!({"steps": 3}),
                };
                let commit = TurnCommit {
                    thread: thread.clone(),
                    middleware: vec![MiddlewareStateWrite::Put(kept.clone())],
                    ..TurnCommit::default()
                };
                self.ok(store.commit_turn(&key, commit).await)?;
                self.ok(store.copy_thread_records(&key, &thread, &thread).await)?;
                let loaded = self.ok(store.load_turn(&key, &thread).await)?.middleware;
                self.expect_eq(
                    "the thread's records after copying it onto itself",
                    vec![kept],
                    loaded,
                )
            }
            "empty_and_malformed_thread_ids_are_refused_before_anything_is_written" => {
                let good = ThreadId::default();
                for bad in ["", "nul\0byte", &"x".repeat(ThreadId::MAX_LEN + 1)] {
                    let bad = ThreadId::from(bad);
                    let refused = |result: Result<_, SessionStoreError>, call: &str| match result {
                        Err(SessionStoreError::InvalidThreadId(_)) => Ok(()),
                        other => Err(self.fail(format!(
                            "{call} with thread {:?}: expected InvalidThreadId, got {:?}",
                            bad.as_str(),
                            other.map(|_| ())
                        ))),
                    };
                    refused(store.load_turn(&key, &bad).await.map(|_| ()), "load_turn")?;
                    let mut turn = self.turn(store, &key).await?;
                    self.set(&mut turn, "k", json!(1))?;
                    refused(
                        store.commit_turn(&key, turn.to_commit(&bad)).await,
                        "commit_turn",
                    )?;
                    let record = MiddlewareStateRecord {
                        scope: RecordScope::Thread(bad.clone()),
                        key: "planner".to_owned(),
                        version: 1,
                        json: json!(1),
                    };
                    let commit = TurnCommit {
                        middleware: vec![MiddlewareStateWrite::Put(record)],
                        ..TurnCommit::default()
                    };
                    refused(
                        store.commit_turn(&key, commit).await,
                        "commit_turn of a record",
                    )?;
                    refused(
                        store.copy_thread_records(&key, &good, &bad).await,
                        "copy_thread_records",
                    )?;
                }
                self.expect_eq(
                    "the session after the refused calls",
                    None,
                    self.ok(store.get_session(&key).await)?,
                )
            }
            "a_commit_appends_its_events_with_its_state_and_reads_them_back_whole" => {
                let events = sample_events(&key);
                let mut turn = self.turn(store, &key).await?;
                self.set(&mut turn, "user:seen", json!(true))?;
                let mut commit = turn.to_commit(&ThreadId::default());
                commit.events = events.clone();
                self.ok(store.commit_turn(&key, commit).await)?;
                let read = self.ok(store
                    .get_session_with(&key, GetSessionConfig::default())
                    .await)?;
                let Some(read) = read else {
                    return Err(self.fail("the session is missing"));
                };
                self.expect_eq(
                    "state read with the events",
                    map(json!({"user:seen": true})),
                    read.state,
                )?;
                self.expect_eq("events", events, read.events)?;
                let plain = self
                    .ok(store.get_session(&key).await)?
                    .map(|session| session.events.len());
                self.expect_eq("events of get_session", Some(0), plain)
            }
            "a_refused_commit_appends_no_events" => {
                self.ok(store.create_session(&key, map(json!({"x": 0}))).await)?;
                let mut first = self.turn(store, &key).await?;
                let mut second = self.turn(store, &key).await?;
                self.set(&mut first, "x", json!(1))?;
                let mut commit = first.to_commit(&ThreadId::default());
                commit.events = sample_events(&key)[..1].to_vec();
                self.ok(store.commit_turn(&key, commit).await)?;
                self.set(&mut second, "x", json!(2))?;
                let mut refused = second.to_commit(&ThreadId::default());
                refused.events = sample_events(&key)[1..].to_vec();
                if !matches!(
                    store.commit_turn(&key, refused).await,
                    Err(SessionStoreError::Stale { .. })
                ) {
                    return Err(self.fail("the stale commit was not refused"));
                }
                let read = self.ok(store
                    .get_session_with(&key, GetSessionConfig::default())
                    .await)?;
                let ids: Vec<String> = read
                    .into_iter()
                    .flat_map(|session| session.events)
                    .map(|event| event.id)
                    .collect();
                self.expect_eq(
                    "events after the refusal",
                    vec![sample_events(&key)[0].id.clone()],
                    ids,
                )
            }
            "event_windows_return_the_recent_events_and_those_at_or_after_a_time" => {
                // Google ADK's S15: five events in two turns, read through windows.
                let events = sample_events(&key);
                for (turn, events) in [&events[..2], &events[2..]].into_iter().enumerate() {
                    let commit = TurnCommit {
                        events: events.to_vec(),
                        ..TurnCommit::default()
                    };
                    self.ok(store.commit_turn(&key, commit).await)
                        .map_err(|failure| self.fail(format!("turn {turn}: {failure}")))?;
                }
                let time = |index: usize| events[index].timestamp;
                let windows = [
                    (
                        "every event",
                        GetSessionConfig::default(),
                        vec![0, 1, 2, 3, 4],
                    ),
                    ("the 2 most recent", GetSessionConfig::recent(2), vec![3, 4]),
                    ("no event", GetSessionConfig::recent(0), vec![]),
                    (
                        "more than there are",
                        GetSessionConfig::recent(9),
                        vec![0, 1, 2, 3, 4],
                    ),
                    (
                        "at or after the third",
                        GetSessionConfig::after(time(2)),
                        vec![2, 3, 4],
                    ),
                    (
                        "after the last",
                        GetSessionConfig::after(time(4) + jiff::SignedDuration::from_micros(1)),
                        vec![],
                    ),
                    (
                        "the most recent at or after the second",
                        GetSessionConfig {
                            num_recent_events: Some(2),
                            after_timestamp: Some(time(1)),
                        },
                        vec![3, 4],
                    ),
                    (
                        "3 most recent, only 2 at or after the fourth",
                        GetSessionConfig {
                            num_recent_events: Some(3),
                            after_timestamp: Some(time(3)),
                        },
                        vec![3, 4],
                    ),
                ];
                for (what, window, expected) in windows {
                    let read = self.ok(store.get_session_with(&key, window).await)?;
                    let Some(read) = read else {
                        return Err(self.fail("the session is missing"));
                    };
                    let found: Vec<usize> = read
                        .events
                        .iter()
                        .map(|event| {
                            events
                                .iter()
                                .position(|sent| sent.id == event.id)
                                .unwrap_or(usize::MAX)
                        })
                        .collect();
                    self.expect_eq(what, expected, found)?;
                }
                let missing = self.key("u1", "missing");
                let none = self.ok(store
                    .get_session_with(&missing, GetSessionConfig::recent(1))
                    .await)?;
                self.expect_eq("a missing session", None, none)
            }
            "deleting_a_session_deletes_its_events" => {
                let commit = TurnCommit {
                    events: sample_events(&key),
                    ..TurnCommit::default()
                };
                self.ok(store.commit_turn(&key, commit).await)?;
                self.ok(store.delete_session(&key).await)?;
                self.ok(store.create_session(&key, Map::new()).await)?;
                let read = self.ok(store
                    .get_session_with(&key, GetSessionConfig::default())
                    .await)?;
                self.expect_eq(
                    "events of the recreated session",
                    Some(0),
                    read.map(|session| session.events.len()),
                )
            }
            other => match self.contention_rule(store, &key).await {
                Some(result) => result,
                None => Err(self.fail(format!("no such rule: {other}"))),
            },
        }
    }
}

/// Five events as a turn appends them: a user message, a tool call, its result, a model answer
/// carrying a state delta, and a state-only event; a millisecond and some microseconds apart,
/// so a store that drops sub-second precision reorders or loses them in a window.
fn sample_events(key: &SessionKey) -> Vec<SessionEvent> {
    let base = jiff::Timestamp::from_microsecond(1_760_000_000_123_456)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let at = |index: i64| base + jiff::SignedDuration::from_micros(index * 1_001);
    let id = |index: i64| format!("{}-event-{index}", key.session);
    let event = |index: i64, author: &str, content: Option<EventContent>| SessionEvent {
        id: id(index),
        invocation_id: if index < 2 {
            "turn-1".to_owned()
        } else {
            "turn-2".to_owned()
        },
        author: author.to_owned(),
        timestamp: at(index),
        content,
        state_delta: Map::new(),
    };
    let mut answer = event(3, "agent", Some(EventContent::model_text("Sunny, 21 °C")));
    answer.state_delta =
        map(json!({"city": "Paris", "user:unit": "C", "app:calls": 1, "gone": null}));
    vec![
        event(
            0,
            "user",
            Some(EventContent::user_text("Weather in Paris?")),
        ),
        event(
            1,
            "agent",
            Some(EventContent {
                role: "model".to_owned(),
                parts: vec![EventPart::FunctionCall {
                    id: Some("call-1".to_owned()),
                    name: "weather".to_owned(),
                    args: map(json!({"city": "Paris"})),
                }],
            }),
        ),
        event(
            2,
            "agent",
            Some(EventContent {
                role: "user".to_owned(),
                parts: vec![EventPart::FunctionResponse {
                    id: Some("call-1".to_owned()),
                    name: "weather".to_owned(),
                    response: map(json!({"result": "sunny, 21"})),
                }],
            }),
        ),
        answer,
        event(4, "agent", None),
    ]
}

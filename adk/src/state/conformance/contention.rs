//! The contention rules of the conformance suite: each policy of
//! [`contention`](crate::state::contention) applied atomically by the store.

use futures_util::future::join_all;
use serde_json::{Map, Value, json};

use super::{Run, map};
use crate::ids::ThreadId;
use crate::state::contention::{Add, LastWriterWins, Max, MergeWith, Union};
use crate::state::{SessionKey, SessionStore, SessionStoreError, StateEdit, StateKey};

/// The contention rules (also the last of [`super::RULES`]).
const RULES: &[&str] = &[
    "a_counter_merge_adds_to_the_value_stored_at_commit_and_is_never_stale",
    "concurrent_counter_merges_all_land_and_none_is_refused",
    "last_writer_wins_is_never_stale_and_the_later_commit_wins",
    "union_and_max_merge_into_the_value_stored_at_commit",
    "a_user_merge_function_sees_the_value_stored_at_commit",
    "a_merge_the_stored_value_cannot_take_is_refused_and_applies_nothing",
    "a_stale_refusal_names_every_conflicting_key",
    "merges_outside_a_turn_apply_to_the_stored_value",
];

const COUNT: StateKey<u64, Add> = crate::state_key!("app:count" => u64, on_conflict = add);
const LAST: StateKey<String, LastWriterWins> =
    crate::state_key!("app:last" => String, on_conflict = last_writer_wins);
const TAGS: StateKey<Vec<String>, Union> =
    crate::state_key!("user:tags" => Vec<String>, on_conflict = union);
const HIGH: StateKey<u32, Max> = crate::state_key!("high" => u32, on_conflict = max);
const TRAIL: StateKey<String, MergeWith> =
    crate::state_key!("app:trail" => String, on_conflict = merge(append));

/// `stored` then `/` then `next`: the order shows which value the store merged into.
fn append(stored: Option<String>, next: String) -> String {
    match stored {
        Some(stored) => format!("{stored}/{next}"),
        None => next,
    }
}

impl Run {
    /// Runs the contention rule `self.rule`; `None` when it is not one.
    pub(super) async fn contention_rule(
        &self,
        store: &impl SessionStore,
        key: &SessionKey,
    ) -> Option<Result<(), super::ConformanceFailure>> {
        RULES.contains(&self.rule).then_some(())?;
        Some(self.contention(store, key).await)
    }

    fn step<T>(
        &self,
        result: Result<T, crate::state::StateError>,
    ) -> Result<T, super::ConformanceFailure> {
        result.map_err(|error| self.fail(error.to_string()))
    }

    async fn app_of(
        &self,
        store: &impl SessionStore,
        key: &SessionKey,
    ) -> Result<Map<String, Value>, super::ConformanceFailure> {
        self.ok(store.app_state(&key.app).await)
    }

    async fn contention(
        &self,
        store: &impl SessionStore,
        key: &SessionKey,
    ) -> Result<(), super::ConformanceFailure> {
        match self.rule {
            "a_counter_merge_adds_to_the_value_stored_at_commit_and_is_never_stale" => {
                self.ok(store
                    .create_session(key, map(json!({"app:count": 5})))
                    .await)?;
                let (mut first, mut second) =
                    (self.turn(store, key).await?, self.turn(store, key).await?);
                self.step(first.add(COUNT, 2))?;
                self.step(second.add(COUNT, 3))?;
                self.step(second.add(COUNT, 4))?;
                self.commit(store, key, &first).await?;
                self.commit(store, key, &second).await?;
                self.expect_eq(
                    "count",
                    json!(14),
                    self.app_of(store, key).await?["count"].clone(),
                )
            }
            "concurrent_counter_merges_all_land_and_none_is_refused" => {
                let mut turns = Vec::new();
                for _ in 0..16 {
                    let mut turn = self.turn(store, key).await?;
                    self.step(turn.add(COUNT, 1))?;
                    turns.push(turn);
                }
                let commits = turns
                    .iter()
                    .map(|turn| store.commit_turn(key, turn.to_commit(&ThreadId::default())));
                for result in join_all(commits).await {
                    self.ok(result)?;
                }
                self.expect_eq(
                    "count",
                    json!(16),
                    self.app_of(store, key).await?["count"].clone(),
                )
            }
            "last_writer_wins_is_never_stale_and_the_later_commit_wins" => {
                let (mut first, mut second) =
                    (self.turn(store, key).await?, self.turn(store, key).await?);
                self.step(first.set(LAST, "first".to_owned()))?;
                self.step(second.set(LAST, "second".to_owned()))?;
                self.commit(store, key, &second).await?;
                self.commit(store, key, &first).await?;
                self.expect_eq(
                    "last",
                    json!("first"),
                    self.app_of(store, key).await?["last"].clone(),
                )
            }
            "union_and_max_merge_into_the_value_stored_at_commit" => {
                let initial = json!({"user:tags": ["a"], "high": 5});
                self.ok(store.create_session(key, map(initial)).await)?;
                let (mut first, mut second) =
                    (self.turn(store, key).await?, self.turn(store, key).await?);
                self.step(first.merge(TAGS, vec!["b".to_owned(), "a".to_owned()]))?;
                self.step(first.merge(HIGH, 9))?;
                self.step(second.merge(TAGS, vec!["c".to_owned()]))?;
                self.step(second.merge(HIGH, 7))?;
                self.commit(store, key, &first).await?;
                self.commit(store, key, &second).await?;
                self.expect_eq(
                    "state",
                    map(json!({"user:tags": ["a", "b", "c"], "high": 9})),
                    self.state_of(store, key).await?,
                )
            }
            "a_user_merge_function_sees_the_value_stored_at_commit" => {
                let (mut first, mut second) =
                    (self.turn(store, key).await?, self.turn(store, key).await?);
                self.step(first.merge(TRAIL, "one".to_owned()))?;
                self.step(second.merge(TRAIL, "two".to_owned()))?;
                self.commit(store, key, &first).await?;
                self.commit(store, key, &second).await?;
                self.expect_eq(
                    "trail",
                    json!("one/two"),
                    self.app_of(store, key).await?["trail"].clone(),
                )
            }
            "a_merge_the_stored_value_cannot_take_is_refused_and_applies_nothing" => {
                self.ok(store.create_session(key, Map::new()).await)?;
                let mut turn = self.turn(store, key).await?;
                self.step(turn.add(COUNT, 1))?;
                self.set(&mut turn, "side", json!(true))?;
                let mut other = self.turn(store, key).await?;
                self.set(&mut other, "app:count", json!("not a number"))?;
                self.commit(store, key, &other).await?;
                match store
                    .commit_turn(key, turn.to_commit(&ThreadId::default()))
                    .await
                {
                    Err(SessionStoreError::MergeRefused { key: refused, .. }) => {
                        self.expect_eq("refused key", "app:count", refused.as_str())?;
                    }
                    other => {
                        return Err(self.fail(format!("expected MergeRefused, got {other:?}")));
                    }
                }
                self.expect_eq(
                    "state after the refusal",
                    map(json!({"app:count": "not a number"})),
                    self.state_of(store, key).await?,
                )
            }
            "a_stale_refusal_names_every_conflicting_key" => {
                self.ok(store.create_session(key, Map::new()).await)?;
                let mut turn = self.turn(store, key).await?;
                for name in ["x", "user:y", "app:z"] {
                    self.set(&mut turn, name, json!("mine"))?;
                }
                let mut other = self.turn(store, key).await?;
                for name in ["x", "app:z"] {
                    self.set(&mut other, name, json!("theirs"))?;
                }
                self.commit(store, key, &other).await?;
                match store
                    .commit_turn(key, turn.to_commit(&ThreadId::default()))
                    .await
                {
                    Err(SessionStoreError::Stale { mut keys }) => {
                        keys.sort();
                        self.expect_eq("stale keys", vec!["app:z".to_owned(), "x".to_owned()], keys)
                    }
                    other => Err(self.fail(format!("expected Stale, got {other:?}"))),
                }
            }
            "merges_outside_a_turn_apply_to_the_stored_value" => {
                let mut first = self.ok(StateEdit::load(store, key.app.clone(), "u1").await)?;
                let mut second = self.ok(StateEdit::load(store, key.app.clone(), "u1").await)?;
                self.step(first.state_mut().add(COUNT, 1))?;
                self.step(second.state_mut().add(COUNT, 2))?;
                self.step(second.state_mut().merge(TAGS, vec!["x".to_owned()]))?;
                for edit in [first, second] {
                    edit.commit(store)
                        .await
                        .map_err(|error| self.fail(format!("the edit failed: {error}")))?;
                }
                self.expect_eq(
                    "count",
                    json!(3),
                    self.app_of(store, key).await?["count"].clone(),
                )?;
                self.expect_eq(
                    "user state",
                    map(json!({"tags": ["x"]})),
                    self.ok(store.user_state(&key.app, &key.user).await)?,
                )
            }
            unknown => Err(self.fail(format!("no such rule: {unknown}"))),
        }
    }
}

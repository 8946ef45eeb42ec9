//! One scope's writes (a session's, an app's or a user's row) as a checked write takes them
//! (`checked_writes.rs`): the keys removed, the values set, and the values the turns loaded,
//! which the statement compares with the stored row.
//!
//! Merges (`on_conflict = add`, `max`, `union`, `merge(..)`, `last_writer_wins`) go in the one
//! round trip too. The locking transaction applies a merge to the value stored at commit; here
//! it is applied to the value its turn loaded, and that value is checked against the stored
//! row like a plain write's: when the row still holds it, the value written is the one the
//! locking transaction would write, and when it does not, the statement refuses and the turn
//! runs the locking transaction, which applies the merge to the stored value (a merge is still
//! never stale, only retried). Several turns merging into one key in one write are applied
//! one after another, each to what the turns before it left, as their locking transactions
//! would. Before, any merge sent its turn to the locking transaction: nine round trips, and
//! with the one-flush store the held answer written on its own before them.
//!
//! A commit with a merge is sent this way only when no other commit of its store is under way
//! (`session.rs`): merges are made for keys many turns write, and with turns in flight the
//! value a turn loaded for a shared counter has mostly moved on by its commit, so the attempt
//! would be refused and then the locking transaction paid anyway (measured: 40% fewer turns a
//! second at 16 and 256 in flight with an `add` counter shared by every turn).

use indexmap::IndexMap;
use serde_json::{Map, Value};
use tokio_postgres::types::Json;

use crate::state::{StateChange, StateWrite, TurnCommit};

/// Whether `commit` merges into a key: such a commit takes the round trip only when it would
/// go alone (`session.rs` says why).
pub(super) fn merges(commit: &TurnCommit) -> bool {
    [&commit.session, &commit.app, &commit.user]
        .into_iter()
        .flatten()
        .any(|write| matches!(write.change, StateChange::Merge(_)))
}

/// One scope's writes folded into what the statement takes: the last change of each key wins
/// (as [`StateWrite::apply_all`] applies them in order), and every value a write expects is
/// checked against the stored row.
pub(super) struct ScopeWrites {
    pub(super) removed: Vec<String>,
    pub(super) set: Json<Map<String, Value>>,
    pub(super) names: Vec<String>,
    pub(super) expected: Vec<Option<Json<Value>>>,
}

impl ScopeWrites {
    /// One turn's writes. `None` when a merge cannot be applied to the value the turn loaded
    /// (then the locking transaction applies it to the stored value, or refuses it).
    pub(super) fn of(writes: &[StateWrite]) -> Option<Self> {
        folded(std::iter::once((0, writes))).ok()
    }
}

/// Several turns' writes to one row as one write, applied in the turns' order. Each turn's
/// expected value of a key is checked against what the turns before it left when one of them
/// wrote the key (here, as the locking transaction compares), and otherwise against the stored
/// row (by the statement). A merge is applied to what the turns before it left, or else to the
/// value its turn loaded, which the statement checks. `Err(turn)`: that turn's check fails
/// here, or its merge cannot be applied.
pub(super) fn folded<'a>(
    turns: impl Iterator<Item = (usize, &'a [StateWrite])>,
) -> Result<ScopeWrites, usize> {
    // What each key written so far holds after the turns before (`None`: removed).
    let mut last: IndexMap<&'a str, Option<Value>> = IndexMap::new();
    let (mut names, mut expected) = (Vec::new(), Vec::new());
    for (turn, writes) in turns {
        for write in writes {
            match last.get(write.name.as_str()) {
                None => {
                    names.push(write.name.clone());
                    expected.push(write.expected.clone().map(Json));
                }
                // A merge is never stale: it takes what the turns before it left.
                Some(_) if matches!(write.change, StateChange::Merge(_)) => {}
                Some(value) if write.expected.as_ref() == value.as_ref() => {}
                Some(_) => return Err(turn),
            }
        }
        for write in writes {
            let name = write.name.as_str();
            let value = match &write.change {
                StateChange::Set(value) => Some(value.clone()),
                StateChange::Delete => None,
                StateChange::Merge(merge) => {
                    let before = match last.get(name) {
                        Some(value) => value.as_ref(),
                        None => write.expected.as_ref(),
                    };
                    Some(merge.apply(before).map_err(|_| turn)?)
                }
            };
            last.insert(name, value);
        }
    }
    let (mut removed, mut set) = (Vec::new(), Map::new());
    for (name, value) in last {
        match value {
            Some(value) => {
                set.insert(name.to_owned(), value);
            }
            None => removed.push(name.to_owned()),
        }
    }
    Ok(ScopeWrites {
        removed,
        set: Json(set),
        names,
        expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VISITS: crate::state::StateKey<u64, crate::state::contention::Add> =
        crate::state_key!("app:visits" => u64, on_conflict = add);

    /// The app writes of a turn that loaded `app:visits = loaded` and added `by` to it.
    fn adding(loaded: Option<u64>, by: u64) -> Vec<StateWrite> {
        let mut stored = Map::new();
        if let Some(loaded) = loaded {
            stored.insert("visits".to_owned(), json!(loaded));
        }
        let mut state = crate::state::State::from_loaded(crate::state::LoadedTurn {
            app: std::sync::Arc::new(stored),
            ..crate::state::LoadedTurn::default()
        });
        state.add(VISITS, by).expect("a counter merge");
        state.to_commit(&crate::ids::ThreadId::default()).app
    }

    fn set(name: &str, value: Value, expected: Option<Value>) -> StateWrite {
        StateWrite {
            name: name.into(),
            change: StateChange::Set(value),
            expected,
        }
    }

    #[test]
    fn a_counter_merge_writes_the_loaded_value_plus_its_operand_and_checks_the_load() {
        let writes = ScopeWrites::of(&adding(Some(41), 1)).expect("41 takes an add");
        assert_eq!(
            writes.set.0,
            Map::from_iter([("visits".to_owned(), json!(42))])
        );
        assert_eq!(writes.names, ["visits"]);
        assert_eq!(
            writes.expected[0].as_ref().map(|json| &json.0),
            Some(&json!(41))
        );
    }

    #[test]
    fn a_merge_into_an_absent_key_checks_that_it_is_still_absent() {
        let writes = ScopeWrites::of(&adding(None, 3)).expect("an absent key takes an add");
        assert_eq!(writes.set.0["visits"], json!(3));
        assert!(writes.expected[0].is_none());
    }

    #[test]
    fn merges_of_a_group_apply_one_after_another_and_only_the_first_is_checked() {
        // Three turns loaded 10 and add 1, 2 and 3: the locking transactions would leave 16.
        let (a, b, c) = (
            adding(Some(10), 1),
            adding(Some(10), 2),
            adding(Some(10), 3),
        );
        let writes = folded([(0, &a[..]), (1, &b[..]), (2, &c[..])].into_iter())
            .expect("merges never refuse each other");
        assert_eq!(writes.set.0["visits"], json!(16));
        assert_eq!(
            writes.names,
            ["visits"],
            "one check, against the stored row"
        );
        assert_eq!(
            writes.expected[0].as_ref().map(|json| &json.0),
            Some(&json!(10))
        );
    }

    #[test]
    fn a_merge_after_a_plain_write_in_the_group_takes_the_written_value() {
        let first = [set("visits", json!(100), Some(json!(10)))];
        let adds = adding(Some(10), 1);
        let writes = folded([(0, &first[..]), (1, &adds[..])].into_iter())
            .expect("a merge takes what the write before it left");
        assert_eq!(writes.set.0["visits"], json!(101));
    }

    #[test]
    fn a_plain_write_after_another_turns_write_of_its_key_is_still_refused_when_stale() {
        let adds = adding(Some(10), 1);
        let stale = [set("visits", json!(0), Some(json!(10)))];
        assert_eq!(
            folded([(0, &adds[..]), (1, &stale[..])].into_iter()).err(),
            Some(1),
            "the second turn expected 10, the first left 11"
        );
    }

    #[test]
    fn a_merge_the_loaded_value_cannot_take_is_left_to_the_locking_transaction() {
        let mut writes = adding(None, 1);
        writes[0].expected = Some(json!("not a number"));
        assert!(ScopeWrites::of(&writes).is_none());
        assert_eq!(folded([(4, &writes[..])].into_iter()).err(), Some(4));
    }
}

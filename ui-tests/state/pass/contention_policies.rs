use std::collections::BTreeSet;

use adk::state::contention::{Add, LastWriterWins, Max, MergeWith, Refuse, Union};
use adk::state::{State, StateKey};

const PLAN: StateKey<String, Refuse> =
    adk::state_key!("user:plan" => String, on_conflict = refuse);
const SEEN: StateKey<String, LastWriterWins> =
    adk::state_key!("app:seen" => String, on_conflict = last_writer_wins);
const VISITS: StateKey<i64, Add> = adk::state_key!("app:visits" => i64, on_conflict = add);
const TAGS: StateKey<BTreeSet<String>, Union> =
    adk::state_key!("user:tags" => BTreeSet<String>, on_conflict = union);
const HIGH: StateKey<u32, Max> = adk::state_key!("high" => u32, on_conflict = max);
const NOTE: StateKey<String, MergeWith> =
    adk::state_key!("app:note" => String, on_conflict = merge(append));

fn append(stored: Option<String>, new: String) -> String {
    stored.map_or(new.clone(), |stored| format!("{stored} {new}"))
}

fn main() -> Result<(), adk::state::StateError> {
    let mut state = State::new();
    state.set(PLAN, "pro".to_owned())?;
    state.set(SEEN, "now".to_owned())?;
    state.add(VISITS, -1)?;
    state.merge(TAGS, BTreeSet::from(["vip".to_owned()]))?;
    state.merge(HIGH, 3)?;
    state.merge(NOTE, "hi".to_owned())?;
    assert_eq!(state.get(NOTE)?.as_deref(), Some("hi"));
    Ok(())
}

use adk::state::{State, StateKey};

const KEY: StateKey<u32> = adk::state_key!("step" => u32);

fn main() {
    let mut state = State::new();
    state.set(KEY, 3).unwrap();
    assert_eq!(state.get(KEY).unwrap(), Some(3));
}

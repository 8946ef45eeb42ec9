use adk::state::{State, StateKey};

const KEY: StateKey<Vec<u8>> = adk::state_key!("temp:scratch" => Vec<u8>);

fn main() {
    let mut state = State::new();
    state.set(KEY, vec![1, 2]).unwrap();
    assert_eq!(state.get(KEY).unwrap(), Some(vec![1, 2]));
}

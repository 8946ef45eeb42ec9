use adk::state::{State, StateKey};

const KEY: StateKey<String> = adk::state_key!("user:theme" => String);

fn main() {
    let mut state = State::new();
    state.set(KEY, "dark".to_owned()).unwrap();
    assert_eq!(state.get(KEY).unwrap(), Some("dark".to_owned()));
}

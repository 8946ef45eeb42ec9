use adk::state::{State, StateKey};

const KEY: StateKey<String> = adk::state_key!("app:motd" => String);

fn main() {
    let mut state = State::new();
    state.set(KEY, "sale".to_owned()).unwrap();
    assert_eq!(state.get(KEY).unwrap(), Some("sale".to_owned()));
}

use adk::state::{State, StateKey};

const VISITS: StateKey<u32> = adk::state_key!("visits" => u32);

fn main() {
    let state = State::new();
    let visits: Option<String> = state.get(VISITS).unwrap();
    let _ = visits;
}

use adk::state::{State, StateKey};

const VISITS: StateKey<u64> = adk::state_key!("app:visits" => u64);

fn main() {
    let mut state = State::new();
    let _ = state.add(VISITS, 1);
}

use adk::state::contention::LastWriterWins;
use adk::state::{State, StateKey};

const SEEN: StateKey<String, LastWriterWins> =
    adk::state_key!("app:seen" => String, on_conflict = last_writer_wins);

fn main() {
    let mut state = State::new();
    let _ = state.merge(SEEN, "now".to_owned());
}

use adk::state::StateKey;
use adk::state::contention::MergeWith;

const NOTE: StateKey<String, MergeWith> =
    adk::state_key!("app:note" => String, on_conflict = merge);

fn main() {
    let _ = NOTE;
}

use adk::state::StateKey;
use adk::state::contention::MergeWith;

fn longest(stored: Option<u32>, new: u32) -> u32 {
    stored.map_or(new, |stored| stored.max(new))
}

const NOTE: StateKey<String, MergeWith> =
    adk::state_key!("app:note" => String, on_conflict = merge(longest));

fn main() {
    let _ = NOTE;
}

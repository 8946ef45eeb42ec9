use adk::state::StateKey;
use adk::state::contention::Max;

const SCORE: StateKey<f64, Max> = adk::state_key!("app:score" => f64, on_conflict = max);

fn main() {
    let _ = SCORE;
}

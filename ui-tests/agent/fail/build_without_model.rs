//! An agent without a model has no `build()`.
use adk::Agent;
use adk::storage::NoopStorage;

fn main() {
    let _ = Agent::builder("helper").storage(NoopStorage::new()).build();
}

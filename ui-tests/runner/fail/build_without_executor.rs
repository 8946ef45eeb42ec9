use adk::TurnRunner;
use adk::storage::NoopStorage;

fn main() {
    let _runner = TurnRunner::builder().storage(NoopStorage::new()).build();
}

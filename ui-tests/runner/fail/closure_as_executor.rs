use adk::TurnRunner;
use adk::storage::NoopStorage;

fn main() {
    let _runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(|_ctx: &mut adk::DispatchContext| async { Ok::<(), adk::pipeline::BoxError>(()) })
        .build();
}

//! An adapter in an `Arc` is an adapter: the caller keeps a typed handle and registers a clone.
#![deny(warnings)]

use std::sync::Arc;

use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::storage::NoopStorage;

adk::storage_adapter! {
    #[derive(Default)]
    pub struct ChatStore;

    impl {
        ..noop
    }
}

fn main() {
    let store = Arc::new(ChatStore);
    let _runner: TurnRunner = TurnRunner::builder()
        .storage(Arc::clone(&store))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let _also_in_an_arc = TurnRunner::builder().storage(Arc::new(NoopStorage::new()));
    let _still_mine: &ChatStore = &store;
}

use adk::TurnRunner;
use adk::context::{DispatchContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, from_fn};
use adk::storage::NoopStorage;

fn main() {
    // Executor before storage, middleware in between: only the two required slots matter.
    let runner: TurnRunner = TurnRunner::builder()
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .storage(NoopStorage::new())
        .max_iterations(8)
        .build();
    fn shareable<T: Send + Sync + Clone + 'static>(_: &T) {}
    shareable(&runner);
}

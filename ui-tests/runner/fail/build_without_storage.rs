use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;

fn main() {
    let _runner = TurnRunner::builder()
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
}

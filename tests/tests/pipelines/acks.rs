//! Ack and nack from dispatch middleware: the pipeline finishes, then the loop ends.

use super::*;

#[tokio::test]
async fn acking_in_dispatch_input_lets_the_pipeline_finish_and_skips_the_executor() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let acker = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = acker.clone();
            Box::pin(async move {
                log.push("ack");
                ctx.ack()?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(log.marker("c"))
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert_eq!(log.joined(), "ack c-pre c-post out-pre out-post");
    assert_eq!(executor.runs(), 0);
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn nacking_in_dispatch_output_completes_the_iteration_then_ends_the_dispatch() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::new([Step::Continue]).logging_to(log.clone());
    let nacker = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .dispatch_output(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = nacker.clone();
            Box::pin(async move {
                log.push("nack");
                ctx.nack(ScriptedFailure("the answer leaks a secret"))?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("c"))
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            NACKED,
            error(ErrorCode::Nacked),
            TURN_END
        ]
    );
    assert_eq!(log.joined(), "executor nack c-pre c-post");
    assert_eq!(
        *cause_of::<ScriptedFailure>(failed_with(&outcome)),
        ScriptedFailure("the answer leaks a secret")
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

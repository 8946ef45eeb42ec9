//! The onion: pre-steps in registration order, post-steps in reverse.

use super::*;

#[tokio::test]
async fn turn_input_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::TurnInput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        log.joined(),
        "a-pre b-pre c-pre c-post b-post a-post executor out-pre out-post"
    );
    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
}

#[tokio::test]
async fn dispatch_input_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::DispatchInput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        log.joined(),
        "a-pre b-pre c-pre c-post b-post a-post executor out-pre out-post"
    );
    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
}

#[tokio::test]
async fn dispatch_output_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::DispatchOutput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    // Iteration 0 runs the output pipeline; the executor acknowledges in iteration 1, which
    // skips that iteration's output pipeline.
    assert_eq!(
        log.joined(),
        "executor a-pre b-pre c-pre c-post b-post a-post executor out-pre out-post"
    );
    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            ACKED,
            TURN_END
        ]
    );
}

#[tokio::test]
async fn turn_output_runs_pre_steps_in_registration_order_and_post_steps_in_reverse() {
    let log = Log::new();
    let staged = staged(Place::TurnOutput, &log, log.marker("b"));
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        log.joined(),
        "executor a-pre b-pre c-pre c-post b-post a-post"
    );
    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
}

#[tokio::test]
async fn middleware_run_in_registration_order_whatever_their_names() {
    let log = Log::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .turn_input(log.marker("zeta"))
        .turn_input(log.marker("alpha"))
        .turn_input(log.marker("mu"))
        .turn_input(log.marker("beta"))
        .build();
    let _ = run(&runner, raw()).await;

    assert_eq!(
        log.joined(),
        "zeta-pre alpha-pre mu-pre beta-pre beta-post mu-post alpha-post zeta-post"
    );
}

#[tokio::test]
async fn every_post_step_sees_the_pipeline_completed_on_the_happy_path() {
    let log = Log::new();
    let staged = staged(Place::TurnInput, &log, log.marker("b"));
    let _ = run(&staged.runner, raw()).await;

    for name in ["a", "b", "c"] {
        assert_eq!(
            log.outcomes_seen_by(name),
            [Downstream::Completed],
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_later_middleware_sees_what_an_earlier_one_put_in_the_stash() {
    let log = Log::new();
    let reader = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.stash.set("test.retrieval.chunks", 3)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let log = reader.clone();
            Box::pin(async move {
                let chunks: Option<u32> = ctx.stash.get("test.retrieval.chunks")?;
                log.push(format!("chunks {chunks:?}"));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let _ = run(&runner, raw()).await;

    assert_eq!(log.entries(), ["chunks Some(3)"]);
}

#[tokio::test]
async fn dispatch_pipelines_run_once_per_iteration_around_the_executor() {
    let log = Log::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(
            ScriptedExecutor::new([Step::Continue, Step::Continue, Step::Ack])
                .logging_to(log.clone()),
        )
        .turn_input(log.marker("turn_input"))
        .dispatch_input(log.marker("dispatch_input"))
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let _ = run(&runner, raw()).await;

    let iteration = "dispatch_input-pre dispatch_input-post executor \
                     dispatch_output-pre dispatch_output-post";
    assert_eq!(
        log.joined(),
        format!(
            "turn_input-pre turn_input-post {iteration} {iteration} \
             dispatch_input-pre dispatch_input-post executor turn_output-pre turn_output-post"
        )
    );
}

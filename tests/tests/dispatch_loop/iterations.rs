//! Which iterations complete (an executor ack versus an ack from dispatch_output), signals inside dispatch_input, and how a nack's own error reaches every report.

use super::*;

#[tokio::test]
async fn an_executor_ack_in_iteration_zero_ends_no_iteration_counts_one_and_skips_dispatch_output()
{
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = runner_with(executor.clone(), &RecordingStorage::new(), &events, &log)
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert_eq!(iterations(&events), ["iterationStart 0"]);
    let (status, completed, error) = dispatch_end(&events);
    assert_eq!((status, completed), (DispatchStatus::Ack, 1));
    assert!(error.is_none(), "{error:?}");
    assert_eq!(log.joined(), "executor out-pre out-post");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn an_ack_from_dispatch_output_finishes_that_pipeline_and_completes_the_iteration() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::new([Step::Continue]).logging_to(log.clone());
    let acker = log.clone();
    let runner = runner_with(executor.clone(), &RecordingStorage::new(), &events, &log)
        .dispatch_output(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = acker.clone();
            Box::pin(async move {
                log.push("ack");
                ctx.ack()?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("c"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ACKED,
            TURN_END
        ]
    );
    assert_eq!(iterations(&events), ["iterationStart 0", "iterationEnd 0"]);
    assert_eq!(dispatch_end(&events).1, 1);
    assert_eq!(log.joined(), "executor ack c-pre c-post out-pre out-post");
    assert_eq!(
        executor.runs(),
        1,
        "the ack ends the loop: no second iteration"
    );
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

#[tokio::test]
async fn three_iterations_ending_in_an_executor_ack_run_dispatch_output_only_for_the_first_two() {
    let log = Log::new();
    let events = EventRecorder::new();
    let script = ScriptedExecutor::new([Step::Continue, Step::Continue, Step::Ack]);
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        let script = script.clone();
        Box::pin(async move {
            log.push(format!("executor@{}", ctx.iteration()));
            script.execute(ctx).await
        })
    });
    let output_seen = log.clone();
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log)
        .dispatch_output(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = output_seen.clone();
            Box::pin(async move {
                log.push(format!("output@{}", ctx.iteration()));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let _ = run(&runner).await;

    assert_eq!(
        iterations(&events),
        [
            "iterationStart 0",
            "iterationEnd 0",
            "iterationStart 1",
            "iterationEnd 1",
            "iterationStart 2"
        ]
    );
    assert_eq!(dispatch_end(&events).1, 3);
    assert_eq!(
        log.joined(),
        "executor@0 output@0 executor@1 output@1 executor@2 out-pre out-post"
    );
}

// ---------------------------------------------------------------------------------------------
// Signals inside dispatch_input

#[tokio::test]
async fn a_nack_inside_dispatch_input_lets_the_remaining_input_middleware_run_and_skips_the_executor()
 {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let nacker = log.clone();
    let checker = log.clone();
    let runner = runner_with(executor.clone(), &RecordingStorage::new(), &events, &log)
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = nacker.clone();
            Box::pin(async move {
                log.push("nack");
                ctx.nack(Refusal { policy: "pii" })?;
                let _ = next.run(ctx).await;
                log.push("nack-post");
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = checker.clone();
            Box::pin(async move {
                log.push(format!("c signalled={}", ctx.is_signalled()));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::Nacked),
            TURN_END
        ]
    );
    assert_eq!(log.joined(), "nack c signalled=true nack-post");
    assert_eq!(executor.runs(), 0);
    assert_eq!(dispatch_end(&events).1, 1);
    assert_eq!(
        *cause_of::<Refusal>(failed_with(&outcome)),
        Refusal { policy: "pii" }
    );
}

// ---------------------------------------------------------------------------------------------
// Nack propagation: the nack's own error reaches every report

#[tokio::test]
async fn a_nack_carries_its_own_error_to_dispatch_end_the_error_event_and_the_turn_status() {
    let log = Log::new();
    let events = EventRecorder::new();
    let seen = log.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = seen.clone();
        Box::pin(async move {
            ctx.nack(Refusal { policy: "medical" })?;
            let pending = ctx.nack_error().map(|error| error.code());
            log.push(format!(
                "signalled={} acked={} nack_error={pending:?}",
                ctx.is_signalled(),
                ctx.is_acked()
            ));
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &RecordingStorage::new(), &events, &log)
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::Nacked),
            TURN_END
        ]
    );
    assert_eq!(
        log.joined(),
        "signalled=true acked=false nack_error=Some(Nacked)",
        "turn_output is skipped after a nack"
    );
    let expected = Refusal { policy: "medical" };
    let (status, completed, ended_with) = dispatch_end(&events);
    assert_eq!((status, completed), (DispatchStatus::Nack, 1));
    let ended_with = ended_with.expect("dispatchEnd carries the nack's error");
    assert_eq!(ended_with.code(), ErrorCode::Nacked);
    assert_eq!(*cause_of::<Refusal>(&ended_with), expected);
    let reported = &events.errors()[0];
    assert_eq!(reported.code(), ErrorCode::Nacked);
    assert_eq!(*cause_of::<Refusal>(reported), expected);
    assert!(
        format!("{reported:#}").contains("refused under policy medical"),
        "{reported:#}"
    );
    let failed = failed_with(&outcome);
    assert_eq!(failed.code(), ErrorCode::Nacked);
    assert_eq!(failed.code().as_str(), "E_LLM_EXECUTION_NACKED");
    assert_eq!(*cause_of::<Refusal>(failed), expected);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

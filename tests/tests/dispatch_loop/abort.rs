//! Abort of the dispatch versus abort of the turn.

use super::*;

#[tokio::test]
async fn aborting_the_dispatch_from_the_executor_discards_its_writes_turn_output_runs_and_the_outcome_says_why()
 {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            let id = format!("m{}", ctx.iteration());
            ctx.store_message(message(&id, "draft")).await?;
            if ctx.iteration() == 1 {
                ctx.abort("budget spent");
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log)
        .dispatch_output(log.marker("dispatch_output"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(dispatch_end(&events).1, 2);
    assert_eq!(
        log.joined(),
        "dispatch_output-pre dispatch_output-post out-pre out-post",
        "the aborted iteration skips dispatch_output; the turn goes on to turn_output"
    );
    assert!(
        matches!(&outcome.status, TurnStatus::DispatchAborted(AbortReason::Requested(reason)) if reason == "budget spent"),
        "{:?}",
        outcome.status
    );
    assert!(!outcome.is_completed());
    assert!(outcome.reply().is_none());
    assert!(!outcome.context.is_aborted());
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    // Persisted at once and never rolled back; only the completed iteration reached the turn.
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn cancelling_the_dispatchs_own_token_in_dispatch_input_skips_the_rest_and_aborts_only_the_dispatch()
 {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let executed = Arc::new(Mutex::new(false));
    let executor_ran = Arc::clone(&executed);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        *executor_ran.lock().unwrap_or_else(PoisonError::into_inner) = true;
        Box::pin(async move {
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log)
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                // The dispatch's token is made here, on first use, and cancelled by its holder.
                ctx.cancellation().cancel();
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(log.marker("skipped"))
        .build();
    let outcome = run(&runner).await;

    assert_eq!(log.entries(), ["out-pre", "out-post"]);
    assert!(!*executed.lock().unwrap_or_else(PoisonError::into_inner));
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(
        matches!(
            &outcome.status,
            TurnStatus::DispatchAborted(AbortReason::Cancelled)
        ),
        "{:?}",
        outcome.status
    );
    assert!(!outcome.context.is_aborted());
}

#[tokio::test]
async fn a_dispatch_token_asked_for_after_the_dispatch_was_aborted_is_already_cancelled() {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let seen = Arc::new(Mutex::new(None));
    let saw = Arc::clone(&seen);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let saw = Arc::clone(&saw);
        Box::pin(async move {
            ctx.abort("enough");
            *saw.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(ctx.cancellation().is_cancelled());
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log).build();
    let outcome = run(&runner).await;

    assert_eq!(
        *seen.lock().unwrap_or_else(PoisonError::into_inner),
        Some(true)
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(!outcome.context.cancellation().is_cancelled());
}

#[tokio::test]
async fn cancelling_the_turns_token_mid_dispatch_aborts_the_dispatch_and_skips_turn_output() {
    let log = Log::new();
    let events = EventRecorder::new();
    let storage = RecordingStorage::new();
    let turn_token: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let keeper = Arc::clone(&turn_token);
    let canceller = Arc::clone(&turn_token);
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let token = canceller
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Box::pin(async move {
            let id = format!("m{}", ctx.iteration());
            ctx.store_message(message(&id, "draft")).await?;
            if ctx.iteration() == 1 {
                token.expect("turn_input kept the token").cancel();
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &log)
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            *keeper.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(ctx.cancellation().clone());
            Box::pin(async move {
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
            ITERATION_END,
            ITERATION_START,
            DISPATCH_ABORTED,
            TURN_END
        ]
    );
    assert_eq!(
        log.joined(),
        "dispatch_output-pre dispatch_output-post",
        "turn_output is skipped when the turn itself is aborted"
    );
    assert!(outcome.context.is_aborted());
    assert!(
        matches!(outcome.status, TurnStatus::Aborted(AbortReason::Cancelled)),
        "{:?}",
        outcome.status
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

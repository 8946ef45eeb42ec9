//! Abort: never an error, `turnEnd` always fires.

use super::*;

fn aborted_by(outcome: &TurnOutcome) -> &AbortReason {
    match &outcome.status {
        TurnStatus::Aborted(reason) => reason,
        other => panic!("expected the turn to be aborted, it ended {other:?}"),
    }
}

/// The events of a turn whose dispatch was aborted in its first iteration.
const DISPATCH_ABORTED_IN_ITS_FIRST_ITERATION: [(&str, &str); 5] = [
    TURN_START,
    DISPATCH_START,
    ITERATION_START,
    DISPATCH_ABORTED,
    TURN_END,
];

/// A turn whose token was cancelled while its executor ran: the dispatch ended aborted, neither
/// `dispatch_output` nor `turn_output` ran, the turn was aborted as cancelled.
fn ended_cancelled_mid_dispatch(events: &EventRecorder, log: &Log, outcome: &TurnOutcome) {
    assert_eq!(events.trace(), DISPATCH_ABORTED_IN_ITS_FIRST_ITERATION);
    assert_eq!(log.entries(), Vec::<String>::new());
    assert_eq!(aborted_by(outcome), &AbortReason::Cancelled);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
}

/// `a`, then `b` built from `body`, then `c` on turn_input; `out` on turn_output; an acking
/// executor logging `executor`.
fn abort_stage<F>(body: F) -> Staged
where
    F: for<'a> Fn(
            &'a mut TurnContext,
            Next<'a, TurnContext>,
            Log,
        ) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let inner = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .turn_input(log.marker("a"))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            body(ctx, next, inner.clone())
        }))
        .turn_input(log.marker("c"))
        .turn_output(log.marker("out"))
        .build();
    Staged {
        runner,
        log,
        events,
        executor,
    }
}

#[tokio::test]
async fn aborting_before_next_skips_the_remaining_middleware_and_the_dispatch_without_an_error() {
    let staged = abort_stage(|ctx, next, log| {
        Box::pin(async move {
            log.push("b-pre");
            ctx.abort("the policy refused");
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-pre b-post Aborted a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("the policy refused".into())
    );
    assert_eq!(staged.executor.runs(), 0);
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn aborting_without_running_next_is_not_reported_as_a_short_circuit() {
    let staged = abort_stage(|ctx, next, log| {
        Box::pin(async move {
            log.push("b");
            ctx.abort("not today");
            drop(next);
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("not today".into())
    );
}

#[tokio::test]
async fn aborting_after_next_in_turn_input_still_skips_the_dispatch() {
    let staged = abort_stage(|ctx, next, log| {
        Box::pin(async move {
            let seen = next.run(ctx).await;
            ctx.abort("changed my mind");
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    // The rest of turn_input had already run, so `b` and `a` saw it complete; the abort still
    // stops the turn before the dispatch.
    assert_eq!(
        staged.log.joined(),
        "a-pre c-pre c-post b-post Completed a-post"
    );
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("changed my mind".into())
    );
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn returning_aborted_from_turn_input_aborts_the_turn_without_an_error() {
    let staged = misbehaving(Place::TurnInput, Misbehaviour::ReturnAborted);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested(B_ABORT.into())
    );
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn returning_aborted_from_turn_output_aborts_the_turn_without_an_error() {
    let staged = misbehaving(Place::TurnOutput, Misbehaviour::ReturnAborted);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [TURN_START, DISPATCH_START, ITERATION_START, ACKED, TURN_END]
    );
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested(B_ABORT.into())
    );
}

async fn dispatch_aborted_from(place: Place) {
    let staged = misbehaving(place, Misbehaviour::ReturnAborted);
    let outcome = run(&staged.runner, raw()).await;

    // Only the dispatch is aborted: it ends as aborted and the turn goes on to turn_output. An
    // abort in dispatch_output comes after the executor: that iteration still completes.
    let (iteration, expected) = match place {
        Place::DispatchInput => (vec![ITERATION_START], "a-pre b a-post out-pre out-post"),
        _ => (
            vec![ITERATION_START, ITERATION_END],
            "executor a-pre b a-post out-pre out-post",
        ),
    };
    let trace = [
        vec![TURN_START, DISPATCH_START],
        iteration,
        vec![DISPATCH_ABORTED, TURN_END],
    ];
    assert_eq!(staged.events.trace(), trace.concat());
    assert_eq!(staged.log.joined(), expected);
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Aborted]);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
}

#[tokio::test]
async fn returning_aborted_from_dispatch_input_aborts_only_the_dispatch() {
    dispatch_aborted_from(Place::DispatchInput).await;
}

#[tokio::test]
async fn returning_aborted_from_dispatch_output_aborts_only_the_dispatch() {
    dispatch_aborted_from(Place::DispatchOutput).await;
}

#[tokio::test]
async fn aborting_the_dispatch_context_aborts_only_the_dispatch() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                ctx.abort("budget spent");
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(events.trace(), DISPATCH_ABORTED_IN_ITS_FIRST_ITERATION);
    assert_eq!(executor.runs(), 0);
    assert_eq!(log.joined(), "out-pre out-post");
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
    assert!(!outcome.context.is_aborted());
}

#[tokio::test]
async fn returning_aborted_from_the_executor_aborts_only_the_dispatch() {
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Abort("user left")]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(events.trace(), DISPATCH_ABORTED_IN_ITS_FIRST_ITERATION);
    assert_eq!(log.joined(), "executor out-pre out-post");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Aborted));
    assert!(
        matches!(outcome.status, TurnStatus::DispatchAborted(_)),
        "{:?}",
        outcome.status
    );
}

#[tokio::test]
async fn a_pre_cancelled_token_emits_only_turn_start_and_turn_end_and_runs_nothing() {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .observe(events.listener())
        .turn_input(log.marker("turn_input"))
        .dispatch_input(log.marker("dispatch_input"))
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let token = CancellationToken::new();
    token.cancel();
    let outcome = run(&runner, raw().cancellation(token)).await;

    assert_eq!(events.trace(), [TURN_START, TURN_END]);
    assert_eq!(log.entries(), Vec::<String>::new());
    assert_eq!(executor.runs(), 0);
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn the_returned_context_sees_the_callers_token_cancelled_after_the_turn() {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let token = CancellationToken::new();
    let outcome = run(&runner, raw().cancellation(token.clone())).await;
    assert!(outcome.is_completed());
    assert!(!outcome.context.is_aborted());

    // The runner only watches the token while it walks the turn; afterwards the context reads
    // the token itself.
    token.cancel();
    assert!(outcome.context.is_aborted());
    assert_eq!(outcome.context.abort_reason(), Some(AbortReason::Cancelled));
}

#[tokio::test]
async fn cancelling_the_callers_token_from_middleware_skips_the_remaining_middleware() {
    let token = CancellationToken::new();
    let callers = token.clone();
    let staged = abort_stage(move |ctx, next, log| {
        let callers = callers.clone();
        Box::pin(async move {
            log.push("b-pre");
            callers.cancel();
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw().cancellation(token)).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-pre b-post Aborted a-post");
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn cancelling_the_callers_token_from_another_task_during_turn_input_skips_the_dispatch() {
    let started = Arc::new(Notify::new());
    let waiting = Arc::clone(&started);
    let staged = abort_stage(move |ctx, next, log| {
        let waiting = Arc::clone(&waiting);
        Box::pin(async move {
            waiting.notify_one();
            ctx.cancellation().cancelled().await;
            log.push("b-woken");
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let token = CancellationToken::new();
    let callers = token.clone();
    let canceller = tokio::spawn(async move {
        started.notified().await;
        callers.cancel();
    });
    let outcome = run(&staged.runner, raw().cancellation(token)).await;
    canceller.await.expect("the cancelling task finished");

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-woken b-post Aborted a-post");
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn cancelling_the_callers_token_mid_dispatch_ends_it_as_aborted_and_skips_turn_output() {
    let log = Log::new();
    let events = EventRecorder::new();
    let started = Arc::new(Notify::new());
    let waiting = Arc::clone(&started);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let waiting = Arc::clone(&waiting);
            Box::pin(async move {
                waiting.notify_one();
                ctx.cancellation().cancelled().await;
                Ok::<(), BoxError>(())
            })
        }))
        .observe(events.listener())
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let token = CancellationToken::new();
    let callers = token.clone();
    let canceller = tokio::spawn(async move {
        started.notified().await;
        callers.cancel();
    });
    let outcome = run(&runner, raw().cancellation(token)).await;
    canceller.await.expect("the cancelling task finished");

    ended_cancelled_mid_dispatch(&events, &log, &outcome);
}

#[tokio::test]
async fn aborting_the_turn_leaves_the_callers_token_alone() {
    let staged = abort_stage(|ctx, next, _log| {
        Box::pin(async move {
            ctx.abort("done here");
            let _ = next.run(ctx).await;
            Ok(())
        })
    });
    let token = CancellationToken::new();
    let outcome = run(&staged.runner, raw().cancellation(token.clone())).await;

    assert!(outcome.context.is_aborted());
    assert!(outcome.context.cancellation().is_cancelled());
    assert!(
        !token.is_cancelled(),
        "the turn's token is a child of the caller's: aborting the turn must not cancel it"
    );
}

/// No caller's token: the turn's token is made only in `b`, during the walk, and cancelled
/// there: by `b` itself, or `on_another_thread` (through a copy of the storage context, as a
/// storage callback or a tool would). The runner registered nothing on a token not made when
/// the walk began: the checks before `c` and the dispatch must read that it was made and look
/// at it.
async fn cancelling_the_turns_own_token_in_b_skips_the_rest(on_another_thread: bool) {
    let staged = abort_stage(move |ctx, next, log| {
        Box::pin(async move {
            log.push("b-pre");
            assert!(!ctx.is_aborted());
            if on_another_thread {
                let storage = ctx.storage_context().clone();
                tokio::task::spawn_blocking(move || storage.cancellation().cancel())
                    .await
                    .expect("the cancelling thread finished");
            } else {
                ctx.cancellation().cancel();
            }
            let seen = next.run(ctx).await;
            log.push(format!("b-post {seen:?}"));
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(staged.events.trace(), [TURN_START, TURN_END]);
    assert_eq!(staged.log.joined(), "a-pre b-pre b-post Aborted a-post");
    assert_eq!(aborted_by(&outcome), &AbortReason::Cancelled);
    assert_eq!(staged.executor.runs(), 0);
}

#[tokio::test]
async fn cancelling_the_turns_own_token_from_middleware_skips_the_remaining_middleware() {
    cancelling_the_turns_own_token_in_b_skips_the_rest(false).await;
}

#[tokio::test]
async fn the_turns_own_token_made_and_cancelled_on_another_thread_during_turn_input_skips_the_rest()
{
    cancelling_the_turns_own_token_in_b_skips_the_rest(true).await;
}

#[tokio::test]
async fn a_token_asked_for_after_the_turn_was_aborted_is_cancelled() {
    // Nothing asked for the turn's token before the abort: the abort makes it cancelled, so
    // whoever asks later (a storage callback, a tool, the caller) sees the abort.
    let staged = abort_stage(|ctx, next, _log| {
        Box::pin(async move {
            ctx.abort("done here");
            let _ = next.run(ctx).await;
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.context.storage_context().is_cancelled());
    assert!(outcome.context.cancellation().is_cancelled());
    assert_eq!(
        aborted_by(&outcome),
        &AbortReason::Requested("done here".into())
    );
}

#[tokio::test]
async fn a_turn_whose_token_nobody_asked_for_completes_and_its_token_is_not_cancelled() {
    let staged = abort_stage(|ctx, next, _log| {
        Box::pin(async move {
            let _ = next.run(ctx).await;
            Ok(())
        })
    });
    let outcome = run(&staged.runner, raw()).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert!(!outcome.context.is_aborted());
    assert!(!outcome.context.storage_context().is_cancelled());
    assert!(!outcome.context.cancellation().is_cancelled());
    assert_eq!(staged.executor.runs(), 1);
}

#[tokio::test]
async fn the_turns_own_token_made_and_cancelled_on_another_thread_mid_dispatch_aborts_the_turn() {
    // The same, made and cancelled while the executor waits on another thread, no caller's
    // token: the dispatch ends as aborted and `turn_output` is skipped.
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            let storage = ctx.storage_context().clone();
            Box::pin(async move {
                tokio::task::spawn_blocking(move || storage.cancellation().cancel())
                    .await
                    .expect("the cancelling thread finished");
                Ok::<(), BoxError>(())
            })
        }))
        .observe(events.listener())
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    let outcome = run(&runner, raw()).await;

    ended_cancelled_mid_dispatch(&events, &log, &outcome);
}

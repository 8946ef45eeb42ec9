//! Errors and panics: reported under the pipeline's code, never thrown past `run`.

use super::*;

/// Checks the parts every failing-middleware test shares: the reported error's code, its
/// cause, and that `a`'s post-step ran and saw `Failed`.
fn assert_failure_reported(staged: &Staged, error: &TurnError, code: ErrorCode, panicked: bool) {
    assert_eq!(error.code(), code, "{error}");
    if panicked {
        assert_eq!(cause_of::<Panicked>(error).message, B_PANIC);
        assert!(format!("{error:#}").contains(B_PANIC), "{error:#}");
    } else {
        assert_eq!(
            *cause_of::<ScriptedFailure>(error),
            ScriptedFailure(B_FAILURE)
        );
        assert!(format!("{error:#}").contains(B_FAILURE), "{error:#}");
    }
    assert_eq!(staged.log.outcomes_seen_by("a"), [Downstream::Failed]);
}

async fn failing_turn_input(how: Misbehaviour) {
    let staged = misbehaving(Place::TurnInput, how);
    let outcome = run(&staged.runner, raw()).await;

    let code = ErrorCode::InputPipelineError;
    assert_eq!(staged.events.trace(), [TURN_START, error(code), TURN_END]);
    let panicked = matches!(how, Misbehaviour::Panic);
    assert_failure_reported(&staged, &staged.events.errors()[0], code, panicked);
    assert_failure_reported(&staged, failed_with(&outcome), code, panicked);
    // `c`, the dispatch and turn_output never ran; `a`'s post-step did.
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn an_error_in_turn_input_is_reported_as_an_input_pipeline_error_and_skips_the_dispatch() {
    failing_turn_input(Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_turn_input_is_reported_as_an_input_pipeline_error_and_skips_the_dispatch() {
    failing_turn_input(Misbehaviour::Panic).await;
}

async fn failing_turn_output(how: Misbehaviour) {
    let staged = misbehaving(Place::TurnOutput, how);
    let outcome = run(&staged.runner, raw()).await;

    let code = ErrorCode::OutputPipelineError;
    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ACKED,
            error(code),
            TURN_END
        ]
    );
    let panicked = matches!(how, Misbehaviour::Panic);
    assert_failure_reported(&staged, &staged.events.errors()[0], code, panicked);
    assert_failure_reported(&staged, failed_with(&outcome), code, panicked);
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Ack));
}

#[tokio::test]
async fn an_error_in_turn_output_is_reported_as_an_output_pipeline_error_and_the_turn_ends() {
    failing_turn_output(Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_turn_output_is_reported_as_an_output_pipeline_error_and_the_turn_ends() {
    failing_turn_output(Misbehaviour::Panic).await;
}

async fn failing_dispatch_pipeline(place: Place, how: Misbehaviour) {
    let staged = misbehaving(place, how);
    let outcome = run(&staged.runner, raw()).await;

    let code = ErrorCode::DispatchPipelineError;
    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(code),
            TURN_END
        ]
    );
    let panicked = matches!(how, Misbehaviour::Panic);
    let dispatch_error = staged
        .events
        .dispatch_end_error()
        .expect("a nacked dispatch carries its error");
    assert_failure_reported(&staged, &dispatch_error, code, panicked);
    assert_failure_reported(&staged, &staged.events.errors()[0], code, panicked);
    assert_failure_reported(&staged, failed_with(&outcome), code, panicked);
    // turn_output (`out`) is skipped after a failed dispatch.
    let expected = match place {
        Place::DispatchInput => "a-pre b a-post",
        _ => "executor a-pre b a-post",
    };
    assert_eq!(staged.log.joined(), expected);
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

#[tokio::test]
async fn an_error_in_dispatch_input_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchInput, Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_dispatch_input_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchInput, Misbehaviour::Panic).await;
}

#[tokio::test]
async fn an_error_in_dispatch_output_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchOutput, Misbehaviour::Fail).await;
}

#[tokio::test]
async fn a_panic_in_dispatch_output_is_reported_as_a_dispatch_pipeline_error_and_nacks() {
    failing_dispatch_pipeline(Place::DispatchOutput, Misbehaviour::Panic).await;
}

#[tokio::test]
async fn a_failing_post_step_is_reported_and_outer_post_steps_still_run() {
    let log = Log::new();
    let events = EventRecorder::new();
    let inner = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .observe(events.listener())
        .turn_input(log.marker("a"))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let log = inner.clone();
            Box::pin(async move {
                let _ = next.run(ctx).await;
                log.push("b-post fails");
                Err::<(), BoxError>(ScriptedFailure(B_FAILURE).into())
            })
        }))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [TURN_START, error(ErrorCode::InputPipelineError), TURN_END]
    );
    assert_eq!(log.joined(), "a-pre b-post fails a-post");
    assert_eq!(log.outcomes_seen_by("a"), [Downstream::Failed]);
    assert_eq!(outcome.dispatch, None);
}

async fn failing_executor(step: Step, cause_message: &str) -> (TurnOutcome, EventRecorder, Log) {
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([step]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

    let code = ErrorCode::ExecutorError;
    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(code),
            TURN_END
        ]
    );
    let reported = &events.errors()[0];
    assert_eq!(reported.code(), code);
    assert!(
        format!("{reported:#}").contains(cause_message),
        "the report should include the cause's: {reported:#}"
    );
    assert_eq!(failed_with(&outcome).code(), code);
    assert_eq!(
        events.dispatch_end_error().map(|error| error.code()),
        Some(code)
    );
    // turn_output is skipped after a failed dispatch.
    assert_eq!(log.joined(), "executor");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
    (outcome, events, log)
}

#[tokio::test]
async fn an_executor_error_nacks_the_dispatch_with_its_cause_in_the_report_and_skips_output() {
    let (_, events, _) =
        failing_executor(Step::Fail("the model is down"), "the model is down").await;
    assert_eq!(
        *cause_of::<ScriptedFailure>(&events.errors()[0]),
        ScriptedFailure("the model is down")
    );
}

#[tokio::test]
async fn an_executor_panic_nacks_the_dispatch_and_never_escapes_run() {
    let (_, events, _) =
        failing_executor(Step::Panic("tokenizer overflow"), "tokenizer overflow").await;
    assert_eq!(
        cause_of::<Panicked>(&events.errors()[0]).message,
        "tokenizer overflow"
    );
}

#[tokio::test]
async fn turn_output_is_skipped_when_the_dispatch_is_nacked() {
    let log = Log::new();
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Nack("off topic")]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_output(log.marker("out"))
        .build();
    let outcome = run(&runner, raw()).await;

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
        *cause_of::<ScriptedFailure>(failed_with(&outcome)),
        ScriptedFailure("off topic")
    );
    assert_eq!(log.joined(), "executor");
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

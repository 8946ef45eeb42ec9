//! Short-circuits: a middleware that returns without running `next`.

use super::*;

fn assert_short_circuit_names(error: &TurnError, pipeline: &str) {
    assert_eq!(error.code(), ErrorCode::PipelineShortCircuited);
    assert!(
        error.message().contains(&format!("`{pipeline}`")),
        "the message should name `{pipeline}`: {}",
        error.message()
    );
}

#[tokio::test]
async fn a_short_circuit_in_turn_input_is_reported_and_skips_the_dispatch_and_turn_output() {
    let staged = misbehaving(Place::TurnInput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    assert_short_circuit_names(&staged.events.errors()[0], "turn_input");
    assert_short_circuit_names(failed_with(&outcome), "turn_input");
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(staged.executor.runs(), 0);
    assert_eq!(outcome.dispatch, None);
}

#[tokio::test]
async fn a_short_circuit_in_turn_output_is_reported_and_the_turn_still_ends() {
    let staged = misbehaving(Place::TurnOutput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ACKED,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    assert_short_circuit_names(&staged.events.errors()[0], "turn_output");
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Ack));
    assert_short_circuit_names(failed_with(&outcome), "turn_output");
}

#[tokio::test]
async fn a_short_circuit_in_dispatch_input_ends_the_dispatch_as_nack_with_that_error() {
    let staged = misbehaving(Place::DispatchInput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    let dispatch_error = staged
        .events
        .dispatch_end_error()
        .expect("a nacked dispatch carries its error");
    assert_short_circuit_names(&dispatch_error, "dispatch_input");
    assert_short_circuit_names(&staged.events.errors()[0], "dispatch_input");
    // The executor never ran and turn_output was skipped.
    assert_eq!(staged.log.joined(), "a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

#[tokio::test]
async fn a_short_circuit_in_dispatch_output_ends_the_dispatch_as_nack_with_that_error() {
    let staged = misbehaving(Place::DispatchOutput, Misbehaviour::ShortCircuit);
    let outcome = run(&staged.runner, raw()).await;

    assert_eq!(
        staged.events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            NACKED,
            error(ErrorCode::PipelineShortCircuited),
            TURN_END
        ]
    );
    let dispatch_error = staged
        .events
        .dispatch_end_error()
        .expect("a nacked dispatch carries its error");
    assert_short_circuit_names(&dispatch_error, "dispatch_output");
    assert_eq!(staged.log.joined(), "executor a-pre b a-post");
    assert_eq!(
        staged.log.outcomes_seen_by("a"),
        [Downstream::ShortCircuited]
    );
    assert_eq!(outcome.dispatch, Some(DispatchStatus::Nack));
}

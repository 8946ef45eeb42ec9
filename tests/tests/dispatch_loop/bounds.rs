//! The iteration bound and checksum counts.

use super::*;

#[tokio::test]
async fn a_silent_executor_is_nacked_after_exactly_max_iterations_completed_iterations() {
    let log = Log::new();
    let events = EventRecorder::new();
    let silent = ScriptedExecutor::new([Step::Continue; 10]).logging_to(log.clone());
    let runner = runner_with(silent.clone(), &RecordingStorage::new(), &events, &log)
        .max_iterations(3)
        .build();
    let outcome = run(&runner).await;

    let code = ErrorCode::IterationLimitExceeded;
    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            ITERATION_END,
            ITERATION_START,
            ITERATION_END,
            NACKED,
            error(code),
            TURN_END
        ]
    );
    assert_eq!(silent.runs(), 3);
    assert_eq!(log.joined(), "executor executor executor");
    let (status, completed, ended_with) = dispatch_end(&events);
    assert_eq!((status, completed), (DispatchStatus::Nack, 3));
    let ended_with = ended_with.expect("dispatchEnd carries the bound's error");
    assert_eq!(
        ended_with.code().as_str(),
        "E_DISPATCH_ITERATION_LIMIT_EXCEEDED"
    );
    assert!(
        ended_with.message().contains("3 iterations"),
        "{}",
        ended_with.message()
    );
    assert_eq!(failed_with(&outcome).code(), code);
}

// ---------------------------------------------------------------------------------------------
// Checksum counts

#[tokio::test]
async fn tool_call_count_counts_identical_calls_whatever_their_key_order() {
    let logged = logged_by(|ctx: &mut DispatchContext, log: Log| {
        Box::pin(async move {
            let first = ToolCall::new("c1", "forecast", json!({"city": "Oslo", "days": 2}))?;
            let reordered = ToolCall::new("c2", "forecast", json!({"days": 2, "city": "Oslo"}))?;
            let other = ToolCall::new("c3", "forecast", json!({"city": "Bergen", "days": 2}))?;
            let checksum = first.checksum().to_owned();
            let other_checksum = other.checksum().to_owned();
            let counts = |ctx: &DispatchContext| {
                format!(
                    "{} {} {}",
                    ctx.tool_call_count(&checksum),
                    ctx.tool_call_count(&other_checksum),
                    ctx.tool_call_count("no such checksum")
                )
            };
            match ctx.iteration() {
                0 => {
                    log.push(format!("before: {}", counts(ctx)));
                    for call in [first, reordered, other] {
                        ctx.store_tool_call(call).await?;
                    }
                    log.push(format!("stored: {}", counts(ctx)));
                }
                _ => {
                    log.push(format!("next iteration: {}", counts(ctx)));
                    ctx.delete_tool_call("c2").await?;
                    log.push(format!("after a delete: {}", counts(ctx)));
                    let moved =
                        ToolCall::new("c1", "forecast", json!({"days": 2, "city": "Bergen"}))?;
                    ctx.mutate_tool_call(moved).await?;
                    log.push(format!("after a mutate: {}", counts(ctx)));
                    ctx.ack()?;
                }
            }
            Ok(())
        })
    })
    .await;

    assert_eq!(
        logged,
        [
            "before: 0 0 0",
            "stored: 2 1 0",
            "next iteration: 2 1 0",
            "after a delete: 1 1 0",
            "after a mutate: 0 2 0"
        ]
    );
}

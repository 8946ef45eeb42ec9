//! The write queue.

use super::*;

/// How the second iteration (after a first that stored `m0` and completed) ends, having stored
/// `m1`.
#[derive(Clone, Copy, Debug)]
enum SecondIteration {
    Nack,
    Fail,
}

/// Runs a dispatch whose executor stores `m{iteration}` and then, in iteration 1, plays `ending`;
/// returns the outcome, the storage, and what the executor saw in its own collection.
async fn two_iterations_ending_in(
    ending: SecondIteration,
) -> (TurnOutcome, RecordingStorage, Vec<String>) {
    let storage = RecordingStorage::new();
    let seen = Log::new();
    let log = seen.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = log.clone();
        Box::pin(async move {
            let id = format!("m{}", ctx.iteration());
            ctx.store_message(message(&id, "draft")).await?;
            log.push(message_ids(&ctx.messages).join(","));
            match (ctx.iteration(), ending) {
                (0, _) => Ok(()),
                (_, SecondIteration::Nack) => Ok(ctx.nack(Refusal { policy: "tone" })?),
                (_, SecondIteration::Fail) => Err(Refusal { policy: "crash" }.into()),
            }
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    (run(&runner).await, storage, seen.entries())
}

#[tokio::test]
async fn a_nack_discards_the_iterations_writes_but_keeps_those_of_completed_iterations() {
    let (outcome, storage, seen) = two_iterations_ending_in(SecondIteration::Nack).await;

    assert_eq!(failed_with(&outcome).code(), ErrorCode::Nacked);
    assert_eq!(
        seen,
        ["m0", "m0,m1"],
        "the dispatch sees its writes at once"
    );
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn an_executor_error_discards_the_iterations_writes_but_keeps_those_of_completed_iterations()
{
    let (outcome, storage, seen) = two_iterations_ending_in(SecondIteration::Fail).await;

    assert_eq!(failed_with(&outcome).code(), ErrorCode::ExecutorError);
    assert_eq!(seen, ["m0", "m0,m1"]);
    assert_eq!(storage.message_ids(), ["m0", "m1"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn a_nack_from_dispatch_output_still_flushes_the_iterations_writes() {
    let storage = RecordingStorage::new();
    let events = EventRecorder::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.store_message(message("m0", "an answer")).await?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &events, &Log::new())
        .dispatch_output(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                ctx.nack(Refusal { policy: "review" })?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner).await;

    // The iteration completed (its output pipeline ran to the end), so what it wrote stands;
    // the nack only ends the loop.
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
    assert_eq!(storage.message_ids(), ["m0"]);
    assert_eq!(message_ids(&outcome.context.messages), ["m0"]);
}

#[tokio::test]
async fn writes_made_before_an_ack_in_dispatch_input_reach_the_turn() {
    let storage = RecordingStorage::new();
    let executor = ScriptedExecutor::acking();
    let runner = runner_with(
        executor.clone(),
        &storage,
        &EventRecorder::new(),
        &Log::new(),
    )
    .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
        Box::pin(async move {
            ctx.store_message(message("canned", "a cached answer"))
                .await?;
            ctx.ack()?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    }))
    .build();
    let outcome = run(&runner).await;

    assert_eq!(executor.runs(), 0);
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(storage.message_ids(), ["canned"]);
    assert_eq!(message_ids(&outcome.context.messages), ["canned"]);
}

#[tokio::test]
async fn a_nack_in_dispatch_input_drops_the_iterations_writes_from_the_turn_but_not_storage() {
    let storage = RecordingStorage::new();
    let executor = ScriptedExecutor::acking();
    let runner = runner_with(
        executor.clone(),
        &storage,
        &EventRecorder::new(),
        &Log::new(),
    )
    .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
        Box::pin(async move {
            ctx.store_message(message("draft", "not sent")).await?;
            ctx.nack(Refusal { policy: "quota" })?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    }))
    .build();
    let outcome = run(&runner).await;

    assert_eq!(executor.runs(), 0);
    assert_eq!(failed_with(&outcome).code(), ErrorCode::Nacked);
    assert_eq!(storage.message_ids(), ["draft"]);
    assert!(message_ids(&outcome.context.messages).is_empty());
}

#[tokio::test]
async fn a_second_failure_in_one_dispatch_pipeline_walk_reaches_the_event_bus_after_the_first() {
    let events = EventRecorder::new();
    let runner = runner_with(
        ScriptedExecutor::acking(),
        &RecordingStorage::new(),
        &events,
        &Log::new(),
    )
    // The outer middleware fails in its post-step, after the inner one failed.
    .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
        Box::pin(async move {
            let _ = next.run(ctx).await;
            Err::<(), BoxError>(Refusal { policy: "outer" }.into())
        })
    }))
    .dispatch_input(from_fn(|_ctx: &mut DispatchContext, _next| {
        Box::pin(async move { Err::<(), BoxError>(Refusal { policy: "inner" }.into()) })
    }))
    .build();
    let outcome = run(&runner).await;

    let reported: Vec<String> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Error { error, .. } => Some(format!("{error:#}")),
            _ => None,
        })
        .collect();
    assert_eq!(reported.len(), 2, "{reported:#?}");
    assert!(reported[0].contains("policy inner"), "{reported:#?}");
    assert!(reported[1].contains("policy outer"), "{reported:#?}");
    assert!(
        reported
            .iter()
            .all(|line| line.starts_with("E_DISPATCH_PIPELINE_ERROR")),
        "{reported:#?}"
    );
    // The first failure stays the turn's error.
    assert!(
        format!("{:#}", failed_with(&outcome)).contains("policy inner"),
        "{:?}",
        outcome.status
    );
}

#[tokio::test]
async fn writes_of_every_iteration_reach_the_turn_exactly_once_and_in_order_on_ack() {
    let storage = RecordingStorage::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            let iteration = ctx.iteration();
            ctx.store_message(message(&format!("m{iteration}"), "text"))
                .await?;
            match iteration {
                0 => {
                    ctx.store_memory(Memory::new("memory-0", "likes tea", 0.9, 0.5)?)
                        .await?;
                }
                1 => {
                    let call = ToolCall::new("call-1", "forecast", json!({"city": "Oslo"}))?;
                    ctx.store_tool_call(call).await?;
                }
                _ => ctx.ack()?,
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    let outcome = run(&runner).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        storage.calls(),
        [
            "store_message m0",
            "store_memory memory-0",
            "store_message m1",
            "store_tool_call call-1",
            "store_message m2"
        ]
    );
    assert_eq!(storage.message_ids(), ["m0", "m1", "m2"]);
    let turn = &outcome.context;
    assert_eq!(message_ids(&turn.messages), ["m0", "m1", "m2"]);
    let memories: Vec<&str> = turn.memories.iter().map(Memory::id).collect();
    assert_eq!(memories, ["memory-0"]);
    let calls: Vec<&str> = turn.tool_calls.iter().map(ToolCall::id).collect();
    assert_eq!(calls, ["call-1"]);
}

#[tokio::test]
async fn a_mutate_in_a_later_iteration_replaces_the_flushed_record_where_it_stands() {
    let storage = RecordingStorage::new();
    let seen = Log::new();
    let log = seen.clone();
    let executor = executor_fn(move |ctx: &mut DispatchContext| {
        let log = log.clone();
        Box::pin(async move {
            if ctx.iteration() == 0 {
                for id in ["a", "b", "c"] {
                    ctx.store_message(message(id, "first")).await?;
                }
                return Ok(());
            }
            ctx.mutate_message(message("b", "second")).await?;
            log.push(described(&ctx.messages).join(" "));
            ctx.ack()?;
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    let outcome = run(&runner).await;

    let expected = ["a=first", "b=second", "c=first"];
    assert_eq!(seen.entries(), [expected.join(" ")], "in the dispatch");
    assert_eq!(
        described(&outcome.context.messages),
        expected,
        "in the turn"
    );
    assert_eq!(described(&storage.messages()), expected, "in the adapter");
}

#[tokio::test]
async fn a_delete_in_a_later_iteration_removes_the_flushed_record_from_the_turn() {
    let storage = RecordingStorage::new();
    let executor = executor_fn(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            match ctx.iteration() {
                0 => {
                    ctx.store_message(message("a", "keep?")).await?;
                    ctx.store_message(message("b", "keep")).await?;
                }
                1 => ctx.delete_message("a").await?,
                _ => ctx.ack()?,
            }
            Ok::<(), BoxError>(())
        })
    });
    let runner = runner_with(executor, &storage, &EventRecorder::new(), &Log::new()).build();
    let outcome = run(&runner).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(message_ids(&outcome.context.messages), ["b"]);
    assert_eq!(storage.message_ids(), ["b"]);
    assert_eq!(
        storage.calls(),
        ["store_message a", "store_message b", "delete_message a"]
    );
}

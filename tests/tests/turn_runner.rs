//! The turn runner as a specification: the order of a turn's steps and the ids its events
//! carry, fresh state on every run, refusal of invalid input before anything runs, the one-way
//! seeding of the dispatch stash, storage delegation from the turn context, and isolation
//! between concurrent turns.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::context::{
    AbortReason, Aborted, DispatchContext, InvalidTurnContext, RawTurnContext, TurnContext,
};
use adk::dispatch::executor_fn;
use adk::events::{ErrorCode, Event};
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{Message, Retrievable, Tool, ToolError, ToolRegistry, TrustTier};
use adk::runner::{TurnOutcome, TurnStatus};
use adk::storage::{NoopStorage, SharedStorage, StorageError, TurnId};
use adk::{StashError, TurnRunner};
use adk_integration_tests::{EventRecorder, Log, RecordingStorage, ScriptedExecutor, Step};
use serde_json::json;

fn raw() -> RawTurnContext {
    RawTurnContext::new("conversation-1", "You are a test.")
}

async fn run(runner: &TurnRunner, raw: RawTurnContext) -> TurnOutcome {
    runner
        .run(raw)
        .await
        .expect("the raw turn context is valid")
}

fn text_of(message: &Message) -> String {
    message
        .content()
        .map(|content| content.render())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Step order and ids

#[tokio::test]
async fn an_observed_turn_s_times_run_from_its_start_on_one_clock() {
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Continue, Step::Ack]))
        .observe(events.listener())
        .build();
    let before = std::time::SystemTime::now();
    let outcome = run(&runner, raw()).await;
    let after = std::time::SystemTime::now();
    assert!(outcome.is_completed());

    let recorded = events.events();
    let Some(Event::TurnStart { started_at, .. }) = recorded.first() else {
        panic!("the first event is the turn's start: {recorded:?}");
    };
    let Some(Event::TurnEnd {
        started_at: end_says_started,
        ended_at,
        duration,
        ..
    }) = recorded.last()
    else {
        panic!("the last event is the turn's end: {recorded:?}");
    };
    assert_eq!(end_says_started, started_at);
    assert!(before <= *started_at && started_at <= ended_at && *ended_at <= after);
    // Both ends come from one clock origin: the duration is exactly their difference.
    assert_eq!(ended_at.duration_since(*started_at).ok(), Some(*duration));
    for event in &recorded {
        if let Event::DispatchStart { started_at: at, .. }
        | Event::IterationStart { started_at: at, .. } = event
        {
            assert!(
                started_at <= at && at <= ended_at,
                "{event:?} inside the turn"
            );
        }
    }
}

#[tokio::test]
async fn lifecycle_events_come_in_step_order_each_once_with_matching_ids() {
    let events = EventRecorder::new();
    let seen_by_executor = Log::new();
    let executor_log = seen_by_executor.clone();
    let script = ScriptedExecutor::new([Step::Continue, Step::Continue, Step::Ack]);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let log = executor_log.clone();
            let script = script.clone();
            Box::pin(async move {
                log.push(format!("{} {}", ctx.turn_id(), ctx.dispatch_id()));
                adk::dispatch::Executor::execute(&script, ctx).await
            })
        }))
        .observe(events.listener())
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "iterationEnd",
            "iterationStart",
            "iterationEnd",
            "iterationStart",
            "dispatchEnd",
            "turnEnd"
        ]
    );

    let turn_id = outcome.context.turn_id().clone();
    let mut dispatch_ids = HashSet::new();
    let mut turn_ids: Vec<&TurnId> = Vec::new();
    let mut iterations = Vec::new();
    let recorded = events.events();
    for event in &recorded {
        match event {
            Event::TurnStart { turn_id, .. } | Event::TurnEnd { turn_id, .. } => {
                turn_ids.push(turn_id);
            }
            Event::DispatchStart {
                turn_id,
                dispatch_id,
                ..
            } => {
                turn_ids.push(turn_id);
                dispatch_ids.insert(dispatch_id.clone());
            }
            Event::DispatchEnd {
                turn_id,
                dispatch_id,
                iterations: completed,
                ..
            } => {
                turn_ids.push(turn_id);
                dispatch_ids.insert(dispatch_id.clone());
                // Three iterations began; the third was acknowledged by the executor, so two reached their end.
                assert_eq!(*completed, 3);
            }
            Event::IterationStart {
                dispatch_id,
                iteration,
                ..
            }
            | Event::IterationEnd {
                dispatch_id,
                iteration,
                ..
            } => {
                dispatch_ids.insert(dispatch_id.clone());
                iterations.push(*iteration);
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(
        turn_ids, [&turn_id; 4],
        "every turn-level event carries the turn's id"
    );
    assert_eq!(
        dispatch_ids.len(),
        1,
        "one dispatch per turn, one id: {dispatch_ids:?}"
    );
    assert_eq!(iterations, [0, 0, 1, 1, 2]);
    let dispatch_id = dispatch_ids.into_iter().next().unwrap_or_default();
    let expected = format!("{turn_id} {dispatch_id}");
    assert_eq!(
        seen_by_executor.entries(),
        vec![expected; 3],
        "the executor's context carries the same turn and dispatch ids"
    );
}

#[tokio::test]
async fn a_failed_dispatch_ends_before_its_error_which_precedes_turn_end() {
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Fail("boom")]))
        .observe(events.listener())
        .build();
    let _ = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            ("turnStart", ""),
            ("dispatchStart", ""),
            ("iterationStart", ""),
            ("dispatchEnd", "nack"),
            ("error", ErrorCode::ExecutorError.as_str()),
            ("turnEnd", "")
        ]
    );
}

#[tokio::test]
async fn a_runaway_executor_is_stopped_at_the_iteration_bound() {
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Continue; 3]))
        .max_iterations(2)
        .observe(events.listener())
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        events.trace(),
        [
            ("turnStart", ""),
            ("dispatchStart", ""),
            ("iterationStart", ""),
            ("iterationEnd", ""),
            ("iterationStart", ""),
            ("iterationEnd", ""),
            ("dispatchEnd", "nack"),
            ("error", ErrorCode::IterationLimitExceeded.as_str()),
            ("turnEnd", "")
        ]
    );
    assert!(!outcome.is_completed());
}

// ---------------------------------------------------------------------------------------------
// Fresh state on every run

#[tokio::test]
async fn running_one_runner_three_times_runs_every_middleware_each_time_from_the_seed() {
    let log = Log::new();
    let events = EventRecorder::new();
    let counted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&counted);
    let reader = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([Step::Continue, Step::Ack]).logging_to(log.clone()))
        .observe(events.listener())
        .turn_input(log.marker("turn_input"))
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            let counter = Arc::clone(&counter);
            Box::pin(async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let count: u32 = ctx.stash.get("test.count")?.unwrap_or_default();
                ctx.stash.set("test.count", count + 1)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(log.marker("dispatch_input"))
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .turn_output(from_fn(move |ctx: &mut TurnContext, next| {
            let log = reader.clone();
            Box::pin(async move {
                let count: Option<u32> = ctx.stash.get("test.count")?;
                log.push(format!("count {count:?}"));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();

    let mut turn_ids = HashSet::new();
    for run_number in 1..=3 {
        log.clear();
        events.clear();
        let outcome = run(&runner, raw().stash(json!({"test": {"count": 10}}))).await;

        assert!(
            outcome.is_completed(),
            "run {run_number}: {:?}",
            outcome.status
        );
        assert_eq!(
            log.joined(),
            "turn_input-pre turn_input-post \
             dispatch_input-pre dispatch_input-post executor dispatch_output-pre dispatch_output-post \
             dispatch_input-pre dispatch_input-post executor \
             turn_output-pre count Some(11) turn_output-post",
            "run {run_number}"
        );
        assert_eq!(
            events.names(),
            [
                "turnStart",
                "dispatchStart",
                "iterationStart",
                "iterationEnd",
                "iterationStart",
                "dispatchEnd",
                "turnEnd"
            ],
            "run {run_number}"
        );
        assert_eq!(outcome.context.stash.all(), json!({"test": {"count": 11}}));
        turn_ids.insert(outcome.context.turn_id().clone());
    }
    assert_eq!(counted.load(Ordering::SeqCst), 3);
    assert_eq!(turn_ids.len(), 3, "every run is a new turn with its own id");
}

// ---------------------------------------------------------------------------------------------
// Invalid raw input: refused before anything runs, nothing emitted

struct Watched {
    runner: TurnRunner,
    log: Log,
    events: EventRecorder,
    executor: ScriptedExecutor,
}

fn watched(tools: Vec<Tool>) -> Watched {
    let log = Log::new();
    let events = EventRecorder::new();
    let executor = ScriptedExecutor::acking().logging_to(log.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor.clone())
        .tools(tools)
        .observe(events.listener())
        .turn_input(log.marker("turn_input"))
        .dispatch_input(log.marker("dispatch_input"))
        .dispatch_output(log.marker("dispatch_output"))
        .turn_output(log.marker("turn_output"))
        .build();
    Watched {
        runner,
        log,
        events,
        executor,
    }
}

fn assert_nothing_ran(watched: &Watched) {
    assert_eq!(watched.events.names(), Vec::<&str>::new());
    assert_eq!(watched.log.entries(), Vec::<String>::new());
    assert_eq!(watched.executor.runs(), 0);
}

#[tokio::test]
async fn an_empty_system_prompt_is_refused_before_anything_runs() {
    let watched = watched(Vec::new());
    let refused = watched
        .runner
        .run(RawTurnContext::new("conversation-1", ""))
        .await
        .expect_err("an empty system prompt is invalid");

    assert!(
        matches!(refused, InvalidTurnContext::EmptySystemPrompt),
        "{refused:?}"
    );
    assert_eq!(refused.code(), ErrorCode::InvalidTurnContext);
    assert!(refused.to_string().contains("system prompt"), "{refused}");
    assert_nothing_ran(&watched);
}

#[tokio::test]
async fn an_empty_conversation_id_is_refused_before_anything_runs() {
    let watched = watched(Vec::new());
    let refused = watched
        .runner
        .run(RawTurnContext::new("", "You are a test."))
        .await
        .expect_err("an empty conversation id is invalid");

    assert!(
        matches!(refused, InvalidTurnContext::EmptyConversationId),
        "{refused:?}"
    );
    assert_eq!(refused.code(), ErrorCode::InvalidTurnContext);
    assert_nothing_ran(&watched);
}

#[tokio::test]
async fn a_flat_keyed_stash_seed_is_refused_before_anything_runs_and_handed_back() {
    let watched = watched(Vec::new());
    let seed = json!({"my-org.count": 5});
    let refused = watched
        .runner
        .run(raw().stash(seed.clone()))
        .await
        .expect_err("a flat-keyed seed is invalid");

    let InvalidTurnContext::Stash(stash_error) = &refused else {
        panic!("expected a stash refusal, got {refused:?}");
    };
    assert!(
        matches!(stash_error, StashError::InvalidSeedKey { .. }),
        "{stash_error:?}"
    );
    assert_eq!(stash_error.rejected_value(), Some(&seed));
    assert!(refused.to_string().contains("my-org.count"), "{refused}");
    assert_eq!(refused.code(), ErrorCode::InvalidTurnContext);
    assert_nothing_ran(&watched);
}

fn lookup_tool(description: &str) -> Tool {
    Tool::builder("lookup")
        .description(description)
        .handler(|_args, _invocation| async { Ok::<_, ToolError>("found") })
        .build()
        .expect("the tool is valid")
}

#[tokio::test]
async fn duplicate_tool_names_are_refused_before_anything_runs() {
    let watched = watched(vec![
        lookup_tool("Looks things up."),
        lookup_tool("Looks other things up."),
    ]);
    let refused = watched
        .runner
        .run(raw())
        .await
        .expect_err("two tools named `lookup` are invalid");

    assert!(
        matches!(refused, InvalidTurnContext::Tools(_)),
        "{refused:?}"
    );
    assert_eq!(refused.code(), ErrorCode::ToolAlreadyRegistered);
    assert!(refused.to_string().contains("\"lookup\""), "{refused}");
    assert_nothing_ran(&watched);
}

// ---------------------------------------------------------------------------------------------
// Turn and dispatch stash: the dispatch's is a copy of the turn's, nothing flows back

#[tokio::test]
async fn the_dispatch_stash_is_seeded_from_the_turn_and_never_writes_back() {
    let log = Log::new();
    let (dispatch_log, output_log) = (log.clone(), log.clone());
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::acking())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.stash.set("turn.seen", "from turn_input")?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = dispatch_log.clone();
            Box::pin(async move {
                let seen: Option<String> = ctx.stash.get("turn.seen")?;
                log.push(format!("dispatch sees turn.seen {seen:?}"));
                ctx.stash.set("dispatch.note", "from dispatch_input")?;
                ctx.stash.set("turn.seen", "overwritten in the dispatch")?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_output(from_fn(move |ctx: &mut TurnContext, next| {
            let log = output_log.clone();
            Box::pin(async move {
                let note: Option<String> = ctx.stash.get("dispatch.note")?;
                let seen: Option<String> = ctx.stash.get("turn.seen")?;
                log.push(format!("turn_output sees dispatch.note {note:?}"));
                log.push(format!("turn_output sees turn.seen {seen:?}"));
                ctx.stash.set("turn.output", "from turn_output")?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        log.entries(),
        [
            "dispatch sees turn.seen Some(\"from turn_input\")",
            "turn_output sees dispatch.note None",
            "turn_output sees turn.seen Some(\"from turn_input\")",
        ]
    );
    assert_eq!(
        outcome.context.stash.all(),
        json!({"turn": {"seen": "from turn_input", "output": "from turn_output"}})
    );
}

#[tokio::test]
async fn the_dispatch_stash_lives_across_the_iterations_of_one_dispatch() {
    let log = Log::new();
    let reader = log.clone();
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(ScriptedExecutor::new([
            Step::Continue,
            Step::Continue,
            Step::Ack,
        ]))
        .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
            let log = reader.clone();
            Box::pin(async move {
                let before: u32 = ctx.stash.get("dispatch.iterations")?.unwrap_or_default();
                log.push(format!("iteration {} saw {before}", ctx.iteration()));
                ctx.stash.set("dispatch.iterations", before + 1)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        log.entries(),
        [
            "iteration 0 saw 0",
            "iteration 1 saw 1",
            "iteration 2 saw 2"
        ]
    );
    assert!(!outcome.context.stash.has("dispatch"));
}

// ---------------------------------------------------------------------------------------------
// Storage, delegated from the turn context

fn message(id: &str, text: &str) -> Message {
    Message::user(id, text).expect("the message is valid")
}

fn turn_context(storage: &RecordingStorage) -> TurnContext {
    TurnContext::new(
        raw(),
        SharedStorage::new(storage.clone()),
        ToolRegistry::new(),
    )
    .expect("the raw turn context is valid")
}

fn ids(ctx: &TurnContext) -> Vec<&str> {
    ctx.messages.iter().map(Message::id).collect()
}

#[tokio::test]
async fn the_runner_calls_no_storage_method_on_its_own() {
    let storage = RecordingStorage::with_messages([message("m1", "earlier")]);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .executor(ScriptedExecutor::acking())
        .build();
    let outcome = run(&runner, raw()).await;

    assert!(outcome.is_completed());
    assert_eq!(storage.calls(), Vec::<String>::new());
    assert!(outcome.context.messages.is_empty());
}

// docs/pipelines.md: "The runner calls the storage adapter on its own for exactly two things: it
// stores the caller's user message (`RawTurnContext::user_message`) with `store_message` before
// `turn_input`, ... and a dispatch spools the retrievables it starts with through
// `store_retrievable_bytes`". It never fetches.
#[tokio::test]
async fn the_runner_calls_the_adapter_on_its_own_only_to_store_the_user_message_and_spool_preloaded_retrievables()
 {
    let storage = RecordingStorage::with_messages([message("m1", "earlier")]);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        // Added to the turn directly, not stored: the dispatch spools it on its own.
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.retrievables.add(Retrievable::new(
                    "preloaded",
                    "from a cache",
                    TrustTier::FirstParty,
                )?);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(ScriptedExecutor::acking())
        .build();
    let outcome = run(&runner, raw().user_message("Hello!")).await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let calls: Vec<String> = storage
        .calls()
        .iter()
        .map(|call| call.split(' ').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(calls, ["store_message", "store_retrievable_bytes"]);
}

// docs/pipelines.md, the abort example: "Cancelled by the caller before the turn began: nothing
// runs and nothing is stored." History never holds a question the turn was never going to
// answer.
#[tokio::test]
async fn cancelled_by_the_caller_before_the_turn_began_nothing_runs_and_nothing_is_stored() {
    let storage = RecordingStorage::new();
    let recorder = EventRecorder::new();
    let log = Log::new();
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .observe(recorder.listener())
        .turn_input(log.marker("turn_input"))
        .executor(ScriptedExecutor::acking().logging_to(log.clone()))
        .build();
    let token = adk::context::CancellationToken::new();
    token.cancel();
    let outcome = run(&runner, raw().user_message("Hello?").cancellation(token)).await;

    assert!(
        matches!(outcome.status, TurnStatus::Aborted(AbortReason::Cancelled)),
        "{:?}",
        outcome.status
    );
    assert_eq!(recorder.names(), ["turnStart", "turnEnd"]);
    assert!(log.entries().is_empty(), "{:?}", log.entries());
    assert_eq!(
        storage.calls(),
        Vec::<String>::new(),
        "the adapter was called"
    );
    assert!(storage.messages().is_empty(), "the user message was stored");
}

// docs/pipelines.md, "Every failure reaches the bus", and docs/storage.md, "A `StorageError` is
// never swallowed": an error a post-step returns after a downstream abort is a failure of its
// own, reported, unless the abort caused it.
#[tokio::test]
async fn every_failure_reaches_the_bus_even_a_post_step_error_after_a_downstream_abort() {
    let failures: [fn() -> BoxError; 2] = [
        || "the post-step broke".into(),
        || StorageError::backend("disk full").into(),
    ];
    for (case, failure) in failures.into_iter().enumerate() {
        for in_dispatch in [false, true] {
            let recorder = EventRecorder::new();
            let mut builder = TurnRunner::builder()
                .storage(NoopStorage::new())
                .observe(recorder.listener());
            if in_dispatch {
                builder = builder
                    .dispatch_input(from_fn(move |ctx: &mut DispatchContext, next| {
                        Box::pin(async move {
                            let _ = next.run(ctx).await;
                            Err::<(), BoxError>(failure())
                        })
                    }))
                    .dispatch_input(from_fn(|ctx: &mut DispatchContext, _next| {
                        Box::pin(async move {
                            ctx.abort("stop here");
                            Ok::<(), BoxError>(())
                        })
                    }));
            } else {
                builder = builder
                    .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
                        Box::pin(async move {
                            let _ = next.run(ctx).await;
                            Err::<(), BoxError>(failure())
                        })
                    }))
                    .turn_input(from_fn(|ctx: &mut TurnContext, _next| {
                        Box::pin(async move {
                            ctx.abort("stop here");
                            Ok::<(), BoxError>(())
                        })
                    }));
            }
            let outcome = run(&builder.executor(ScriptedExecutor::acking()).build(), raw()).await;

            let expected = if in_dispatch {
                ErrorCode::DispatchPipelineError
            } else {
                ErrorCode::InputPipelineError
            };
            let label = format!("failure {case}, in the dispatch: {in_dispatch}");
            let codes: Vec<ErrorCode> =
                recorder.errors().iter().map(|error| error.code()).collect();
            assert_eq!(codes, [expected], "{label}");
            assert_eq!(
                outcome.error().map(|error| error.code()),
                Some(expected),
                "{label}: {:?}",
                outcome.status
            );
        }
    }
}

// ... and an error the abort caused (the abort error itself, a gate it settled, a storage call
// it stopped) is still part of the abort: no error event.
#[tokio::test]
async fn an_error_the_abort_caused_is_absorbed_into_it() {
    let caused: [fn() -> BoxError; 3] = [
        || Aborted::new("again").into(),
        || {
            adk::gate::GateError::Aborted {
                gate_id: "approve".to_owned(),
            }
            .into()
        },
        || {
            let ctx = adk::storage::StorageContext::new("conversation-1");
            StorageError::cancelled(&ctx).into()
        },
    ];
    for (case, error) in caused.into_iter().enumerate() {
        let recorder = EventRecorder::new();
        let runner = TurnRunner::builder()
            .storage(NoopStorage::new())
            .observe(recorder.listener())
            .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
                Box::pin(async move {
                    let _ = next.run(ctx).await;
                    Err::<(), BoxError>(error())
                })
            }))
            .turn_input(from_fn(|ctx: &mut TurnContext, _next| {
                Box::pin(async move {
                    ctx.abort("stop here");
                    Ok::<(), BoxError>(())
                })
            }))
            .executor(ScriptedExecutor::acking())
            .build();
        let outcome = run(&runner, raw()).await;
        assert!(
            recorder.errors().is_empty(),
            "case {case}: {:?}",
            recorder.errors()
        );
        assert!(
            matches!(&outcome.status, TurnStatus::Aborted(AbortReason::Requested(reason)) if reason == "stop here"),
            "case {case}: {:?}",
            outcome.status
        );
    }
}

#[tokio::test]
async fn fetching_through_the_turn_context_never_fills_a_collection() {
    let storage = RecordingStorage::with_messages([message("m1", "hello"), message("m2", "again")]);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .executor(ScriptedExecutor::acking())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let fetched = ctx.fetch_messages().await?;
                ctx.stash.set("test.fetched", fetched.len())?;
                ctx.stash.set("test.loaded", ctx.messages.len())?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, raw()).await;

    assert_eq!(
        outcome.context.stash.all(),
        json!({"test": {"fetched": 2, "loaded": 0}})
    );
    assert!(outcome.context.messages.is_empty());
    assert_eq!(storage.calls(), ["fetch_messages"]);
}

#[tokio::test]
async fn store_mutate_and_delete_persist_through_the_adapter_and_update_the_collection() {
    let storage = RecordingStorage::new();
    let mut ctx = turn_context(&storage);

    for (id, text) in [("m1", "one"), ("m2", "two"), ("m3", "three")] {
        ctx.store_message(message(id, text))
            .await
            .expect("the store succeeds");
    }
    assert_eq!(ids(&ctx), ["m1", "m2", "m3"]);

    ctx.mutate_message(message("m1", "one, edited"))
        .await
        .expect("the mutate succeeds");
    assert_eq!(ids(&ctx), ["m1", "m2", "m3"], "a mutate keeps the position");
    let edited = ctx.messages.get("m1").map(text_of);
    assert_eq!(edited.as_deref(), Some("one, edited"));

    ctx.delete_message("m2").await.expect("the delete succeeds");
    assert_eq!(ids(&ctx), ["m1", "m3"]);

    assert_eq!(
        storage.calls(),
        [
            "store_message m1",
            "store_message m2",
            "store_message m3",
            "mutate_message m1",
            "delete_message m2"
        ]
    );
    assert_eq!(storage.message_ids(), ["m1", "m3"]);
    let stored: Vec<String> = storage.messages().iter().map(text_of).collect();
    assert_eq!(stored, ["one, edited", "three"]);
}

#[tokio::test]
async fn a_write_the_adapter_refuses_leaves_the_collection_unchanged() {
    let storage = RecordingStorage::new();
    let mut ctx = turn_context(&storage);
    ctx.store_message(message("m1", "one"))
        .await
        .expect("the store succeeds");

    let refused = ctx
        .mutate_message(message("missing", "nowhere to go"))
        .await
        .expect_err("the adapter refuses to mutate a message it does not hold");

    assert!(
        matches!(refused, StorageError::NotFound { ref id, .. } if id == "missing"),
        "{refused:?}"
    );
    assert_eq!(ids(&ctx), ["m1"]);
}

#[tokio::test]
async fn executor_writes_reach_the_turn_only_when_the_dispatch_is_acknowledged() {
    async fn turn_with(step: Step) -> (TurnOutcome, RecordingStorage) {
        let storage = RecordingStorage::new();
        let script = ScriptedExecutor::new([step]);
        let runner = TurnRunner::builder()
            .storage(storage.clone())
            .executor(executor_fn(move |ctx: &mut DispatchContext| {
                let script = script.clone();
                Box::pin(async move {
                    ctx.store_message(message("reply", "an answer")).await?;
                    adk::dispatch::Executor::execute(&script, ctx).await
                })
            }))
            .build();
        (run(&runner, raw()).await, storage)
    }

    let (acked, storage) = turn_with(Step::Ack).await;
    assert_eq!(ids(&acked.context), ["reply"]);
    assert_eq!(storage.calls(), ["store_message reply"]);

    let (nacked, storage) = turn_with(Step::Nack("not good enough")).await;
    assert!(nacked.context.messages.is_empty());
    // What the adapter persisted stays persisted; the turn never sees it.
    assert_eq!(storage.calls(), ["store_message reply"]);
}

// ---------------------------------------------------------------------------------------------
// Concurrent turns

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_turns_keep_their_stashes_apart() {
    const TURNS: u64 = 1_000;
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let number: u64 = ctx.stash.get("load.number")?.ok_or("no seed")?;
                tokio::task::yield_now().await;
                ctx.stash.set("load.copied", number)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_input(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                let number: u64 = ctx.stash.get("load.copied")?.ok_or("no copy")?;
                tokio::task::yield_now().await;
                ctx.stash.set("load.dispatched", number)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let number: u64 = ctx
                    .stash
                    .get("load.dispatched")?
                    .ok_or("no dispatch copy")?;
                tokio::task::yield_now().await;
                let reply = Message::assistant(format!("reply-{number}"), number.to_string())?;
                ctx.store_message(reply).await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .turn_output(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let reply = ctx.messages.iter().next().ok_or("no reply")?;
                let number: u64 = text_of(reply).parse()?;
                tokio::task::yield_now().await;
                ctx.stash.set("load.answered", number)?;
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .build();

    let turns: Vec<_> = (0..TURNS)
        .map(|number| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let raw = RawTurnContext::new(format!("conversation-{number}"), "p")
                    .stash(json!({"load": {"number": number}}));
                (number, runner.run(raw).await)
            })
        })
        .collect();

    let mut turn_ids = HashSet::new();
    for turn in turns {
        let (number, outcome) = turn.await.expect("the turn's task finished");
        let outcome = outcome.expect("the raw turn context is valid");
        assert!(
            outcome.is_completed(),
            "turn {number}: {:?}",
            outcome.status
        );
        assert_eq!(
            outcome.context.stash.all(),
            json!({"load": {"number": number, "copied": number, "answered": number}}),
            "turn {number}"
        );
        assert_eq!(ids(&outcome.context), [format!("reply-{number}")]);
        turn_ids.insert(outcome.context.turn_id().clone());
    }
    assert_eq!(turn_ids.len(), 1_000);
}

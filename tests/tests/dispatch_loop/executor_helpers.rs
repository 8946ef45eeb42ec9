//! Executor helpers (spec 3.10).

use super::*;

/// Runs a turn whose executor plays `script`, recording every event; returns the events and
/// the outcome.
async fn recorded_by<F>(script: F) -> (EventRecorder, TurnOutcome)
where
    F: for<'a> Fn(&'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>>
        + Send
        + Sync
        + 'static,
{
    let events = EventRecorder::new();
    let runner = TurnRunner::builder()
        .storage(RecordingStorage::new())
        .executor(executor_fn(script))
        .observe(events.listener())
        .build();
    let outcome = run(&runner).await;
    (events, outcome)
}

fn streamed(events: &EventRecorder, thoughts: bool) -> Vec<StreamedContent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Message(content) if !thoughts => Some(content),
            Event::Thought(content) if thoughts => Some(content),
            _ => None,
        })
        .collect()
}

/// `id full|delta|complete` for each chunk, `+done` when `completed_at` is set.
fn chunks(contents: &[StreamedContent]) -> Vec<String> {
    contents
        .iter()
        .map(|content| {
            format!(
                "{} {}|{}|{}{}",
                content.id,
                content.full,
                content.delta,
                content.is_complete,
                if content.completed_at.is_some() {
                    "+done"
                } else {
                    ""
                }
            )
        })
        .collect()
}

#[tokio::test]
async fn report_message_accumulates_per_id_and_refuses_chunks_after_completion() {
    let refusals: Arc<Mutex<Vec<Result<StreamedContent, ReportError>>>> = Arc::default();
    let kept = Arc::clone(&refusals);
    let (events, outcome) = recorded_by(move |ctx: &mut DispatchContext| {
        let kept = Arc::clone(&kept);
        Box::pin(async move {
            if ctx.iteration() == 0 {
                ctx.report_message("m1", "Hel", false)?;
                ctx.report_message("m2", "Hi", false)?;
                ctx.report_message("m1", "lo", true)?;
                let late = ctx.report_message("m1", "!", false);
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(late);
                ctx.report_message("m2", " there", true)?;
                return Ok(());
            }
            // A stream's state lives as long as the dispatch, across iterations.
            let reopened = ctx.report_message("m2", "again", false);
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(reopened);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let contents = streamed(&events, false);
    assert_eq!(
        chunks(&contents),
        [
            "m1 Hel|Hel|false",
            "m2 Hi|Hi|false",
            "m1 Hello|lo|true+done",
            "m2 Hi there| there|true+done"
        ]
    );
    assert_eq!(
        contents[2].created_at, contents[0].created_at,
        "created_at is the first chunk's"
    );
    let refusals = refusals.lock().unwrap_or_else(PoisonError::into_inner);
    assert_eq!(
        *refusals,
        [
            Err(ReportError::StreamComplete { id: "m1".into() }),
            Err(ReportError::StreamComplete { id: "m2".into() })
        ]
    );
    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "message",
            "message",
            "message",
            "message",
            "iterationEnd",
            "iterationStart",
            "dispatchEnd",
            "turnEnd"
        ],
        "a refused chunk emits nothing"
    );
}

#[tokio::test]
async fn a_refused_chunk_returned_with_question_mark_ends_the_dispatch_as_an_executor_error() {
    let (events, outcome) = recorded_by(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            ctx.report_message("m1", "done.", true)?;
            ctx.report_message("m1", " and more", false)?;
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        events.trace(),
        [
            TURN_START,
            DISPATCH_START,
            ITERATION_START,
            ("message", ""),
            NACKED,
            error(ErrorCode::ExecutorError),
            TURN_END
        ]
    );
    let failed = failed_with(&outcome);
    assert_eq!(failed.code().as_str(), "E_LLM_EXECUTION_EXECUTOR_ERROR");
    assert!(
        format!("{failed:#}").contains("already complete"),
        "{failed:#}"
    );
    assert_eq!(
        *cause_of::<ReportError>(failed),
        ReportError::StreamComplete { id: "m1".into() }
    );
}

#[tokio::test]
async fn report_thought_accumulates_apart_from_messages_with_the_same_id() {
    let refused: Arc<Mutex<Option<ReportError>>> = Arc::default();
    let kept = Arc::clone(&refused);
    let (events, _) = recorded_by(move |ctx: &mut DispatchContext| {
        let kept = Arc::clone(&kept);
        Box::pin(async move {
            ctx.report_thought("x", "let me ", false)?;
            ctx.report_thought("x", "think", true)?;
            // The same id in the message stream is another stream.
            ctx.report_message("x", "answer", true)?;
            *kept.lock().unwrap_or_else(PoisonError::into_inner) =
                ctx.report_thought("x", "more", false).err();
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        chunks(&streamed(&events, true)),
        ["x let me |let me |false", "x let me think|think|true+done"]
    );
    assert_eq!(
        chunks(&streamed(&events, false)),
        ["x answer|answer|true+done"]
    );
    assert_eq!(
        *refused.lock().unwrap_or_else(PoisonError::into_inner),
        Some(ReportError::StreamComplete { id: "x".into() })
    );
}

#[tokio::test]
async fn report_tool_call_merges_updates_and_computes_the_checksum_once_tool_and_args_are_known() {
    let refused: Arc<Mutex<Option<ReportError>>> = Arc::default();
    let kept = Arc::clone(&refused);
    let (events, _) = recorded_by(move |ctx: &mut DispatchContext| {
        let kept = Arc::clone(&kept);
        Box::pin(async move {
            ctx.report_tool_call(
                "t1",
                ToolCallUpdate::new().args(json!({"days": 2, "city": "Oslo"})),
            )?;
            ctx.report_tool_call("t1", ToolCallUpdate::new().tool("forecast"))?;
            ctx.report_tool_call(
                "t1",
                ToolCallUpdate::new().results(json!("sunny")).complete(),
            )?;
            *kept.lock().unwrap_or_else(PoisonError::into_inner) = ctx
                .report_tool_call("t1", ToolCallUpdate::new().error())
                .err();
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    let updates: Vec<ToolCallContent> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolCall(content) => Some(content),
            _ => None,
        })
        .collect();
    let summary: Vec<_> = updates
        .iter()
        .map(|update| {
            (
                update.tool.as_str(),
                &update.args,
                update.checksum.as_str(),
                update.is_complete,
                update.results.as_ref(),
                update.completed_at.is_some(),
            )
        })
        .collect();
    let args = json!({"city": "Oslo", "days": 2});
    let Value::Object(map) = &args else {
        unreachable!("the arguments are an object")
    };
    let checksum = tool_call_checksum("forecast", map);
    let sunny = json!("sunny");
    assert_eq!(
        summary,
        [
            ("", &args, "", false, None, false),
            ("forecast", &args, checksum.as_str(), false, None, false),
            (
                "forecast",
                &args,
                checksum.as_str(),
                true,
                Some(&sunny),
                true
            )
        ]
    );
    assert!(
        updates
            .iter()
            .all(|update| update.id == "t1" && !update.is_error)
    );
    let stored = ToolCall::new("t1", "forecast", json!({"days": 2, "city": "Oslo"}))
        .expect("the call is valid");
    assert_eq!(
        stored.checksum(),
        checksum,
        "the reported checksum is the one the stored call carries"
    );
    assert_eq!(
        *refused.lock().unwrap_or_else(PoisonError::into_inner),
        Some(ReportError::ToolCallComplete { id: "t1".into() })
    );
}

#[tokio::test]
async fn log_emits_structured_records_tagged_with_the_dispatch_and_iteration() {
    let (events, _) = recorded_by(|ctx: &mut DispatchContext| {
        Box::pin(async move {
            if ctx.iteration() == 0 {
                ctx.log(
                    LogLevel::Warn,
                    "retry",
                    "the model timed out",
                    Some(json!({"attempt": 2})),
                );
                ctx.log(LogLevel::Debug, "prompt", "prompt built", None);
                return Ok(());
            }
            ctx.log(LogLevel::Info, "answer", "answered", None);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "log",
            "log",
            "iterationEnd",
            "iterationStart",
            "log",
            "dispatchEnd",
            "turnEnd"
        ]
    );
    let recorded = events.events();
    let dispatch_id = recorded
        .iter()
        .find_map(|event| match event {
            Event::DispatchStart { dispatch_id, .. } => Some(dispatch_id.clone()),
            _ => None,
        })
        .expect("the dispatch started");
    let records: Vec<_> = recorded
        .iter()
        .filter_map(|event| match event {
            Event::Log(record) => Some(record),
            _ => None,
        })
        .collect();
    assert!(
        records
            .iter()
            .all(|record| record.dispatch_id == dispatch_id)
    );
    let summary: Vec<_> = records
        .iter()
        .map(|record| {
            (
                record.iteration,
                record.level.as_str(),
                record.kind.as_str(),
                record.message.as_str(),
                record.payload.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                0,
                "warn",
                "retry",
                "the model timed out",
                Some(json!({"attempt": 2}))
            ),
            (0, "debug", "prompt", "prompt built", None),
            (1, "info", "answer", "answered", None)
        ]
    );
}

#[tokio::test]
async fn report_generation_stats_emits_generation_stats_inside_the_dispatch() {
    let mut stats = GenerationStats::new();
    stats.prompt_tokens = Some(12);
    stats.completion_tokens = Some(30);
    stats.total_tokens = Some(42);
    stats.finish_reason = Some("stop".to_owned());
    stats.model = Some("test-model".to_owned());
    let reported = stats.clone();
    let (events, _) = recorded_by(move |ctx: &mut DispatchContext| {
        let stats = reported.clone();
        Box::pin(async move {
            ctx.report_generation_stats(stats);
            ctx.ack()?;
            Ok(())
        })
    })
    .await;

    assert_eq!(
        events.names(),
        [
            "turnStart",
            "dispatchStart",
            "iterationStart",
            "generationStats",
            "dispatchEnd",
            "turnEnd"
        ]
    );
    let emitted = events.events().into_iter().find_map(|event| match event {
        Event::GenerationStats {
            iteration, stats, ..
        } => Some((iteration, stats)),
        _ => None,
    });
    assert_eq!(emitted, Some((0, stats)));
}

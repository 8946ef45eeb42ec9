//! Versioning: migration, mismatches, opt-in default, records of no known type.

use super::*;

fn mismatches(recorder: &EventRecorder) -> Vec<adk::middleware_state::Mismatch> {
    recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::MiddlewareStateMismatch { mismatch, .. } => Some(mismatch),
            _ => None,
        })
        .collect()
}

pub(super) fn observed_runner(
    store: &SharedSessionStore,
    recorder: &EventRecorder,
    input: Step,
) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .observe(recorder.listener())
        .turn_input(step(input))
        .executor(answering(nothing))
        .build()
}

pub(super) async fn an_old_version_is_migrated_and_stored_at_the_new_version(
    store: SharedSessionStore,
) {
    put(&store, thread("main"), "tests.plan", 1, json!({"count": 2})).await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        let plan = ctx.middleware_state::<Plan>().cloned();
        assert_eq!(
            plan.map(|plan| plan.steps),
            Some(vec!["step 0".into(), "step 1".into()])
        );
        Ok(())
    });
    assert!(run(&runner, "main").await.is_completed());
    assert!(mismatches(&recorder).is_empty());
    let stored = record(&store, "main", "tests.plan").await.expect("kept");
    assert_eq!(
        (stored.version, stored.json),
        (2, json!({"steps": ["step 0", "step 1"]}))
    );
}

pub(super) async fn a_mismatch_without_migration_is_reported_and_the_record_is_kept(
    store: SharedSessionStore,
) {
    put(
        &store,
        thread("main"),
        "tests.strict",
        1,
        json!({"value": 7}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        assert!(
            ctx.middleware_state::<Strict>().is_none(),
            "never silently defaulted"
        );
        let refused = ctx.update_middleware_state::<Strict>(|strict| strict.value = 1);
        assert!(
            matches!(
                refused,
                Err(adk::middleware_state::MiddlewareStateError::Unreadable(_))
            ),
            "{refused:?}"
        );
        Ok(())
    });
    assert!(run(&runner, "main").await.is_completed());
    let reported = mismatches(&recorder);
    assert_eq!(reported.len(), 1, "{reported:?}");
    let mismatch = &reported[0];
    assert!(
        mismatch.type_name.ends_with("Strict"),
        "{}",
        mismatch.type_name
    );
    assert_eq!((mismatch.stored_version, mismatch.current_version), (1, 2));
    assert_eq!(mismatch.reason, MismatchReason::VersionChanged);
    assert!(!mismatch.defaulted);
    let stored = record(&store, "main", "tests.strict").await.expect("kept");
    assert_eq!((stored.version, stored.json), (1, json!({"value": 7})));
}

pub(super) async fn a_record_of_another_shape_is_reported_as_a_shape_change(
    store: SharedSessionStore,
) {
    put(
        &store,
        thread("main"),
        "tests.strict",
        2,
        json!({"value": "seven"}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, skip);
    assert!(run(&runner, "main").await.is_completed());
    let reported = mismatches(&recorder);
    assert!(
        matches!(&reported[..], [mismatch] if matches!(mismatch.reason, MismatchReason::ShapeChanged(_))),
        "{reported:?}"
    );
}

pub(super) async fn default_on_mismatch_reports_then_starts_from_the_default(
    store: SharedSessionStore,
) {
    put(
        &store,
        thread("main"),
        "tests.lenient",
        1,
        json!({"value": 7}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, |ctx| {
        assert!(ctx.middleware_state::<Lenient>().is_none());
        ctx.update_middleware_state::<Lenient>(|lenient| lenient.value += 1)?;
        Ok(())
    });
    assert!(run(&runner, "main").await.is_completed());
    let reported = mismatches(&recorder);
    assert!(
        matches!(&reported[..], [mismatch] if mismatch.defaulted),
        "{reported:?}"
    );
    let stored = record(&store, "main", "tests.lenient")
        .await
        .expect("rewritten");
    assert_eq!((stored.version, stored.json), (2, json!({"value": 1})));
}

pub(super) async fn a_record_of_no_known_type_is_kept_and_reported_once(store: SharedSessionStore) {
    put(
        &store,
        RecordScope::Session,
        "tests.removed_type",
        3,
        json!({"x": 1}),
    )
    .await;
    let recorder = EventRecorder::new();
    let runner = observed_runner(&store, &recorder, remember_permission);
    for _ in 0..2 {
        assert!(run(&runner, "main").await.is_completed());
    }
    let unknown: Vec<_> = recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::MiddlewareStateUnknown { record, .. } => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(unknown.len(), 1, "once per runner: {unknown:?}");
    assert_eq!(
        (unknown[0].key.as_str(), unknown[0].version),
        ("tests.removed_type", 3)
    );
    let kept = record(&store, "main", "tests.removed_type")
        .await
        .expect("kept");
    assert_eq!(kept.json, json!({"x": 1}));
}

//! Rules against a store: transient, session- and thread-scoped state, commits with the delta, dispatch ack and nack.

use super::*;

pub(super) async fn transient_state_starts_fresh_every_turn(store: SharedSessionStore) {
    let runner = runner_with(
        &store,
        |ctx| {
            assert!(
                ctx.middleware_state::<Attempts>().is_none(),
                "fresh every turn"
            );
            ctx.update_middleware_state::<Attempts>(|attempts| attempts.count += 1)?;
            Ok(())
        },
        nothing,
        skip,
    );
    for _ in 0..2 {
        let outcome = run(&runner, "main").await;
        assert!(outcome.is_completed(), "{:?}", outcome.status);
    }
    assert!(
        records(&store, "main").await.is_empty(),
        "transient state is never stored"
    );
}

pub(super) fn remember_permission(ctx: &mut TurnContext) -> Result<(), BoxError> {
    ctx.update_middleware_state::<Permissions>(|permissions| {
        permissions
            .allowed
            .push(format!("tool-{}", permissions.allowed.len()));
    })?;
    Ok(())
}

pub(super) async fn session_scoped_state_round_trips_and_every_thread_sees_it(
    store: SharedSessionStore,
) {
    let runner = runner_with(&store, remember_permission, nothing, skip);
    assert!(run(&runner, "main").await.is_completed());
    let outcome = run(&runner, "other-thread").await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(
        outcome
            .context
            .middleware_state::<Permissions>()
            .map(|p| p.allowed.clone()),
        Some(vec!["tool-0".to_owned(), "tool-1".to_owned()]),
        "the second thread continued the session's record"
    );
    let stored = record(&store, "main", "tests.permissions")
        .await
        .expect("stored");
    assert_eq!(stored.scope, RecordScope::Session);
    assert_eq!(stored.version, 1);
    assert_eq!(stored.json, json!({"allowed": ["tool-0", "tool-1"]}));
}

pub(super) fn advance(ctx: &mut TurnContext) -> Result<(), BoxError> {
    ctx.update_middleware_state::<Progress>(|progress| progress.done += 1)?;
    Ok(())
}

pub(super) async fn thread_scoped_state_round_trips_in_its_own_thread_only(
    store: SharedSessionStore,
) {
    let runner = runner_with(&store, advance, nothing, skip);
    for _ in 0..3 {
        assert!(run(&runner, "main").await.is_completed());
    }
    let outcome = run(&runner, "elsewhere").await;
    assert_eq!(
        outcome.context.middleware_state::<Progress>(),
        Some(&Progress { done: 1 })
    );
    let main = record(&store, "main", "tests.progress")
        .await
        .expect("stored");
    assert_eq!(
        (main.scope, main.json),
        (thread("main"), json!({"done": 3}))
    );
    let elsewhere = record(&store, "elsewhere", "tests.progress")
        .await
        .expect("stored");
    assert_eq!(elsewhere.json, json!({"done": 1}));
}

pub(super) async fn middleware_state_commits_with_the_session_state_delta(
    store: SharedSessionStore,
) {
    let runner = runner_with(
        &store,
        |ctx| {
            ctx.state_mut().set_value("visits", json!(1))?;
            ctx.update_middleware_state::<Progress>(|progress| progress.done = 1)?;
            Ok(())
        },
        nothing,
        skip,
    );
    assert!(run(&runner, "main").await.is_completed());
    let loaded = store
        .load_turn(&session(), &"main".into())
        .await
        .expect("loads");
    assert_eq!(loaded.session.get("visits"), Some(&json!(1)));
    assert_eq!(loaded.middleware.len(), 1);
}

pub(super) async fn dispatch_writes_reach_the_turn_on_ack(store: SharedSessionStore) {
    let runner = runner_with(
        &store,
        skip,
        |ctx| {
            ctx.update_middleware_state::<Progress>(|progress| progress.done = 4)?;
            Ok(())
        },
        |ctx| {
            assert_eq!(ctx.middleware_state::<Progress>().map(|p| p.done), Some(4));
            Ok(())
        },
    );
    let outcome = run(&runner, "main").await;
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let stored = record(&store, "main", "tests.progress")
        .await
        .expect("stored");
    assert_eq!(stored.json, json!({"done": 4}));
}

pub(super) async fn dispatch_writes_are_dropped_on_nack(store: SharedSessionStore) {
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store.clone())
        .turn_input(step(advance))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.update_middleware_state::<Progress>(|progress| progress.done = 100)?;
                ctx.update_middleware_state::<Attempts>(|attempts| attempts.count = 100)?;
                ctx.nack("no")?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = run(&runner, "main").await;
    assert!(
        matches!(outcome.status, TurnStatus::Failed(_)),
        "{:?}",
        outcome.status
    );
    assert_eq!(
        outcome.context.middleware_state::<Progress>(),
        Some(&Progress { done: 1 })
    );
    assert!(outcome.context.middleware_state::<Attempts>().is_none());
    assert!(
        records(&store, "main").await.is_empty(),
        "a refused turn commits nothing"
    );
}

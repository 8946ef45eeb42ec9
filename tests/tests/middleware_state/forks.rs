//! Forks: session state shared, thread state copied, the fork hook rewriting or failing.

use super::*;

async fn main_thread_with_messages(storage: &SharedStorage) -> Vec<Message> {
    let messages = vec![
        Message::user("m-1", "plan a trip").expect("valid"),
        Message::assistant("m-2", "where to?").expect("valid"),
        Message::user("m-3", "Lisbon").expect("valid"),
    ];
    for message in &messages {
        storage
            .store_message(&storage_context("main"), message.clone())
            .await
            .expect("stored");
    }
    messages
}

async fn sqlite_storage() -> SharedStorage {
    SharedStorage::new(
        adk::sqlite::SqliteStorage::in_memory()
            .await
            .expect("opens"),
    )
}

pub(super) async fn after_a_fork_session_state_is_shared_and_thread_state_diverges(
    store: SharedSessionStore,
) {
    let storage = sqlite_storage().await;
    let messages = main_thread_with_messages(&storage).await;
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .session_store(store.clone())
        .turn_input(step(|ctx| {
            advance(ctx)?;
            remember_permission(ctx)
        }))
        .executor(answering(nothing))
        .build();
    assert!(run(&runner, "main").await.is_completed()); // main: done 1, session: 1 permission

    let forked = runner
        .fork(Fork::new(session(), "main", "draft").at_message(messages[1].id()))
        .await
        .expect("forks");
    assert_eq!((forked.messages_copied, forked.records_copied), (2, 1));
    let copied = storage
        .fetch_messages(&storage_context("draft"))
        .await
        .expect("reads");
    let ids: Vec<&str> = copied.iter().map(Message::id).collect();
    assert_eq!(
        ids,
        [messages[0].id(), messages[1].id()],
        "up to and including the fork message"
    );

    // The fork starts from main's thread state, then both go their own way.
    let draft = run(&runner, "draft").await;
    assert_eq!(
        draft.context.middleware_state::<Progress>(),
        Some(&Progress { done: 2 })
    );
    let main = run(&runner, "main").await;
    assert_eq!(
        main.context.middleware_state::<Progress>(),
        Some(&Progress { done: 2 })
    );
    assert!(run(&runner, "main").await.is_completed());
    assert_eq!(
        record(&store, "main", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 3}))
    );
    assert_eq!(
        record(&store, "draft", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 2}))
    );

    // Session state is one record both threads wrote: 1 + draft + main + main.
    let permissions = record(&store, "draft", "tests.permissions")
        .await
        .expect("shared");
    assert_eq!(
        permissions.json["allowed"].as_array().map(Vec::len),
        Some(4)
    );
}

pub(super) async fn a_fork_hook_rewrites_the_copied_thread_state(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    main_thread_with_messages(&storage).await;
    put(
        &store,
        thread("main"),
        "tests.progress",
        1,
        json!({"done": 5}),
    )
    .await;
    let forked = Fork::new(session(), "main", "draft")
        .hook(|states| {
            assert_eq!(
                states.get::<Progress>(),
                Some(&Progress { done: 5 }),
                "the copy"
            );
            states.update::<Progress>(|progress| progress.done = 0)?;
            Ok(())
        })
        .run(&storage, &store)
        .await
        .expect("forks");
    assert_eq!(
        forked.messages_copied, 3,
        "no message given: up to the latest"
    );
    assert_eq!(
        record(&store, "draft", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 0}))
    );
    assert_eq!(
        record(&store, "main", "tests.progress")
            .await
            .map(|r| r.json),
        Some(json!({"done": 5}))
    );
}

pub(super) async fn a_failing_fork_hook_persists_nothing(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    main_thread_with_messages(&storage).await;
    put(
        &store,
        thread("main"),
        "tests.progress",
        1,
        json!({"done": 5}),
    )
    .await;
    let error = Fork::new(session(), "main", "draft")
        .hook(|states| {
            states.update::<Progress>(|progress| progress.done = 0)?;
            Err("the plan cannot be forked".into())
        })
        .run(&storage, &store)
        .await
        .expect_err("the hook failed");
    assert!(matches!(error, ForkError::Hook(_)), "{error}");
    assert!(
        storage
            .fetch_messages(&storage_context("draft"))
            .await
            .expect("reads")
            .is_empty()
    );
    assert!(record(&store, "draft", "tests.progress").await.is_none());
}

pub(super) async fn a_fork_at_a_message_the_thread_lacks_is_refused(store: SharedSessionStore) {
    let storage = sqlite_storage().await;
    main_thread_with_messages(&storage).await;
    let error = Fork::new(session(), "main", "draft")
        .at_message("no-such-message")
        .run(&storage, &store)
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ForkError::MessageNotFound { .. }),
        "{error}"
    );
    let error = Fork::new(session(), "empty", "draft")
        .run(&storage, &store)
        .await
        .expect_err("refused");
    assert!(matches!(error, ForkError::NoMessages { .. }), "{error}");
}

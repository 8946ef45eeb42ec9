//! The erased handle the runner holds, and the storage context.

use super::*;

#[tokio::test]
async fn the_shared_handle_reaches_the_adapter_it_wraps() {
    let adapter = Arc::new(InMemoryStorage::new());
    let storage = SharedStorage::from_arc(Arc::clone(&adapter));
    let message = Message::user("m-1", "hello").expect("a valid message");
    storage
        .clone()
        .store_message(&ctx(), message)
        .await
        .expect("the store succeeds");
    let messages: Vec<Message> = adapter.fetch(&ctx()).expect("the lock is healthy");
    assert_eq!(messages.len(), 1);
}

#[tokio::test]
async fn a_storage_error_reaches_the_caller_typed() {
    let storage = SharedStorage::new(InMemoryStorage::new());
    let error = storage
        .mutate_message(
            &ctx(),
            Message::user("never-stored", "hi").expect("a valid message"),
        )
        .await
        .expect_err("mutating an unknown id is refused");
    assert!(matches!(
        error,
        StorageError::NotFound { kind: Primitive::Messages, ref id } if id == "never-stored"
    ));
}

#[tokio::test]
async fn shared_calls_and_conformance_runs_can_move_to_other_tasks() {
    let storage = SharedStorage::new(InMemoryStorage::new());
    let for_a_task = storage.clone();
    tokio::spawn(async move {
        let message = Message::user("m-1", "hello").expect("a valid message");
        for_a_task.store_message(&ctx(), message).await
    })
    .await
    .expect("the task completes")
    .expect("the store succeeds");
    let fetched = storage
        .fetch_messages(&ctx())
        .await
        .expect("the fetch succeeds");
    assert_eq!(fetched.len(), 1);

    let run = Conformance::new(storage)
        .persists(Primitive::Messages)
        .run();
    tokio::spawn(run)
        .await
        .expect("the task completes")
        .expect("the adapter conforms");
}

#[test]
fn building_on_a_context_leaves_earlier_clones_unchanged() {
    let original = StorageContext::new("c").with_turn_id(TurnId::from("t-1"));
    let earlier = original.clone();
    let later = original.with_turn_id(TurnId::from("t-2"));
    assert_eq!(earlier.turn_id().as_str(), "t-1");
    assert_eq!(later.turn_id().as_str(), "t-2");
    assert_eq!(later.conversation_id(), earlier.conversation_id());
}

#[test]
fn a_storage_context_clone_sees_the_same_cancellation() {
    let ctx = ctx();
    let for_a_task = ctx.clone();
    ctx.cancellation().cancel();
    assert!(for_a_task.is_cancelled());
    assert_eq!(for_a_task.turn_id(), ctx.turn_id());
}

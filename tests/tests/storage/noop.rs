//! NoopStorage: empty fetches, honest conduits.

use super::*;

#[tokio::test]
async fn noop_fetches_are_empty_even_after_stores() {
    let storage = NoopStorage::new();
    let message = Message::user("m-1", "hello").expect("a valid message");
    storage
        .store_message(&ctx(), message)
        .await
        .expect("a no-op store succeeds");
    assert!(
        storage
            .fetch_messages(&ctx())
            .await
            .expect("a no-op fetch succeeds")
            .is_empty()
    );
}

#[tokio::test]
async fn noop_retrievable_bytes_are_kept_across_calls_and_shared_by_clones() {
    let storage = NoopStorage::new();
    let clone = storage.clone();
    storage
        .store_retrievable_bytes(&ctx(), "doc".into(), "one\ntwo".into())
        .await
        .expect("the conduit writes");
    let kept = clone
        .read_retrievable_bytes(&ctx(), "doc".into())
        .await
        .expect("the store reads")
        .expect("bytes written through one handle are visible through its clone");
    assert_eq!(
        kept.line(1).await.expect("the reader reads").as_deref(),
        Some("two")
    );
}

#[tokio::test]
async fn separate_noop_values_keep_separate_bytes() {
    let first = NoopStorage::new();
    let second = NoopStorage::new();
    first
        .store_media_bytes(&ctx(), "photo".into(), vec![1, 2, 3].into())
        .await
        .expect("the conduit writes");
    assert!(
        second
            .read_media_bytes(&ctx(), "photo".into())
            .await
            .expect("the store reads")
            .is_none()
    );
    let reader = first
        .read_media_bytes(&ctx(), "photo".into())
        .await
        .expect("the store reads")
        .expect("the bytes are kept under their id");
    assert_eq!(
        &reader.read_all().await.expect("the reader reads")[..],
        &[1, 2, 3]
    );
}

#[tokio::test]
async fn the_process_wide_noop_keeps_bytes_between_uses() {
    NoopStorage::shared()
        .store_retrievable_bytes(&ctx(), "process-wide-note".into(), "kept".into())
        .await
        .expect("the conduit writes");
    let kept = NoopStorage::shared()
        .read_retrievable_bytes(&ctx(), "process-wide-note".into())
        .await
        .expect("the store reads");
    assert!(kept.is_some());
}

#[tokio::test]
async fn noop_storage_keeps_bytes_per_conversation_each_reading_back_its_own() {
    let storage = NoopStorage::new();
    let first = StorageContext::new("conversation-a");
    let second = StorageContext::new("conversation-b");
    for (ctx, text) in [(&first, "a's notes"), (&second, "b's notes")] {
        storage
            .store_retrievable_bytes(ctx, "x".into(), text.into())
            .await
            .expect("the conduit writes");
        storage
            .store_media_bytes(ctx, "x".into(), text.as_bytes().to_vec().into())
            .await
            .expect("the conduit writes");
    }
    for (ctx, text) in [(&first, "a's notes"), (&second, "b's notes")] {
        let spooled = storage
            .read_retrievable_bytes(ctx, "x".into())
            .await
            .expect("the store reads")
            .expect("each conversation's bytes are kept");
        assert_eq!(
            &spooled.read_all().await.expect("reads")[..],
            text.as_bytes()
        );
        assert_eq!(
            spooled.id(),
            "x",
            "the reader keeps the id that was written"
        );
        let media = storage
            .read_media_bytes(ctx, "x".into())
            .await
            .expect("the store reads")
            .expect("each conversation's bytes are kept");
        assert_eq!(&media.read_all().await.expect("reads")[..], text.as_bytes());
    }
    let elsewhere = StorageContext::new("conversation-a").with_user_id("someone-else");
    assert!(
        storage
            .read_retrievable_bytes(&elsewhere, "x".into())
            .await
            .expect("the store reads")
            .is_none(),
        "another user's partition has written nothing under the id"
    );
}

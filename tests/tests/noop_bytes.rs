//! The byte stores behind `storage_adapter!`'s `..noop` are bounded: a long-running process
//! writing bytes through the no-op baseline does not grow without limit. (Its own test binary:
//! the shared store is process-wide, and filling it must not disturb other tests.)
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use adk::storage::{NoopStorage, StorageAdapter, StorageContext};

adk::storage_adapter! {
    /// Persists nothing; its conduits are the shared no-op baseline.
    struct Forgetful;
    impl { ..noop }
}

#[tokio::test]
async fn the_noop_byte_stores_keep_a_bounded_amount_forgetting_the_oldest_first() {
    let ctx = StorageContext::new("uploads");
    let budget = NoopStorage::SHARED_BYTE_BUDGET;
    let piece = budget / 4;
    let mut readers = Vec::new();
    // Twice the budget, a quarter at a time.
    for number in 0..8_u8 {
        let reader = Forgetful
            .store_media_bytes(&ctx, format!("upload-{number}"), vec![number; piece].into())
            .await
            .unwrap();
        readers.push(reader);
    }

    let shared = NoopStorage::shared().media_bytes();
    assert!(
        shared.total_bytes() <= budget,
        "{} bytes kept",
        shared.total_bytes()
    );
    assert!(
        Forgetful
            .read_media_bytes(&ctx, "upload-0".into())
            .await
            .unwrap()
            .is_none(),
        "the oldest bytes were kept"
    );
    assert!(
        Forgetful
            .read_media_bytes(&ctx, "upload-7".into())
            .await
            .unwrap()
            .is_some(),
        "the newest bytes were forgotten"
    );
    // Readers already handed out are snapshots: the forgotten bytes still read back.
    let first = readers[0].read_all().await.unwrap();
    assert_eq!(first.len(), piece);
    assert!(first.iter().all(|byte| *byte == 0));
}

//! A conduit listed without its read: `..noop` would read the bytes back from the no-op store,
//! which the listed conduit never wrote to, so nothing written would read back by its id.
use adk::storage::{NoopStorage, StorageAdapter};

adk::storage_adapter! {
    pub struct Uploads {
        files: NoopStorage,
    }

    impl {
        store_media_bytes: async |ctx, id, bytes| {
            StorageAdapter::store_media_bytes(&self.files, ctx, id, bytes).await
        },
        ..noop
    }
}

fn main() {}

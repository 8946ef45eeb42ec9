//! Closures of the seed arity: `|ctx|`, `|ctx, value|`, `|ctx, id, bytes|`, `|ctx, id|`, plain
//! closures that return an `async move` block and async closures alike. Their parameter types
//! come from the callback, so none need annotations; `ctx` may be borrowed by the future.

use adk::bytes::ConduitBytes;
use adk::storage::NoopStorage;

adk::storage_adapter! {
    pub struct ChatStore {
        media: NoopStorage,
    }

    impl {
        fetch_messages: |ctx| async move {
            let _conversation = ctx.conversation_id();
            Ok(Vec::new())
        },
        store_message: |_ctx, message| async move {
            drop(message);
            Ok(())
        },
        delete_message: async |_ctx, _id| Ok(()),
        mutate_message: async move |_ctx, _message: adk::primitives::Message| Ok(()),
        store_media_bytes: |ctx, id, bytes: ConduitBytes| async move {
            self.media.store_media_bytes(ctx, id, bytes).await
        },
        read_media_bytes: |ctx, id| async move { self.media.read_media_bytes(ctx, id).await },
        ..noop
    }
}

fn main() {
    fn assert_adapter<T: adk::storage::StorageAdapter>() {}
    assert_adapter::<ChatStore>();
}

//! Closures of the seed arity: `|ctx|`, `|ctx, value|`, `|ctx, id, bytes|`, plain closures that
//! return an `async move` block and async closures alike. Their parameter types come from the
//! callback, so none need annotations; `ctx` may be borrowed by the future.

use adk::bytes::{ConduitBytes, MediaReader};

adk::storage_adapter! {
    pub struct ChatStore;

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
        store_media_bytes: |_ctx, _id, bytes: ConduitBytes| async move {
            let bytes = bytes.collect().await.map_err(adk::storage::StorageError::backend)?;
            Ok(MediaReader::from_bytes(bytes))
        },
        ..noop
    }
}

fn main() {
    fn assert_adapter<T: adk::storage::StorageAdapter>() {}
    assert_adapter::<ChatStore>();
}

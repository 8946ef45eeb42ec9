use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

async fn store(_ctx: &StorageContext, _message: Message) -> Result<(), StorageError> {
    Ok(())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: store,
        fetch_messages: |_ctx| async { Ok(Vec::new()) },
    }
}

fn main() {
    // Still an adapter: the missing callbacks are reported once, not again at every use.
    let _storage = adk::storage::SharedStorage::new(ChatStore);
}

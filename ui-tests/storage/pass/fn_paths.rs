//! Paths to `async fn`s, anywhere in scope, are called as `callback(ctx, value)`.

use adk::primitives::{Memory, Message};
use adk::storage::{StorageContext, StorageError};

async fn store_message_in_log(_ctx: &StorageContext, _message: Message) -> Result<(), StorageError> {
    Ok(())
}

mod memories {
    use adk::primitives::Memory;
    use adk::storage::{StorageContext, StorageError};

    pub async fn fetch(_ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        Ok(Vec::new())
    }
}

async fn forget(_ctx: &StorageContext, _id: String) -> Result<(), StorageError> {
    Ok(())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: store_message_in_log,
        fetch_memories: memories::fetch,
        delete_memory: forget,
        delete_message: forget,
        ..noop
    }
}

fn main() {
    fn assert_adapter<T: adk::storage::StorageAdapter>() {}
    assert_adapter::<ChatStore>();
    let _: fn(Memory) = drop;
}

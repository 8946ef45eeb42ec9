use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

fn store_now(_ctx: &StorageContext, _message: Message) -> Result<(), StorageError> {
    Ok(())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: store_now,
        ..noop
    }
}

fn main() {}

use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

async fn wrong_arity(_ctx: &StorageContext, _message: Message, _retries: u32) -> Result<(), StorageError> {
    Ok(())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: wrong_arity,
        ..noop
    }
}

fn main() {}

//! The fn takes the right parameters and is async, but resolves to the wrong type: the message
//! names the output alone, so it stays readable where rustc shortens the fn's type.
use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

async fn store_and_count(_ctx: &StorageContext, _message: Message) -> Result<usize, StorageError> {
    Ok(1)
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: store_and_count,
        ..noop
    }
}

fn main() {}

//! `?` on an `std::io::Error` inside a callback: it converts into `StorageError::Backend`.
#![deny(warnings)]

use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

async fn fetch_from_disk(_ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
    let saved = std::fs::read_to_string("/no/such/adk/messages.json")?;
    let _ = saved;
    Ok(Vec::new())
}

adk::storage_adapter! {
    pub struct DiskStore;

    impl {
        fetch_messages: fetch_from_disk,
        store_message: |_ctx, _message| async move {
            std::fs::create_dir_all("/tmp/adk-ui-never-created/..")?;
            Ok(())
        },
        ..noop
    }
}

fn main() {
    let _ = DiskStore;
}

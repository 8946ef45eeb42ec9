use adk::storage::{StorageContext, StorageError};

async fn delete_by_number(_ctx: &StorageContext, _id: u64) -> Result<(), StorageError> {
    Ok(())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: delete_by_number,
        ..noop
    }
}

fn main() {}

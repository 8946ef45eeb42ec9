use adk::storage::{StorageContext, StorageError};

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        delete_message: self.forget,
        ..noop
    }
}

impl ChatStore {
    async fn forget(&self, _ctx: &StorageContext, _id: u64) -> Result<(), StorageError> {
        Ok(())
    }
}

fn main() {}

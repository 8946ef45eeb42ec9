use adk::storage::{StorageContext, StorageError};

async fn fetch_all(_ctx: &StorageContext) -> Result<Vec<String>, StorageError> {
    Ok(Vec::new())
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        fetch_messages: fetch_all,
        ..noop
    }
}

fn main() {}

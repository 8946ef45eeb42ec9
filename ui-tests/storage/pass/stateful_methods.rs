//! `self.method` calls an inherent method of the adapter with `&self` first; the struct's docs,
//! attributes and fields carry over.

use std::sync::{Arc, Mutex};

use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

adk::storage_adapter! {
    /// Messages kept in memory, shared between clones.
    #[derive(Clone, Debug, Default)]
    pub struct ChatStore {
        messages: Arc<Mutex<Vec<Message>>>,
    }

    impl {
        fetch_messages: self.fetch_messages,
        store_message: self.append,
        ..noop
    }
}

impl ChatStore {
    async fn fetch_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        Ok(self.messages.lock().map(|messages| messages.clone()).unwrap_or_default())
    }

    async fn append(&self, _ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
        if let Ok(mut messages) = self.messages.lock() {
            messages.push(message);
        }
        Ok(())
    }
}

fn main() {
    fn assert_adapter<T: adk::storage::StorageAdapter + Clone + std::fmt::Debug + Default>() {}
    assert_adapter::<ChatStore>();
}

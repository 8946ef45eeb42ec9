//! A closure is built inside the generated method, so it may use `self`, the adapter.

use std::sync::Mutex;

use adk::primitives::Message;

adk::storage_adapter! {
    #[derive(Default)]
    pub struct ChatStore {
        messages: Mutex<Vec<Message>>,
    }

    impl {
        store_message: |_ctx, message| async move {
            if let Ok(mut messages) = self.messages.lock() {
                messages.push(message);
            }
            Ok(())
        },
        fetch_messages: async |_ctx| Ok(self.messages.lock().map(|m| m.clone()).unwrap_or_default()),
        ..noop
    }
}

fn main() {
    fn assert_adapter<T: adk::storage::StorageAdapter>() {}
    assert_adapter::<ChatStore>();
}

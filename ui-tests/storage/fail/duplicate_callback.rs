adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: |_ctx, _message| async { Ok(()) },
        fetch_messages: |_ctx| async { Ok(Vec::new()) },
        store_message: |_ctx, _message| async { Ok(()) },
        ..noop
    }
}

fn main() {}

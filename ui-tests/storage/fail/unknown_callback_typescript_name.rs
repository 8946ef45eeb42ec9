adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        storeMessageCallback: |_ctx, _message| async { Ok(()) },
        ..noop
    }
}

fn main() {}

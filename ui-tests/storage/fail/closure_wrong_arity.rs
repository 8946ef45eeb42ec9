adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        store_message: |_ctx| async { Ok(()) },
        ..noop
    }
}

fn main() {}

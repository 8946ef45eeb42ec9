adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        ..noop,
        fetch_messages: |_ctx| async { Ok(Vec::new()) },
    }
}

fn main() {
    let _ = ChatStore;
}

adk::storage_adapter! {
    pub struct ChatStore;

    impl {
        fetch_messages: |_ctx| async { Ok(Vec::new()) },
        ..default
    }
}

fn main() {}

//! `storage_adapter!` builds adapters whose methods really run the callbacks they name, and whose
//! `..noop` callbacks behave as `NoopStorage`, byte conduits included.

use std::sync::{Arc, Mutex};

use adk::primitives::{Message, Thought};
use adk::storage::{Primitive, StorageAdapter, StorageContext, StorageError};

adk::storage_adapter! {
    /// Messages in memory, shared between clones.
    #[derive(Clone, Default)]
    struct ChatStore {
        messages: Arc<Mutex<Vec<Message>>>,
    }

    impl {
        fetch_messages: self.fetch_messages,
        store_message: self.store_message,
        delete_message: |_ctx, id| async move {
            self.lock()?.retain(|message| message.id() != id);
            Ok(())
        },
        mutate_message: refuse_mutation,
        ..noop
    }
}

impl ChatStore {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Vec<Message>>, StorageError> {
        self.messages
            .lock()
            .map_err(|_| StorageError::backend("the message log lock is poisoned"))
    }

    async fn fetch_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        Ok(self.lock()?.clone())
    }

    async fn store_message(
        &self,
        _ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.lock()?.push(message);
        Ok(())
    }
}

async fn refuse_mutation(_ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
    Err(StorageError::NotFound {
        kind: Primitive::Messages,
        id: message.id().to_owned(),
    })
}

fn message(id: &str, text: &str) -> Message {
    Message::user(id, text).expect("a user message with text is valid")
}

fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(Message::id).collect()
}

#[tokio::test]
async fn stored_messages_are_fetched_back_in_order() {
    let store = ChatStore::default();
    let ctx = StorageContext::new("conversation-1");
    store
        .store_message(&ctx, message("m1", "hello"))
        .await
        .expect("store m1");
    store
        .store_message(&ctx, message("m2", "again"))
        .await
        .expect("store m2");

    let fetched = store.fetch_messages(&ctx).await.expect("fetch");
    assert_eq!(ids(&fetched), ["m1", "m2"]);
}

#[tokio::test]
async fn a_closure_callback_sees_the_adapter_state() {
    let store = ChatStore::default();
    let ctx = StorageContext::new("conversation-1");
    store
        .store_message(&ctx, message("m1", "keep"))
        .await
        .expect("store m1");
    store
        .store_message(&ctx, message("m2", "drop"))
        .await
        .expect("store m2");

    store
        .delete_message(&ctx, "m2".to_owned())
        .await
        .expect("delete m2");

    assert_eq!(
        ids(&store.fetch_messages(&ctx).await.expect("fetch")),
        ["m1"]
    );
}

#[tokio::test]
async fn a_function_callback_error_reaches_the_caller_typed() {
    let store = ChatStore::default();
    let ctx = StorageContext::new("conversation-1");

    let error = store
        .mutate_message(&ctx, message("m9", "edit"))
        .await
        .expect_err("mutation is refused");

    assert!(
        matches!(&error, StorageError::NotFound { kind: Primitive::Messages, id } if id == "m9"),
        "{error:?}"
    );
}

#[tokio::test]
async fn callbacks_left_to_noop_store_nothing_and_succeed() {
    let store = ChatStore::default();
    let ctx = StorageContext::new("conversation-1");
    let thought = Thought::new("t1", "thinking").expect("a thought with text is valid");

    store
        .store_thought(&ctx, thought)
        .await
        .expect("the no-op store succeeds");

    assert!(store.fetch_thoughts(&ctx).await.expect("fetch").is_empty());
    assert!(store.fetch_memories(&ctx).await.expect("fetch").is_empty());
}

#[tokio::test]
async fn a_noop_retrievable_conduit_returns_a_reader_over_the_bytes_written() {
    let store = ChatStore::default();
    let ctx = StorageContext::new("conversation-1");

    let reader = store
        .store_retrievable_bytes(
            &ctx,
            "doc-macro-1".to_owned(),
            "first line\nsecond line".into(),
        )
        .await
        .expect("the no-op conduit stores bytes");

    assert_eq!(reader.line_count().await.expect("line count"), 2);
    assert_eq!(
        reader.line(1).await.expect("line 1").as_deref(),
        Some("second line")
    );
    assert_eq!(
        &reader.read_all().await.expect("read all")[..],
        b"first line\nsecond line"
    );
}

#[tokio::test]
async fn a_noop_media_conduit_returns_a_reader_over_the_bytes_written() {
    let store = ChatStore::default();
    let ctx = StorageContext::new("conversation-1");
    let png_header: &[u8] = &[0x89, b'P', b'N', b'G'];

    let reader = store
        .store_media_bytes(&ctx, "image-macro-1".to_owned(), png_header.into())
        .await
        .expect("the no-op conduit stores bytes");

    assert_eq!(&reader.read_all().await.expect("read all")[..], png_header);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_futures_are_send_and_run_on_other_threads() {
    let store = ChatStore::default();
    let writer = store.clone();
    tokio::spawn(async move {
        let ctx = StorageContext::new("conversation-1");
        writer
            .store_message(&ctx, message("m1", "from a task"))
            .await
    })
    .await
    .expect("the task ran")
    .expect("store m1");

    let ctx = StorageContext::new("conversation-1");
    assert_eq!(
        ids(&store.fetch_messages(&ctx).await.expect("fetch")),
        ["m1"]
    );
}

#[tokio::test]
async fn a_macro_built_adapter_works_behind_shared_storage() {
    let store = ChatStore::default();
    let shared = adk::storage::SharedStorage::new(store.clone());
    let ctx = StorageContext::new("conversation-1");

    shared
        .store_message(&ctx, message("m1", "through the erased form"))
        .await
        .expect("store m1");

    assert_eq!(
        ids(&store.fetch_messages(&ctx).await.expect("fetch")),
        ["m1"]
    );
}

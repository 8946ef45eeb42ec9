//! A storage adapter made from plain async functions with `adk::storage_adapter!`.
//!
//! The conversation lives in a process-wide `HashMap` from conversation to messages, keyed by
//! everything a record belongs to: app, user, conversation and thread. Four
//! free `async fn`s give the callbacks this example needs; `..noop` gives every other callback
//! the no-op baseline. Naming a callback that does not exist, or giving one the wrong signature,
//! is a compile error at the offending token.
//!
//! ```sh
//! cargo run --example storage_from_fns
//! ```

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use adk::TurnRunner;
use adk::context::{RawTurnContext, TurnContext};
use adk::dispatch::ScriptedModel;
use adk::pipeline::{BoxError, Next};
use adk::primitives::Message;
use adk::storage::{StorageContext, StorageError};

/// Every conversation's messages, by [`conversation_key`].
static CONVERSATIONS: LazyLock<Mutex<HashMap<String, Vec<Message>>>> =
    LazyLock::new(Mutex::default);

fn conversations() -> Result<MutexGuard<'static, HashMap<String, Vec<Message>>>, StorageError> {
    CONVERSATIONS
        .lock()
        .map_err(|_| StorageError::backend("the conversation map lock is poisoned"))
}

/// The map key of `ctx`'s conversation: a record belongs to its app, user, conversation and
/// thread, so two turns that differ in any of them never see each other's messages.
fn conversation_key(ctx: &StorageContext) -> String {
    format!(
        "{}/{}/{}/{}",
        ctx.app_name(),
        ctx.user_id(),
        ctx.conversation_id(),
        ctx.thread_id()
    )
}

async fn fetch_messages(ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
    Ok(conversations()?
        .get(&conversation_key(ctx))
        .cloned()
        .unwrap_or_default())
}

async fn store_message(ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
    let mut conversations = conversations()?;
    let messages = conversations.entry(conversation_key(ctx)).or_default();
    // Store creates: an id this conversation already holds is refused, not stored twice.
    if messages.iter().any(|stored| stored.id() == message.id()) {
        return Err(StorageError::Conflict {
            kind: adk::storage::Primitive::Messages,
            id: message.id().to_owned(),
        });
    }
    messages.push(message);
    Ok(())
}

async fn mutate_message(ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
    let mut conversations = conversations()?;
    let stored = conversations
        .get_mut(&conversation_key(ctx))
        .and_then(|messages| {
            messages
                .iter_mut()
                .find(|stored| stored.id() == message.id())
        })
        .ok_or_else(|| StorageError::NotFound {
            kind: adk::storage::Primitive::Messages,
            id: message.id().to_owned(),
        })?;
    *stored = message;
    Ok(())
}

async fn delete_message(ctx: &StorageContext, id: String) -> Result<(), StorageError> {
    if let Some(messages) = conversations()?.get_mut(&conversation_key(ctx)) {
        messages.retain(|message| message.id() != id);
    }
    Ok(())
}

adk::storage_adapter! {
    /// Messages in the process-wide map; everything else is not kept.
    #[derive(Clone, Copy, Default)]
    pub struct MapStorage;

    impl {
        fetch_messages: fetch_messages,
        store_message: store_message,
        mutate_message: mutate_message,
        delete_message: delete_message,
        ..noop
    }
}

adk::stash_keys! {
    /// The user's message for this turn.
    pub QUESTION: "example.question" => String,
}

/// Loads the conversation so far, then stores the new question after it.
#[adk::middleware(pipeline = turn_input)]
pub async fn load_and_ask(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let history = ctx.fetch_messages().await?;
    let earlier_questions = history
        .iter()
        .filter(|message| message.role() == adk::primitives::Role::User)
        .count();
    let id = format!("user-{}", earlier_questions + 1);
    ctx.messages.extend(history);
    let question = ctx
        .stash
        .get(QUESTION)?
        .ok_or("no question under `example.question`")?;
    ctx.store_message(Message::user(id, question)?).await?;
    let _ = next.run(ctx).await;
    Ok(())
}

/// Runs two turns in one conversation and returns the map's content for it, one line a message.
pub async fn run() -> Result<Vec<String>, BoxError> {
    let runner = TurnRunner::builder()
        .storage(MapStorage)
        .executor(ScriptedModel::new())
        .turn_input(load_and_ask)
        .build();
    for question in ["Hello there", "What do you remember?"] {
        let raw = RawTurnContext::new("from-fns", "You are brief.")
            .stash(serde_json::json!({ "example": { "question": question } }));
        let outcome = runner.run(raw).await?;
        if !outcome.is_completed() {
            return Err(format!("the turn did not complete: {:?}", outcome.status).into());
        }
    }

    let lines: Vec<String> = conversations()?
        .get(&conversation_key(&StorageContext::new("from-fns")))
        .into_iter()
        .flatten()
        .map(|message| {
            let text = message
                .content()
                .map(|content| content.render())
                .unwrap_or_default();
            format!("{} {}: {text}", message.id(), message.role().as_str())
        })
        .collect();
    println!("the map holds, for conversation `from-fns`:");
    for line in &lines {
        println!("  {line}");
    }
    Ok(lines)
}

fn main() -> Result<(), BoxError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run())?;
    Ok(())
}

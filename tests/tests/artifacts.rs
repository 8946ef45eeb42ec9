//! Tool calls and retrievables as the storage contract sees them: one id space per turn
//! (`E_ARTIFACT_ID_COLLISION`), retrievable auto-spooling on store, mutate, fetch and dispatch
//! start, and tool-call group replacement for providers that reuse ids.
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, from_fn};
use adk::primitives::{
    Retrievable, RetrievableContent, Tokenizable, ToolCall, ToolRegistry, TrustTier,
};
use adk::sqlite::SqliteStorage;
use adk::storage::{Primitive, SharedStorage, StorageAdapter, StorageContext, StorageError};

fn chunk(id: &str, text: &str) -> Retrievable {
    Retrievable::new(id, text, TrustTier::FirstParty).unwrap()
}

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "forecast", serde_json::json!({ "city": id })).unwrap()
}

fn is_spooled(retrievable: &Retrievable) -> bool {
    matches!(retrievable.content(), RetrievableContent::Artifact(_))
}

async fn turn_over(storage: &SqliteStorage) -> TurnContext {
    TurnContext::new(
        RawTurnContext::new("conversation", "Be brief."),
        SharedStorage::new(storage.clone()),
        ToolRegistry::new(),
    )
    .unwrap()
}

fn partition() -> StorageContext {
    StorageContext::new("conversation")
}

// ---------------------------------------------------------------------------------------------
// E_ARTIFACT_ID_COLLISION

#[tokio::test]
async fn a_tool_call_under_a_retrievables_id_is_refused_before_anything_is_persisted() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    ctx.store_retrievable(chunk("shared", "a page"))
        .await
        .unwrap();

    let error = ctx.store_tool_call(call("shared")).await.unwrap_err();
    assert!(
        matches!(
            error,
            StorageError::ArtifactIdCollision {
                ref id,
                existing: Primitive::Retrievables,
                refused: Primitive::ToolCalls,
            } if id == "shared"
        ),
        "{error}"
    );
    assert!(
        error.to_string().starts_with("E_ARTIFACT_ID_COLLISION"),
        "{error}"
    );
    assert!(ctx.tool_calls.is_empty());
    assert!(
        storage
            .fetch_tool_calls(&partition())
            .await
            .unwrap()
            .is_empty()
    );
    // Mutating is refused the same way.
    assert!(matches!(
        ctx.mutate_tool_call(call("shared")).await,
        Err(StorageError::ArtifactIdCollision { .. })
    ));
}

#[tokio::test]
async fn a_retrievable_under_a_tool_calls_id_is_refused_before_anything_is_persisted_or_spooled() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    ctx.store_tool_call(call("shared")).await.unwrap();

    for attempt in [
        ctx.store_retrievable(chunk("shared", "a page")).await,
        ctx.mutate_retrievable(chunk("shared", "a page")).await,
    ] {
        assert!(
            matches!(
                attempt,
                Err(StorageError::ArtifactIdCollision {
                    existing: Primitive::ToolCalls,
                    refused: Primitive::Retrievables,
                    ..
                })
            ),
            "{attempt:?}"
        );
    }
    assert!(ctx.retrievables.is_empty());
    assert!(
        storage
            .fetch_retrievables(&partition())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        storage
            .retrievable_reader(&partition(), "shared")
            .await
            .unwrap()
            .is_none(),
        "bytes were spooled for a refused retrievable"
    );
}

#[tokio::test]
async fn inside_a_dispatch_the_collision_is_refused_too() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let refused: Arc<Mutex<Option<String>>> = Arc::default();
    let seen = Arc::clone(&refused);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let seen = Arc::clone(&seen);
            Box::pin(async move {
                ctx.store_tool_call(call("c-1")).await?;
                let error = ctx
                    .store_retrievable(chunk("c-1", "a page"))
                    .await
                    .unwrap_err();
                *seen.lock().unwrap() = Some(error.to_string());
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation", "Be brief."))
        .await
        .unwrap();
    assert!(outcome.is_completed(), "{:?}", outcome.status);
    let refused = refused.lock().unwrap().clone().unwrap();
    assert!(refused.starts_with("E_ARTIFACT_ID_COLLISION"), "{refused}");
    assert!(
        storage
            .fetch_retrievables(&partition())
            .await
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Duplicate retrievable ids from a fetch

adk::storage_adapter! {
    /// Fetches two retrievables under one id, and counts the bytes it is asked to spool.
    #[derive(Clone, Default)]
    struct Duplicating {
        spooled: Arc<AtomicUsize>,
    }
    impl {
        fetch_retrievables: async |_ctx| {
            Ok(vec![chunk("twice", "first"), chunk("once", "fine"), chunk("twice", "second")])
        },
        store_retrievable_bytes: async |ctx, id, bytes| {
            self.spooled.fetch_add(1, Ordering::SeqCst);
            adk::storage::NoopStorage::shared().store_retrievable_bytes(ctx, id, bytes).await
        },
        read_retrievable_bytes: async |ctx, id| {
            adk::storage::NoopStorage::shared().read_retrievable_bytes(ctx, id).await
        },
        ..noop
    }
}

#[tokio::test]
async fn a_fetch_returning_two_retrievables_with_one_id_is_refused_before_any_bytes_are_spooled() {
    let storage = Duplicating::default();
    let ctx = TurnContext::new(
        RawTurnContext::new("conversation", "Be brief."),
        SharedStorage::new(storage.clone()),
        ToolRegistry::new(),
    )
    .unwrap();

    let error = ctx.fetch_retrievables().await.unwrap_err();
    assert!(
        matches!(error, StorageError::DuplicateRetrievableId { ref id } if id == "twice"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("Duplicate retrievable id: twice"),
        "{error}"
    );
    assert_eq!(storage.spooled.load(Ordering::SeqCst), 0);
}

// ---------------------------------------------------------------------------------------------
// Auto-spooling

#[tokio::test]
async fn a_stored_or_mutated_retrievable_with_static_text_reaches_the_adapter_spooled() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    ctx.store_retrievable(chunk("manual", "step one\nstep two"))
        .await
        .unwrap();
    assert!(is_spooled(ctx.retrievables.get("manual").unwrap()));
    let stored = storage.fetch_retrievables(&partition()).await.unwrap();
    assert!(is_spooled(&stored[0]), "the adapter received plain text");
    assert_eq!(
        stored[0].content_string().await.unwrap(),
        "step one\nstep two"
    );

    ctx.mutate_retrievable(chunk("manual", "step one, revised"))
        .await
        .unwrap();
    let stored = storage.fetch_retrievables(&partition()).await.unwrap();
    assert!(is_spooled(&stored[0]));
    assert_eq!(
        stored[0].content_string().await.unwrap(),
        "step one, revised"
    );
    let spool = storage
        .retrievable_reader(&partition(), "manual")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&spool.read_all().await.unwrap()[..], b"step one, revised");
}

#[tokio::test]
async fn dynamic_or_inline_retrievables_are_never_spooled() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    let inline = chunk("inline", "kept in the record").with_inline(true);
    let dynamic = chunk("dynamic", "placeholder")
        .with_content(Tokenizable::dynamic(|| "computed".into()))
        .unwrap();
    ctx.store_retrievable(inline).await.unwrap();
    ctx.store_retrievable(dynamic).await.unwrap();

    assert!(!is_spooled(ctx.retrievables.get("inline").unwrap()));
    assert!(!is_spooled(ctx.retrievables.get("dynamic").unwrap()));
    for id in ["inline", "dynamic"] {
        assert!(
            storage
                .retrievable_reader(&partition(), id)
                .await
                .unwrap()
                .is_none(),
            "{id} was spooled"
        );
    }
}

adk::storage_adapter! {
    /// Fetches plain-text retrievables and keeps the bytes it is asked to spool.
    #[derive(Clone, Default)]
    struct PlainText {
        bytes: adk::storage::NoopStorage,
    }
    impl {
        fetch_retrievables: async |_ctx| {
            Ok(vec![
                chunk("plain", "fetched text"),
                chunk("inline", "stays inline").with_inline(true),
            ])
        },
        store_retrievable_bytes: async |ctx, id, bytes| {
            self.bytes.store_retrievable_bytes(ctx, id, bytes).await
        },
        read_retrievable_bytes: async |ctx, id| self.bytes.read_retrievable_bytes(ctx, id).await,
        ..noop
    }
}

#[tokio::test]
async fn fetched_retrievables_with_static_text_come_back_spooled() {
    let storage = PlainText::default();
    let ctx = TurnContext::new(
        RawTurnContext::new("conversation", "Be brief."),
        SharedStorage::new(storage.clone()),
        ToolRegistry::new(),
    )
    .unwrap();

    let fetched = ctx.fetch_retrievables().await.unwrap();
    assert!(is_spooled(&fetched[0]));
    assert_eq!(fetched[0].content_string().await.unwrap(), "fetched text");
    assert!(!is_spooled(&fetched[1]));
    assert_eq!(storage.bytes.retrievable_bytes().len(), 1);
    let spooled = storage
        .bytes
        .read_retrievable_bytes(ctx.storage_context(), "plain".into())
        .await
        .unwrap();
    assert!(
        spooled.is_some(),
        "the plain text was spooled under its own id"
    );
}

#[tokio::test]
async fn retrievables_a_dispatch_starts_with_are_spooled_before_the_executor_sees_them() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let seen: Arc<Mutex<Vec<bool>>> = Arc::default();
    let recorded = Arc::clone(&seen);
    let runner = TurnRunner::builder()
        .storage(storage.clone())
        // Added to the turn directly, not stored: still plain text here.
        .turn_input(from_fn(|ctx: &mut TurnContext, next| {
            Box::pin(async move {
                ctx.retrievables.add(chunk("preloaded", "from a cache"));
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            let recorded = Arc::clone(&recorded);
            Box::pin(async move {
                recorded
                    .lock()
                    .unwrap()
                    .extend(ctx.retrievables.iter().map(is_spooled));
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation", "Be brief."))
        .await
        .unwrap();

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(*seen.lock().unwrap(), [true]);
    let spool = storage
        .retrievable_reader(&partition(), "preloaded")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&spool.read_all().await.unwrap()[..], b"from a cache");
}

// ---------------------------------------------------------------------------------------------
// Tool-call group replacement

fn ids(calls: &adk::context::Collection<ToolCall>) -> Vec<String> {
    calls.iter().map(|call| call.id().to_owned()).collect()
}

#[tokio::test]
async fn replacing_a_tool_call_group_in_turn_input_updates_storage_and_the_turn_in_place() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    for id in ["before", "call_0", "between", "call_1", "after"] {
        ctx.store_tool_call(call(id)).await.unwrap();
    }

    ctx.replace_tool_call_group(["call_0", "call_1"], vec![call("r-0"), call("r-1")])
        .await
        .unwrap();

    assert_eq!(
        ids(&ctx.tool_calls),
        ["before", "r-0", "r-1", "between", "after"]
    );
    let stored: Vec<String> = storage
        .fetch_tool_calls(&partition())
        .await
        .unwrap()
        .iter()
        .map(|call| call.id().to_owned())
        .collect();
    assert_eq!(stored, ["before", "between", "after", "r-0", "r-1"]);
}

#[tokio::test]
async fn a_provider_reusing_call_0_gets_its_new_call_in_place_of_the_old_one() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    ctx.store_tool_call(call("call_0").complete("earlier result"))
        .await
        .unwrap();

    // The next answer numbers its calls from 0 again: the old call_0 makes way.
    ctx.replace_tool_call_group(["call_0"], vec![call("call_0")])
        .await
        .unwrap();

    let stored = storage.fetch_tool_calls(&partition()).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert!(
        stored[0].results().is_none(),
        "the old result was cross-wired"
    );
    assert_eq!(ids(&ctx.tool_calls), ["call_0"]);
}

adk::storage_adapter! {
    /// Keeps no tool calls; its store fails after the first, so the fallback fails part-way.
    #[derive(Clone, Default)]
    struct FailsSecondStore {
        stores: Arc<AtomicUsize>,
    }
    impl {
        store_tool_call: async |_ctx, _call| {
            if self.stores.fetch_add(1, Ordering::SeqCst) >= 1 {
                return Err(StorageError::backend("disk full"));
            }
            Ok(())
        },
        ..noop
    }
}

#[tokio::test]
async fn without_an_atomic_callback_a_failed_replacement_names_what_was_deleted_and_stored() {
    let storage = FailsSecondStore::default();
    let mut ctx = TurnContext::new(
        RawTurnContext::new("conversation", "Be brief."),
        SharedStorage::new(storage),
        ToolRegistry::new(),
    )
    .unwrap();

    let error = ctx
        .replace_tool_call_group(["a", "b"], vec![call("r-0"), call("r-1")])
        .await
        .unwrap_err();
    match &error {
        StorageError::ToolCallGroupReplacement {
            deleted, stored, ..
        } => {
            assert_eq!(deleted, &["a", "b"]);
            assert_eq!(stored, &["r-0"]);
        }
        other => panic!("expected a group replacement failure, got {other}"),
    }
    assert!(error.to_string().contains("disk full"), "{error}");
    assert!(
        ctx.tool_calls.is_empty(),
        "the collection changed on failure"
    );
}

/// Counts calls of the atomic callback; keeps tool calls in a list.
#[derive(Clone, Default)]
struct Atomic {
    calls: Arc<Mutex<Vec<ToolCall>>>,
    group_replacements: Arc<AtomicUsize>,
}

adk::storage_adapter! {
    #[derive(Clone, Default)]
    struct AtomicInner {
        state: Atomic,
    }
    impl {
        store_tool_call: async |_ctx, call| {
            self.state.calls.lock().unwrap().push(call);
            Ok(())
        },
        delete_tool_call: async |_ctx, _id| Err(StorageError::backend("the atomic path should be used")),
        ..noop
    }
}

// An adapter that overrides the optional callback by hand, delegating the rest.
#[derive(Clone, Default)]
struct AtomicStorage(AtomicInner);

macro_rules! delegate {
    ($($name:ident($($argument:ident: $type:ty),*) -> $output:ty;)*) => {$(
        async fn $name(&self, ctx: &StorageContext, $($argument: $type),*) -> Result<$output, StorageError> {
            self.0.$name(ctx, $($argument),*).await
        }
    )*};
}

impl StorageAdapter for AtomicStorage {
    delegate! {
        fetch_memories() -> Vec<adk::primitives::Memory>;
        fetch_messages() -> Vec<adk::primitives::Message>;
        fetch_thoughts() -> Vec<adk::primitives::Thought>;
        fetch_tool_calls() -> Vec<ToolCall>;
        fetch_tools() -> Vec<adk::primitives::Tool>;
        fetch_retrievables() -> Vec<Retrievable>;
        refresh_standing_instructions() -> Vec<adk::primitives::StandingInstruction>;
        store_memory(memory: adk::primitives::Memory) -> ();
        mutate_memory(memory: adk::primitives::Memory) -> ();
        delete_memory(id: String) -> ();
        store_message(message: adk::primitives::Message) -> ();
        mutate_message(message: adk::primitives::Message) -> ();
        delete_message(id: String) -> ();
        store_thought(thought: adk::primitives::Thought) -> ();
        mutate_thought(thought: adk::primitives::Thought) -> ();
        delete_thought(id: String) -> ();
        store_tool_call(call: ToolCall) -> ();
        mutate_tool_call(call: ToolCall) -> ();
        delete_tool_call(id: String) -> ();
        store_retrievable(retrievable: Retrievable) -> ();
        mutate_retrievable(retrievable: Retrievable) -> ();
        delete_retrievable(id: String) -> ();
        store_standing_instruction(instruction: adk::primitives::StandingInstruction) -> ();
        mutate_standing_instruction(instruction: adk::primitives::StandingInstruction) -> ();
        delete_standing_instruction(instruction: adk::primitives::StandingInstruction) -> ();
        store_media_bytes(id: String, bytes: adk::bytes::ConduitBytes) -> adk::bytes::MediaReader;
        store_retrievable_bytes(id: String, bytes: adk::bytes::ConduitBytes) -> adk::bytes::SpoolReader;
        read_media_bytes(id: String) -> Option<adk::bytes::MediaReader>;
        read_retrievable_bytes(id: String) -> Option<adk::bytes::SpoolReader>;
    }

    async fn replace_tool_call_group(
        &self,
        _ctx: &StorageContext,
        ids: Vec<String>,
        replacements: Vec<ToolCall>,
    ) -> Result<(), StorageError> {
        self.0
            .state
            .group_replacements
            .fetch_add(1, Ordering::SeqCst);
        let mut calls = self.0.state.calls.lock().unwrap();
        calls.retain(|call| !ids.iter().any(|id| id == call.id()));
        calls.extend(replacements);
        Ok(())
    }
}

#[tokio::test]
async fn an_adapters_atomic_callback_is_used_inside_a_dispatch_through_the_erased_handle() {
    let storage = AtomicStorage::default();
    let state = storage.0.state.clone();
    let runner = TurnRunner::builder()
        .storage(storage)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_tool_call(call("call_0")).await?;
                ctx.replace_tool_call_group(["call_0"], vec![call("d-call_0")])
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build();
    let outcome = runner
        .run(RawTurnContext::new("conversation", "Be brief."))
        .await
        .unwrap();

    assert!(outcome.is_completed(), "{:?}", outcome.status);
    assert_eq!(state.group_replacements.load(Ordering::SeqCst), 1);
    let kept: Vec<String> = state
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|call| call.id().to_owned())
        .collect();
    assert_eq!(kept, ["d-call_0"]);
    assert_eq!(ids(&outcome.context.tool_calls), ["d-call_0"]);
}

#[tokio::test]
async fn a_replacement_under_a_retrievables_id_is_refused_before_anything_is_persisted() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let mut ctx = turn_over(&storage).await;
    ctx.store_tool_call(call("call_0")).await.unwrap();
    ctx.store_retrievable(chunk("page", "text")).await.unwrap();

    let error = ctx
        .replace_tool_call_group(["call_0"], vec![call("page")])
        .await
        .unwrap_err();
    assert!(
        matches!(error, StorageError::ArtifactIdCollision { .. }),
        "{error}"
    );
    assert_eq!(
        storage.fetch_tool_calls(&partition()).await.unwrap().len(),
        1
    );
    assert_eq!(ids(&ctx.tool_calls), ["call_0"]);
}

#[tokio::test]
async fn the_sqlite_battery_replaces_a_group_atomically_or_not_at_all() {
    let storage = SqliteStorage::in_memory().await.unwrap();
    let ctx = partition();
    for id in ["call_0", "call_1", "kept"] {
        storage.store_tool_call(&ctx, call(id)).await.unwrap();
    }

    // The second replacement collides with a call outside the group: nothing changes.
    let error = storage
        .replace_tool_call_group(
            &ctx,
            vec!["call_0".into(), "call_1".into()],
            vec![call("new"), call("kept")],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, StorageError::Conflict { ref id, .. } if id == "kept"),
        "{error}"
    );
    let stored: Vec<String> = storage
        .fetch_tool_calls(&ctx)
        .await
        .unwrap()
        .iter()
        .map(|call| call.id().to_owned())
        .collect();
    assert_eq!(stored, ["call_0", "call_1", "kept"]);

    storage
        .replace_tool_call_group(
            &ctx,
            vec!["call_0".into(), "call_1".into()],
            vec![call("new")],
        )
        .await
        .unwrap();
    let stored: Vec<String> = storage
        .fetch_tool_calls(&ctx)
        .await
        .unwrap()
        .iter()
        .map(|call| call.id().to_owned())
        .collect();
    assert_eq!(stored, ["kept", "new"]);
}

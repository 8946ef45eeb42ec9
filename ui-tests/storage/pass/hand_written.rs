//! Implementing `StorageAdapter` by hand, with `async fn`s, still works next to the macro.

use std::sync::Mutex;

use adk::bytes::{ConduitBytes, MediaReader, SpoolReader};
use adk::primitives::{
    Memory, Message, Retrievable, StandingInstruction, Thought, Tool, ToolCall,
};
use adk::storage::{NoopStorage, StorageAdapter, StorageContext, StorageError};

#[derive(Default)]
pub struct HandWritten {
    messages: Mutex<Vec<Message>>,
    baseline: NoopStorage,
}

impl StorageAdapter for HandWritten {
    async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        self.baseline.fetch_memories(ctx).await
    }

    async fn fetch_messages(&self, _ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        Ok(self.messages.lock().map(|messages| messages.clone()).unwrap_or_default())
    }

    async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        self.baseline.fetch_thoughts(ctx).await
    }

    async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        self.baseline.fetch_tool_calls(ctx).await
    }

    async fn fetch_tools(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        self.baseline.fetch_tools(ctx).await
    }

    async fn fetch_retrievables(&self, ctx: &StorageContext) -> Result<Vec<Retrievable>, StorageError> {
        self.baseline.fetch_retrievables(ctx).await
    }

    async fn refresh_standing_instructions(&self, ctx: &StorageContext) -> Result<Vec<StandingInstruction>, StorageError> {
        self.baseline.refresh_standing_instructions(ctx).await
    }

    async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        self.baseline.store_memory(ctx, memory).await
    }

    async fn mutate_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        self.baseline.mutate_memory(ctx, memory).await
    }

    async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.baseline.delete_memory(ctx, id).await
    }

    async fn store_message(&self, _ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
        if let Ok(mut messages) = self.messages.lock() {
            messages.push(message);
        }
        Ok(())
    }

    async fn mutate_message(&self, ctx: &StorageContext, message: Message) -> Result<(), StorageError> {
        self.baseline.mutate_message(ctx, message).await
    }

    async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.baseline.delete_message(ctx, id).await
    }

    async fn store_thought(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError> {
        self.baseline.store_thought(ctx, thought).await
    }

    async fn mutate_thought(&self, ctx: &StorageContext, thought: Thought) -> Result<(), StorageError> {
        self.baseline.mutate_thought(ctx, thought).await
    }

    async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.baseline.delete_thought(ctx, id).await
    }

    async fn store_tool_call(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError> {
        self.baseline.store_tool_call(ctx, tool_call).await
    }

    async fn mutate_tool_call(&self, ctx: &StorageContext, tool_call: ToolCall) -> Result<(), StorageError> {
        self.baseline.mutate_tool_call(ctx, tool_call).await
    }

    async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.baseline.delete_tool_call(ctx, id).await
    }

    async fn store_retrievable(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError> {
        self.baseline.store_retrievable(ctx, retrievable).await
    }

    async fn mutate_retrievable(&self, ctx: &StorageContext, retrievable: Retrievable) -> Result<(), StorageError> {
        self.baseline.mutate_retrievable(ctx, retrievable).await
    }

    async fn delete_retrievable(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.baseline.delete_retrievable(ctx, id).await
    }

    async fn store_standing_instruction(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError> {
        self.baseline.store_standing_instruction(ctx, instruction).await
    }

    async fn mutate_standing_instruction(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError> {
        self.baseline.mutate_standing_instruction(ctx, instruction).await
    }

    async fn delete_standing_instruction(&self, ctx: &StorageContext, instruction: StandingInstruction) -> Result<(), StorageError> {
        self.baseline.delete_standing_instruction(ctx, instruction).await
    }

    async fn store_media_bytes(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<MediaReader, StorageError> {
        self.baseline.store_media_bytes(ctx, id, bytes).await
    }

    async fn store_retrievable_bytes(&self, ctx: &StorageContext, id: String, bytes: ConduitBytes) -> Result<SpoolReader, StorageError> {
        self.baseline.store_retrievable_bytes(ctx, id, bytes).await
    }

    async fn read_media_bytes(&self, ctx: &StorageContext, id: String) -> Result<Option<MediaReader>, StorageError> {
        self.baseline.read_media_bytes(ctx, id).await
    }

    async fn read_retrievable_bytes(&self, ctx: &StorageContext, id: String) -> Result<Option<SpoolReader>, StorageError> {
        self.baseline.read_retrievable_bytes(ctx, id).await
    }
}

adk::storage_adapter! {
    pub struct Generated;
    impl { ..noop }
}

fn main() {
    fn assert_adapter<T: StorageAdapter>() {}
    assert_adapter::<HandWritten>();
    assert_adapter::<Generated>();
}

//! 50 MiB through each conduit of an adapter backed by files, never held whole in memory.

use super::*;

const CHUNK: usize = 64 * 1024;
const TOTAL: usize = 50 * 1024 * 1024;

/// Writes both conduits into files; every primitive is deliberately not persisted.
struct FileBackedStorage {
    retrievable_bytes: FileSpoolStore,
    media_bytes: FileSpoolStore,
    rest: NoopStorage,
}

impl StorageAdapter for FileBackedStorage {
    async fn fetch_memories(&self, ctx: &StorageContext) -> Result<Vec<Memory>, StorageError> {
        self.rest.fetch_memories(ctx).await
    }
    async fn fetch_messages(&self, ctx: &StorageContext) -> Result<Vec<Message>, StorageError> {
        self.rest.fetch_messages(ctx).await
    }
    async fn fetch_thoughts(&self, ctx: &StorageContext) -> Result<Vec<Thought>, StorageError> {
        self.rest.fetch_thoughts(ctx).await
    }
    async fn fetch_tool_calls(&self, ctx: &StorageContext) -> Result<Vec<ToolCall>, StorageError> {
        self.rest.fetch_tool_calls(ctx).await
    }
    async fn fetch_tools(&self, ctx: &StorageContext) -> Result<Vec<Tool>, StorageError> {
        self.rest.fetch_tools(ctx).await
    }
    async fn fetch_retrievables(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<Retrievable>, StorageError> {
        self.rest.fetch_retrievables(ctx).await
    }
    async fn refresh_standing_instructions(
        &self,
        ctx: &StorageContext,
    ) -> Result<Vec<StandingInstruction>, StorageError> {
        self.rest.refresh_standing_instructions(ctx).await
    }
    async fn store_memory(&self, ctx: &StorageContext, memory: Memory) -> Result<(), StorageError> {
        self.rest.store_memory(ctx, memory).await
    }
    async fn mutate_memory(
        &self,
        ctx: &StorageContext,
        memory: Memory,
    ) -> Result<(), StorageError> {
        self.rest.mutate_memory(ctx, memory).await
    }
    async fn delete_memory(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_memory(ctx, id).await
    }
    async fn store_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.rest.store_message(ctx, message).await
    }
    async fn mutate_message(
        &self,
        ctx: &StorageContext,
        message: Message,
    ) -> Result<(), StorageError> {
        self.rest.mutate_message(ctx, message).await
    }
    async fn delete_message(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_message(ctx, id).await
    }
    async fn store_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.rest.store_thought(ctx, thought).await
    }
    async fn mutate_thought(
        &self,
        ctx: &StorageContext,
        thought: Thought,
    ) -> Result<(), StorageError> {
        self.rest.mutate_thought(ctx, thought).await
    }
    async fn delete_thought(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_thought(ctx, id).await
    }
    async fn store_tool_call(
        &self,
        ctx: &StorageContext,
        call: ToolCall,
    ) -> Result<(), StorageError> {
        self.rest.store_tool_call(ctx, call).await
    }
    async fn mutate_tool_call(
        &self,
        ctx: &StorageContext,
        call: ToolCall,
    ) -> Result<(), StorageError> {
        self.rest.mutate_tool_call(ctx, call).await
    }
    async fn delete_tool_call(&self, ctx: &StorageContext, id: String) -> Result<(), StorageError> {
        self.rest.delete_tool_call(ctx, id).await
    }
    async fn store_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.rest.store_retrievable(ctx, retrievable).await
    }
    async fn mutate_retrievable(
        &self,
        ctx: &StorageContext,
        retrievable: Retrievable,
    ) -> Result<(), StorageError> {
        self.rest.mutate_retrievable(ctx, retrievable).await
    }
    async fn delete_retrievable(
        &self,
        ctx: &StorageContext,
        id: String,
    ) -> Result<(), StorageError> {
        self.rest.delete_retrievable(ctx, id).await
    }
    async fn store_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.rest.store_standing_instruction(ctx, instruction).await
    }
    async fn mutate_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.rest
            .mutate_standing_instruction(ctx, instruction)
            .await
    }
    async fn delete_standing_instruction(
        &self,
        ctx: &StorageContext,
        instruction: StandingInstruction,
    ) -> Result<(), StorageError> {
        self.rest
            .delete_standing_instruction(ctx, instruction)
            .await
    }
    async fn store_media_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<MediaReader, StorageError> {
        let stored = self.media_bytes.write(&id, bytes).await?;
        Ok(MediaReader::from_spool(stored))
    }
    async fn store_retrievable_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
        bytes: ConduitBytes,
    ) -> Result<SpoolReader, StorageError> {
        Ok(self.retrievable_bytes.write(&id, bytes).await?)
    }
    // Keyed by id alone: the 50 MiB test writes from one conversation only.
    async fn read_media_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
    ) -> Result<Option<MediaReader>, StorageError> {
        let stored = self.media_bytes.read(&id).await?;
        Ok(stored.map(MediaReader::from_spool))
    }
    async fn read_retrievable_bytes(
        &self,
        _ctx: &StorageContext,
        id: String,
    ) -> Result<Option<SpoolReader>, StorageError> {
        Ok(self.retrievable_bytes.read(&id).await?)
    }
}

/// FNV-1a, fed chunk by chunk, so the content hash never needs the whole payload at once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ContentHash(u64);

impl ContentHash {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn feed(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The `index`-th 64 KiB chunk of the payload: varied bytes, cheap to regenerate.
fn payload_chunk(index: usize) -> Bytes {
    let seed = index.wrapping_mul(2_654_435_761);
    (0..CHUNK)
        .map(|offset| (seed.wrapping_add(offset.wrapping_mul(31)) % 251) as u8)
        .collect::<Vec<u8>>()
        .into()
}

fn expected_hash() -> ContentHash {
    let mut hash = ContentHash::new();
    for index in 0..TOTAL / CHUNK {
        hash.feed(&payload_chunk(index));
    }
    hash
}

fn bytes_on_disk(folder: &std::path::Path) -> u64 {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.metadata().ok())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}

/// A 50 MiB source that generates each chunk only when asked, records the largest chunk it
/// handed over, and checks that earlier chunks have already reached `folder` — which can only
/// hold if the writer streams instead of collecting the input first.
fn streamed_payload(folder: std::path::PathBuf, largest_chunk: Arc<AtomicUsize>) -> ConduitBytes {
    let chunks = futures_util::stream::iter(0..TOTAL / CHUNK).then(move |index| {
        let folder = folder.clone();
        let largest_chunk = Arc::clone(&largest_chunk);
        async move {
            // Allow generous buffering (1 MiB) between the writer and the file.
            let must_be_written = index.saturating_sub(16) * CHUNK;
            let written = bytes_on_disk(&folder);
            if written < must_be_written as u64 {
                return Err(std::io::Error::other(format!(
                    "chunk {index} requested while only {written} bytes were on disk: the \
                     writer is collecting the stream instead of writing it as it arrives"
                )));
            }
            let chunk = payload_chunk(index);
            largest_chunk.fetch_max(chunk.len(), Ordering::SeqCst);
            Ok(chunk)
        }
    });
    ConduitBytes::from_stream(chunks)
}

async fn read_back(stream: adk::bytes::ByteStream) -> (usize, ContentHash, usize) {
    let mut stream = stream;
    let mut length = 0;
    let mut hash = ContentHash::new();
    let mut largest_chunk = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("the stored bytes read back");
        length += chunk.len();
        largest_chunk = largest_chunk.max(chunk.len());
        hash.feed(&chunk);
    }
    (length, hash, largest_chunk)
}

struct TemporaryFolder(std::path::PathBuf);

impl TemporaryFolder {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "adk-storage-test-{name}-{}-{}",
            std::process::id(),
            StorageContext::new("unused").turn_id()
        ));
        Self(path)
    }
}

impl Drop for TemporaryFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn the_streaming_check_catches_a_writer_that_collects_the_input_first() {
    // InMemorySpoolStore collects its input before storing it, so nothing reaches the folder
    // while the source is being read.
    let folder = TemporaryFolder::new("collecting");
    std::fs::create_dir_all(&folder.0).expect("the folder is created");
    let error = InMemorySpoolStore::new()
        .write(
            "collected",
            streamed_payload(folder.0.clone(), Arc::new(AtomicUsize::new(0))),
        )
        .await
        .expect_err("the source refuses to run ahead of the disk");
    assert!(
        error.to_string().contains("collecting the stream"),
        "{error}"
    );
}

#[tokio::test]
async fn fifty_mebibytes_stream_through_both_conduits_in_64_kib_chunks() {
    let retrievable_folder = TemporaryFolder::new("retrievable");
    let media_folder = TemporaryFolder::new("media");
    let storage = FileBackedStorage {
        retrievable_bytes: FileSpoolStore::open(&retrievable_folder.0)
            .await
            .expect("the folder opens"),
        media_bytes: FileSpoolStore::open(&media_folder.0)
            .await
            .expect("the folder opens"),
        rest: NoopStorage::new(),
    };
    let expected = expected_hash();

    let largest_written = Arc::new(AtomicUsize::new(0));
    let spool = storage
        .store_retrievable_bytes(
            &ctx(),
            "large-text".into(),
            streamed_payload(retrievable_folder.0.clone(), Arc::clone(&largest_written)),
        )
        .await
        .expect("50 MiB stream into the retrievable conduit");
    assert_eq!(spool.byte_length().await.expect("length"), TOTAL as u64);
    let (length, hash, largest_read) = read_back(spool.stream()).await;
    assert_eq!(length, TOTAL);
    assert_eq!(hash, expected);
    assert_eq!(largest_written.load(Ordering::SeqCst), CHUNK);
    assert!(
        largest_read <= CHUNK,
        "read a chunk of {largest_read} bytes"
    );

    let largest_written = Arc::new(AtomicUsize::new(0));
    let media = storage
        .store_media_bytes(
            &ctx(),
            "large-video".into(),
            streamed_payload(media_folder.0.clone(), Arc::clone(&largest_written)),
        )
        .await
        .expect("50 MiB stream into the media conduit");
    assert_eq!(media.byte_length().await, Some(TOTAL as u64));
    let (length, hash, largest_read) = read_back(media.stream()).await;
    assert_eq!(length, TOTAL);
    assert_eq!(hash, expected);
    assert_eq!(largest_written.load(Ordering::SeqCst), CHUNK);
    assert!(
        largest_read <= CHUNK,
        "read a chunk of {largest_read} bytes"
    );
}

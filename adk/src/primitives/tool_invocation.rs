//! What a tool handler receives ([`ToolInvocation`]: the call, and the turn's storage) and what
//! it returns ([`ToolOutput`], or a [`ToolError`]).

use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::{Media, SpooledArtifact};
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::storage::{NoopStorage, SharedStorage, StorageContext, StorageError};

/// The stored form of a tool's handler: an async function of the arguments and the invocation.
///
/// [`ToolBuilder::handler`] builds one from an ordinary closure; you rarely name this type.
///
/// [`ToolBuilder::handler`]: super::ToolBuilder::handler
pub type ToolHandler = Arc<
    dyn Fn(Value, ToolInvocation) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync,
>;

/// What a handler learns about the call it serves, and its way to storage. Cheap to clone.
///
/// It carries the tool's name, the call id and checksum, the tool's `meta`, the dispatch and
/// iteration it runs in, and a handle to the turn's storage, so a handler can persist bytes
/// without borrowing the dispatch context (which the executor holds while the tool runs).
///
/// ```
/// use adk::primitives::ToolInvocation;
///
/// let invocation = ToolInvocation::new("weather", "call-1");
/// assert_eq!(invocation.tool_name(), "weather");
/// assert_eq!(invocation.call_id(), "call-1");
/// assert!(invocation.meta().is_empty());
/// assert_eq!(invocation.dispatch_id(), None); // made outside a dispatch
/// ```
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    pub(super) tool_name: Arc<str>,
    pub(super) call_id: Arc<str>,
    pub(super) checksum: Option<Arc<str>>,
    pub(super) meta: Arc<Map<String, Value>>,
    pub(super) dispatch: Option<(Arc<str>, u32)>,
    pub(super) storage: SharedStorage,
    pub(super) storage_context: StorageContext,
}

/// The conversation id of the storage context an invocation made outside a turn carries.
const STANDALONE_CONVERSATION: &str = "standalone-tool-invocation";

impl ToolInvocation {
    /// An invocation of `tool_name` identified by `call_id`, with empty `meta`, outside any
    /// dispatch. Its storage is a fresh [`NoopStorage`] (whose byte conduits keep bytes in
    /// memory) until [`with_storage`](Self::with_storage) says otherwise: enough to test a
    /// handler on its own.
    pub fn new(tool_name: impl Into<String>, call_id: impl Into<String>) -> Self {
        Self {
            tool_name: Arc::from(tool_name.into()),
            call_id: Arc::from(call_id.into()),
            checksum: None,
            meta: Arc::new(Map::new()),
            dispatch: None,
            storage: SharedStorage::new(NoopStorage::new()),
            storage_context: StorageContext::new(STANDALONE_CONVERSATION),
        }
    }

    /// The same invocation carrying `meta`.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Arc::new(meta);
        self
    }

    /// The same invocation persisting through `storage`, with `storage_context` handed to
    /// every storage call.
    ///
    /// ```
    /// use adk::primitives::ToolInvocation;
    /// use adk::storage::{NoopStorage, SharedStorage, StorageContext};
    ///
    /// let invocation = ToolInvocation::new("weather", "call-1")
    ///     .with_storage(SharedStorage::new(NoopStorage::new()), StorageContext::new("c-7"));
    /// assert_eq!(invocation.storage_context().conversation_id().as_str(), "c-7");
    /// ```
    pub fn with_storage(mut self, storage: SharedStorage, storage_context: StorageContext) -> Self {
        self.storage = storage;
        self.storage_context = storage_context;
        self
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The id of this call (the [`ToolCall`](super::ToolCall) id).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The call's checksum (see [`tool_call_checksum`](super::tool_call_checksum)), the
    /// `call_id` of its execution events; `None` outside a dispatch.
    pub fn checksum(&self) -> Option<&str> {
        self.checksum.as_deref()
    }

    /// The tool's `meta`, as configured when it was built.
    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The id of the dispatch running the tool; `None` outside a dispatch.
    pub fn dispatch_id(&self) -> Option<&str> {
        self.dispatch
            .as_ref()
            .map(|(dispatch_id, _)| &**dispatch_id)
    }

    /// The dispatch iteration running the tool, counted from zero; `None` outside a dispatch.
    pub fn iteration(&self) -> Option<u32> {
        self.dispatch.as_ref().map(|(_, iteration)| *iteration)
    }

    /// The turn's storage.
    pub fn storage(&self) -> &SharedStorage {
        &self.storage
    }

    /// What storage calls receive: conversation, turn, identity, cancellation.
    pub fn storage_context(&self) -> &StorageContext {
        &self.storage_context
    }

    /// Routes media bytes into storage and returns a reader over them; build a
    /// [`Media`] from the reader and return it, or store the record that owns it.
    ///
    /// ```
    /// use adk::primitives::ToolInvocation;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let invocation = ToolInvocation::new("camera", "call-1");
    /// let reader = invocation.store_media_bytes("photo-1", vec![0xff, 0xd8]).await?;
    /// # let _ = reader;
    /// # Ok::<(), adk::storage::StorageError>(())
    /// # }).unwrap();
    /// ```
    pub async fn store_media_bytes(
        &self,
        id: impl Into<String>,
        bytes: impl Into<ConduitBytes>,
    ) -> Result<MediaReader, StorageError> {
        self.storage
            .store_media_bytes(&self.storage_context, id.into(), bytes.into())
            .await
    }

    /// Routes large text into storage and returns a spool reader over it; wrap the reader in
    /// a [`SpooledArtifact`] and return it.
    pub async fn store_retrievable_bytes(
        &self,
        id: impl Into<String>,
        bytes: impl Into<ConduitBytes>,
    ) -> Result<SpoolReader, StorageError> {
        self.storage
            .store_retrievable_bytes(&self.storage_context, id.into(), bytes.into())
            .await
    }
}

/// What a tool handler returns.
///
/// ```
/// use adk::primitives::ToolOutput;
/// assert!(matches!(ToolOutput::from("done"), ToolOutput::Text(_)));
/// assert!(matches!(ToolOutput::from(vec![1u8, 2]), ToolOutput::Bytes(_)));
/// ```
#[derive(Debug, Clone)]
pub enum ToolOutput {
    /// Text for the model.
    Text(String),
    /// Raw bytes.
    Bytes(Bytes),
    /// Large text kept in a byte store.
    Artifact(SpooledArtifact),
    /// Media (images, audio…), in order.
    Media(Vec<Media>),
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Bytes> for ToolOutput {
    fn from(bytes: Bytes) -> Self {
        Self::Bytes(bytes)
    }
}

impl From<Vec<u8>> for ToolOutput {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Bytes(Bytes::from(bytes))
    }
}

impl From<SpooledArtifact> for ToolOutput {
    fn from(artifact: SpooledArtifact) -> Self {
        Self::Artifact(artifact)
    }
}

impl From<Media> for ToolOutput {
    fn from(media: Media) -> Self {
        Self::Media(vec![media])
    }
}

impl From<Vec<Media>> for ToolOutput {
    fn from(media: Vec<Media>) -> Self {
        Self::Media(media)
    }
}

/// A tool handler failed. Wraps the handler's own error, which stays reachable through
/// [`source`](Self::source).
///
/// Any `std::error::Error + Send + Sync + 'static`, a `&str` or a `String` converts into it, so
/// `?` works inside a handler on your own errors, and `Err("message".into())` says why:
///
/// ```
/// use adk::primitives::{Tool, ToolError};
///
/// let tool = Tool::builder("read_note")
///     .description("Reads a note from disk.")
///     .handler(|args: serde_json::Value, _invocation| async move {
///         let name = args["name"].as_str().ok_or("`name` must be a string")?; // &str → ToolError
///         let text = std::fs::read_to_string(format!("notes/{name}.txt"))?;     // io::Error → ToolError
///         Ok(text)
///     })
///     .build()?;
/// # let _ = tool;
///
/// let from_text = ToolError::from("city not found");
/// let from_io = ToolError::from(std::io::Error::other("disk full"));
/// assert_eq!(from_text.to_string(), "the tool handler failed: city not found");
/// assert_eq!(from_io.source().to_string(), "disk full");
/// assert_eq!(from_io.code(), "E_TOOL_DOWNSTREAM_ERROR");
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
///
/// Like `anyhow::Error`, it does not implement `std::error::Error` itself (that would forbid
/// converting every error into it); [`into_source`](Self::into_source) hands back the original.
pub struct ToolError {
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl ToolError {
    /// Wraps any error, or a message (`&str` / `String`).
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            source: source.into(),
        }
    }

    /// The original's error code for a failing handler.
    pub fn code(&self) -> &'static str {
        "E_TOOL_DOWNSTREAM_ERROR"
    }

    /// The handler's own error; downcast it to reach your type.
    pub fn source(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }

    /// The handler's own error, owned.
    pub fn into_source(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.source
    }
}

impl<E> From<E> for ToolError
where
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn from(source: E) -> Self {
        Self::new(source)
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "the tool handler failed: {}", self.source)
    }
}

impl std::fmt::Debug for ToolError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ToolError")
            .field("source", &self.source)
            .finish()
    }
}

/// A [`ToolError`] as a `std::error::Error`, where an error chain needs one: its `source` is the
/// handler's own error.
#[derive(Debug, thiserror::Error)]
#[error("the tool handler failed: {source}")]
pub struct HandlerFailed {
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl From<ToolError> for HandlerFailed {
    fn from(error: ToolError) -> Self {
        Self {
            source: error.into_source(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::primitives::Tool;
    use serde_json::json;

    #[tokio::test]
    async fn a_standalone_invocation_stores_media_bytes_in_memory() {
        let invocation = ToolInvocation::new("camera", "c");
        assert_eq!(invocation.dispatch_id(), None);
        assert_eq!(invocation.iteration(), None);
        let reader = invocation
            .store_media_bytes("photo", vec![1u8, 2, 3])
            .await
            .unwrap();
        assert!(!reader.is_detached());
    }

    #[tokio::test]
    async fn the_handler_receives_arguments_and_invocation() {
        let tool = Tool::builder("echo")
            .description("d")
            .meta(json!({"unit": "C"}).as_object().cloned().unwrap())
            .handler(|args, invocation: ToolInvocation| async move {
                Ok(format!(
                    "{} {} {} {}",
                    invocation.tool_name(),
                    invocation.call_id(),
                    invocation.meta()["unit"],
                    args["x"]
                ))
            })
            .build()
            .unwrap();
        let output = tool
            .call(json!({"x": 1}), tool.invocation("c-1"))
            .await
            .unwrap();
        assert!(matches!(output, ToolOutput::Text(ref text) if text == "echo c-1 \"C\" 1"));
    }

    #[tokio::test]
    async fn a_failing_handler_returns_its_error() {
        let tool = Tool::builder("t")
            .description("d")
            .handler(|_, _| async { Err::<String, _>(ToolError::new("no such city")) })
            .build()
            .unwrap();
        let error = tool
            .call(json!({}), tool.invocation("c"))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no such city"));
    }
}

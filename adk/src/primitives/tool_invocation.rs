//! What a tool handler receives ([`ToolInvocation`]: the call, and the turn's storage) and what
//! it returns ([`ToolOutput`], or a [`ToolError`]).
//!
//! Values know no storage, so this file names no storage type: an invocation carries the turn's
//! storage as the types [`InvocationStorage`] names, which the storage layer supplies, and the
//! invocation's storage methods (`with_storage`, `storage`, `storage_context`, the byte
//! conduits) are defined there, in `storage/invocation.rs`.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::{Media, SpooledArtifact};

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
    pub(super) idempotency_key: Option<Arc<str>>,
    pub(super) meta: Arc<Map<String, Value>>,
    pub(super) dispatch: Option<(Arc<str>, u32)>,
    pub(crate) storage: CarriedStorage,
    pub(crate) storage_context: CarriedContext,
    pub(crate) gates: CarriedGates,
    pub(crate) state: CarriedState,
    /// Whether the ledger's result of this call waits for the call's own tool-call write
    /// (`ctx.execute_tool`, whose caller records the finished `ToolCall`) instead of being
    /// written on its own.
    pub(crate) defers_ledger_result: bool,
}

/// The storage half of a [`ToolInvocation`], as the layer that supplies it names it: the handle
/// a handler reaches the turn's storage through, and what every storage call receives.
///
/// The dependency is inverted so that values know no storage: this module states what it needs
/// of the storage half (a handle and a context that clone, print and cross threads, and a
/// default for an invocation made outside a turn), and `storage` implements the trait for
/// [`TurnStorage`] with its `SharedStorage` and `StorageContext`.
pub(crate) trait InvocationStorage {
    /// The handle to the turn's storage (`SharedStorage`).
    type Storage: Clone + fmt::Debug + Send + Sync + 'static;
    /// What every storage call receives (`StorageContext`).
    type Context: Clone + fmt::Debug + Send + Sync + 'static;

    /// The storage of an invocation made outside a turn.
    fn standalone() -> (Self::Storage, Self::Context);
}

/// The gate half of a [`ToolInvocation`], inverted like [`InvocationStorage`]: what a handler's
/// `wait_for` needs (the turn's id, its event bus, the dispatch's cancellation token), named by
/// the layer that supplies it (`context`, which implements this trait for [`TurnGates`]).
pub(crate) trait InvocationGates {
    /// Where a handler's gates are announced and what settles them.
    type Link: Clone + fmt::Debug + Send + Sync + 'static;

    /// The link of an invocation made outside a turn: nobody listens, so its gates time out.
    fn standalone() -> Self::Link;
}

/// The session-state half of a [`ToolInvocation`], inverted like [`InvocationStorage`]: the
/// turn's state as the handler reads it and where its writes go, named by the layer that
/// supplies it (`context`, which implements this trait for [`TurnState`] and defines the
/// invocation's state methods).
pub(crate) trait InvocationState {
    /// The handler's view of the state and the way its writes reach the dispatch.
    type Link: Clone + fmt::Debug + Send + Sync + 'static;

    /// The state of an invocation made outside a turn: empty, its writes kept by the
    /// invocation alone.
    fn standalone() -> Self::Link;
}

/// The one implementation of [`InvocationState`] (no values; it lives in `context`).
pub(crate) enum TurnState {}

/// The state link an invocation carries.
pub(crate) type CarriedState = <TurnState as InvocationState>::Link;

/// The one implementation of [`InvocationGates`] (it has no values; the implementation lives in
/// `context`).
pub(crate) enum TurnGates {}

/// The gate link an invocation carries.
pub(crate) type CarriedGates = <TurnGates as InvocationGates>::Link;

/// The one implementation of [`InvocationStorage`] the crate's invocations carry (it has no
/// values: it only names the implementation, which lives in `storage`).
pub(crate) enum TurnStorage {}

/// The handle to the turn's storage an invocation carries.
pub(crate) type CarriedStorage = <TurnStorage as InvocationStorage>::Storage;

/// The storage context an invocation hands every storage call.
pub(crate) type CarriedContext = <TurnStorage as InvocationStorage>::Context;

impl ToolInvocation {
    /// An invocation of `tool_name` identified by `call_id`, with empty `meta`, outside any
    /// dispatch. Its storage is a fresh [`NoopStorage`] (whose byte conduits keep bytes in
    /// memory) until [`with_storage`](Self::with_storage) says otherwise: enough to test a
    /// handler on its own.
    ///
    /// [`NoopStorage`]: crate::storage::NoopStorage
    pub fn new(tool_name: impl Into<String>, call_id: impl Into<String>) -> Self {
        let (storage, storage_context) = TurnStorage::standalone();
        Self {
            tool_name: Arc::from(tool_name.into()),
            call_id: Arc::from(call_id.into()),
            checksum: None,
            idempotency_key: None,
            meta: Arc::new(Map::new()),
            dispatch: None,
            storage,
            storage_context,
            gates: <TurnGates as InvocationGates>::standalone(),
            state: <TurnState as InvocationState>::standalone(),
            defers_ledger_result: false,
        }
    }

    /// The same invocation carrying `meta`.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Arc::new(meta);
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

    /// The key an [idempotent](super::ToolEffect) tool passes to the system it changes, so
    /// that running the same call again has no further effect: derived from the arguments (or
    /// the call id) by the tool's effect when [`Tool::call`](super::Tool::call) runs the
    /// handler. `None` for a read-only or at-most-once tool.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The same invocation carrying `key` as its [idempotency key](Self::idempotency_key)
    /// (a key set here is kept: [`Tool::call`](super::Tool::call) derives one only when none
    /// is set).
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(Arc::from(key.into()));
        self
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

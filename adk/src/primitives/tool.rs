//! [`Tool`]: a function the model can call, and [`ToolRegistry`]: the ordered set of tools a
//! turn offers, with hiding and merging.
//!
//! A tool checks its arguments against its JSON Schema before its handler runs (the validator
//! is compiled once, when the tool is built). A tool built with [`Tool::typed`] takes a
//! `Deserialize` struct instead of raw JSON, and its schema is derived from that struct.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::error::Checker;
use super::tool_arguments::{ArgumentCheck, InvalidToolArgs};
use super::{Media, PrimitiveError, PrimitiveKind, SpooledArtifact};
use crate::bytes::{ConduitBytes, MediaReader, SpoolReader};
use crate::storage::{NoopStorage, SharedStorage, StorageContext, StorageError};

/// The stored form of a tool's handler: an async function of the arguments and the invocation.
///
/// [`ToolBuilder::handler`] builds one from an ordinary closure; you rarely name this type.
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
    tool_name: Arc<str>,
    call_id: Arc<str>,
    checksum: Option<Arc<str>>,
    meta: Arc<Map<String, Value>>,
    dispatch: Option<(Arc<str>, u32)>,
    storage: SharedStorage,
    storage_context: StorageContext,
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

/// What happens when a tool's name is already taken while registries are merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CollisionPolicy {
    /// Refuse: a collision is an error (the default). During a merge, an incoming tool with this
    /// policy defers to the merge-level policy.
    #[default]
    Fail,
    /// The incoming tool replaces the existing one (in the existing one's position).
    Replace,
    /// The existing tool stays; the incoming one is dropped.
    Keep,
}

struct ToolParts {
    name: String,
    description: String,
    input_schema: Value,
    arguments: ArgumentCheck,
    meta: Arc<Map<String, Value>>,
    ephemeral: bool,
    trusted: bool,
    on_collision: CollisionPolicy,
    handler: ToolHandler,
}

/// A function the model can call: a name, a description, a JSON Schema for its arguments and
/// an async handler. Cheap to clone (`Arc` inside); not serializable, since it holds code.
///
/// The schema is compiled when the tool is built: [`validate`](Self::validate) checks
/// arguments against it, and a dispatch (`DispatchContext::execute_tool`) validates before
/// every call, so the handler only ever sees arguments that match.
///
/// ```
/// use adk::primitives::{Tool, ToolError, ToolInvocation, ToolOutput};
/// use serde_json::json;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let weather = Tool::builder("weather")
///     .description("Current weather for a city.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"city": {"type": "string"}},
///         "required": ["city"]
///     }))
///     .handler(|args, _invocation| async move {
///         let city = args["city"].as_str().ok_or_else(|| ToolError::new("`city` is missing"))?;
///         Ok(format!("{city}: 4°C"))
///     })
///     .build()?;
///
/// assert!(weather.validate(json!({"town": "Oslo"})).is_err());
/// let output = weather.call(json!({"city": "Oslo"}), weather.invocation("call-1")).await;
/// assert!(matches!(output, Ok(ToolOutput::Text(ref text)) if text == "Oslo: 4°C"));
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Tool {
    parts: Arc<ToolParts>,
}

impl Tool {
    /// Starts building a tool named `name` whose handler takes the arguments as JSON.
    /// [`ToolBuilder::build`] exists only once a handler is given, so a tool without one does
    /// not compile.
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder::start(name.into(), json!({"type": "object"}))
    }

    /// Starts building a tool named `name` whose handler takes `Arguments`, a `Deserialize`
    /// struct; the input schema is derived from it with `schemars`. Arguments that pass the
    /// schema but still do not deserialize are refused like schema violations, before the
    /// handler runs.
    ///
    /// ```
    /// use adk::primitives::Tool;
    /// use serde::Deserialize;
    /// use serde_json::json;
    ///
    /// #[derive(Deserialize, schemars::JsonSchema)]
    /// struct ForecastArgs {
    ///     /// The city to forecast.
    ///     city: String,
    ///     days: Option<u8>,
    /// }
    ///
    /// let forecast = Tool::typed::<ForecastArgs>("forecast")
    ///     .description("Weather forecast for a city.")
    ///     .handler(|args: ForecastArgs, _invocation| async move {
    ///         Ok(format!("{}: sunny for {} days", args.city, args.days.unwrap_or(1)))
    ///     })
    ///     .build()?;
    ///
    /// assert_eq!(forecast.input_schema()["required"], json!(["city"]));
    /// assert!(forecast.validate(json!({"city": "Oslo", "days": 3})).is_ok());
    /// assert!(forecast.validate(json!({"city": 7})).is_err());
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn typed<Arguments>(name: impl Into<String>) -> ToolBuilder<(), Typed<Arguments>>
    where
        Arguments: DeserializeOwned + schemars::JsonSchema + 'static,
    {
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|settings| settings.meta_schema = None)
            .into_generator();
        let schema = generator.into_root_schema_for::<Arguments>().to_value();
        ToolBuilder::start(name.into(), schema)
    }

    /// Checks `args` against the input schema (and, for a [typed](Self::typed) tool, that
    /// they deserialize into its argument type). Returns them unchanged when they pass, or
    /// every violation, with the arguments, when they do not.
    pub fn validate(&self, args: Value) -> Result<Value, InvalidToolArgs> {
        self.parts.arguments.check(&self.parts.name, args)
    }

    /// Runs the handler. Arguments are passed as given: call [`validate`](Self::validate)
    /// first, or let a dispatch's `execute_tool` do both.
    pub fn call(
        &self,
        args: Value,
        invocation: ToolInvocation,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.parts.handler)(args, invocation)
    }

    /// An invocation of this tool for `call_id`, carrying the tool's `meta`.
    pub fn invocation(&self, call_id: impl Into<String>) -> ToolInvocation {
        let mut invocation = ToolInvocation::new(self.parts.name.as_str(), call_id);
        invocation.meta = Arc::clone(&self.parts.meta);
        invocation
    }

    /// The invocation a dispatch hands this tool's handler.
    pub(crate) fn invocation_in_dispatch(
        &self,
        call_id: &str,
        checksum: &str,
        dispatch_id: &str,
        iteration: u32,
        storage: SharedStorage,
        storage_context: StorageContext,
    ) -> ToolInvocation {
        ToolInvocation {
            tool_name: Arc::from(self.parts.name.as_str()),
            call_id: Arc::from(call_id),
            checksum: Some(Arc::from(checksum)),
            meta: Arc::clone(&self.parts.meta),
            dispatch: Some((Arc::from(dispatch_id), iteration)),
            storage,
            storage_context,
        }
    }

    /// The name the model calls it by.
    pub fn name(&self) -> &str {
        &self.parts.name
    }

    /// What it does, for the model.
    pub fn description(&self) -> &str {
        &self.parts.description
    }

    /// The JSON Schema of its arguments.
    pub fn input_schema(&self) -> &Value {
        &self.parts.input_schema
    }

    /// Free-form settings handed to the handler through [`ToolInvocation::meta`].
    pub fn meta(&self) -> &Map<String, Value> {
        &self.parts.meta
    }

    /// Whether it is removed by [`ToolRegistry::prune_ephemeral`].
    pub fn ephemeral(&self) -> bool {
        self.parts.ephemeral
    }

    /// Whether its output is trusted as first-party.
    pub fn trusted(&self) -> bool {
        self.parts.trusted
    }

    /// What happens when its name collides during a merge.
    pub fn on_collision(&self) -> CollisionPolicy {
        self.parts.on_collision
    }

    /// The handler.
    pub fn handler(&self) -> &ToolHandler {
        &self.parts.handler
    }

    /// Name, description and schema, as a model API expects them.
    ///
    /// ```
    /// # use adk::primitives::Tool;
    /// let tool = Tool::builder("noop").description("Does nothing.")
    ///     .handler(|_, _| async { Ok("") }).build()?;
    /// assert_eq!(tool.describe()["name"], "noop");
    /// # Ok::<(), adk::primitives::PrimitiveError>(())
    /// ```
    pub fn describe(&self) -> Value {
        json!({
            "name": self.parts.name,
            "description": self.parts.description,
            "input_schema": self.parts.input_schema,
        })
    }

    fn is_same(&self, other: &Tool) -> bool {
        Arc::ptr_eq(&self.parts, &other.parts)
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Tool")
            .field("name", &self.parts.name)
            .field("description", &self.parts.description)
            .field("input_schema", &self.parts.input_schema)
            .field("meta", &self.parts.meta)
            .field("ephemeral", &self.parts.ephemeral)
            .field("trusted", &self.parts.trusted)
            .field("on_collision", &self.parts.on_collision)
            .finish_non_exhaustive()
    }
}

/// Marks a [`ToolBuilder`] whose handler takes the arguments as JSON ([`Tool::builder`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Untyped;

/// Marks a [`ToolBuilder`] whose handler takes `Arguments`, a `Deserialize` struct
/// ([`Tool::typed`]).
pub struct Typed<Arguments>(PhantomData<fn() -> Arguments>);

impl<Arguments> fmt::Debug for Typed<Arguments> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "Typed<{}>", std::any::type_name::<Arguments>())
    }
}

/// Builds a [`Tool`]. `Handler` is `()` until [`handler`](Self::handler) is called, and only
/// then does [`build`](ToolBuilder::build) exist. `Arguments` is [`Untyped`] (JSON arguments,
/// any schema through [`input_schema`](Self::input_schema)) or [`Typed`] (a struct whose
/// derived schema cannot be replaced).
#[must_use = "a tool builder does nothing until `build` is called"]
pub struct ToolBuilder<Handler = (), Arguments = Untyped> {
    name: String,
    description: String,
    input_schema: Value,
    meta: Map<String, Value>,
    ephemeral: bool,
    trusted: bool,
    on_collision: CollisionPolicy,
    handler: Handler,
    arguments: PhantomData<Arguments>,
}

impl<Arguments> ToolBuilder<(), Arguments> {
    fn start(name: String, input_schema: Value) -> Self {
        Self {
            name,
            description: String::new(),
            input_schema,
            meta: Map::new(),
            ephemeral: false,
            trusted: false,
            on_collision: CollisionPolicy::Fail,
            handler: (),
            arguments: PhantomData,
        }
    }
}

impl<Handler, Arguments> ToolBuilder<Handler, Arguments> {
    /// What the tool does, for the model (required, non-empty).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Free-form settings the handler receives through [`ToolInvocation::meta`].
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = meta;
        self
    }

    /// Whether the tool lives only until [`ToolRegistry::prune_ephemeral`] (default `false`).
    pub fn ephemeral(mut self, ephemeral: bool) -> Self {
        self.ephemeral = ephemeral;
        self
    }

    /// Whether its output is trusted as first-party (default `false`).
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// What happens when its name collides during a merge (default [`CollisionPolicy::Fail`]).
    pub fn on_collision(mut self, on_collision: CollisionPolicy) -> Self {
        self.on_collision = on_collision;
        self
    }

    fn with_handler<Stored>(self, handler: Stored) -> ToolBuilder<Stored, Arguments> {
        ToolBuilder {
            name: self.name,
            description: self.description,
            input_schema: self.input_schema,
            meta: self.meta,
            ephemeral: self.ephemeral,
            trusted: self.trusted,
            on_collision: self.on_collision,
            handler,
            arguments: PhantomData,
        }
    }
}

impl<Handler> ToolBuilder<Handler, Untyped> {
    /// The JSON Schema of the arguments: an object schema (`"type": "object"`). Defaults to
    /// `{"type": "object"}`.
    pub fn input_schema(mut self, input_schema: Value) -> Self {
        self.input_schema = input_schema;
        self
    }

    /// The async function run for each call, given the validated arguments as JSON. It may
    /// return anything convertible into a [`ToolOutput`] (`String`, `&str`, `Vec<u8>`, a
    /// [`SpooledArtifact`], [`Media`]…).
    pub fn handler<Function, Output, Returned>(
        self,
        handler: Function,
    ) -> ToolBuilder<ToolHandler, Untyped>
    where
        Function: Fn(Value, ToolInvocation) -> Output + Send + Sync + 'static,
        Output: Future<Output = Result<Returned, ToolError>> + Send + 'static,
        Returned: Into<ToolOutput>,
    {
        let handler: ToolHandler = Arc::new(move |args, invocation| {
            let running = handler(args, invocation);
            Box::pin(async move { running.await.map(Into::into) })
        });
        self.with_handler(handler)
    }

    /// Uses an already-stored handler, e.g. one taken from another tool.
    pub fn with_stored_handler(self, handler: ToolHandler) -> ToolBuilder<ToolHandler, Untyped> {
        self.with_handler(handler)
    }
}

impl<Handler, Arguments> ToolBuilder<Handler, Typed<Arguments>>
where
    Arguments: DeserializeOwned + 'static,
{
    /// The async function run for each call, given the arguments deserialized into
    /// `Arguments`. It may return anything convertible into a [`ToolOutput`].
    pub fn handler<Function, Output, Returned>(
        self,
        handler: Function,
    ) -> ToolBuilder<ToolHandler, Typed<Arguments>>
    where
        Function: Fn(Arguments, ToolInvocation) -> Output + Send + Sync + 'static,
        Output: Future<Output = Result<Returned, ToolError>> + Send + 'static,
        Returned: Into<ToolOutput>,
    {
        let handler: ToolHandler = Arc::new(move |args, invocation| {
            // `validate` already proved the arguments deserialize; a caller that skipped it
            // (`Tool::call` on raw JSON) gets the decode error as the handler's error.
            match serde_json::from_value::<Arguments>(args) {
                Ok(arguments) => {
                    let running = handler(arguments, invocation);
                    Box::pin(async move { running.await.map(Into::into) })
                }
                Err(error) => {
                    let tool = invocation.tool_name().to_owned();
                    Box::pin(async move {
                        Err(ToolError::new(format!(
                            "the arguments for tool {tool:?} do not deserialize into its \
                             argument type: {error}"
                        )))
                    })
                }
            }
        });
        self.with_handler(handler)
    }
}

impl<Arguments> ToolBuilder<ToolHandler, Arguments> {
    /// Checks the tool and compiles its schema; `arguments` adds the typed tools' decode check.
    fn build_checked(
        self,
        arguments: impl FnOnce(ArgumentCheck) -> ArgumentCheck,
    ) -> Result<Tool, PrimitiveError> {
        let check = Checker::new(PrimitiveKind::Tool, &self.name);
        check.non_empty("name", &self.name)?;
        check.non_empty("description", &self.description)?;
        let is_object_schema = self
            .input_schema
            .as_object()
            .and_then(|schema| schema.get("type"))
            .is_some_and(|kind| kind == "object");
        if !is_object_schema {
            return Err(check.fail(
                "input_schema",
                "must be a JSON Schema object with \"type\": \"object\"",
            ));
        }
        let compiled = ArgumentCheck::compile(&self.input_schema).map_err(|reason| {
            check.fail(
                "input_schema",
                format!("is not a valid JSON Schema ({reason}); fix the schema"),
            )
        })?;
        Ok(Tool {
            parts: Arc::new(ToolParts {
                name: self.name,
                description: self.description,
                input_schema: self.input_schema,
                arguments: arguments(compiled),
                meta: Arc::new(self.meta),
                ephemeral: self.ephemeral,
                trusted: self.trusted,
                on_collision: self.on_collision,
                handler: self.handler,
            }),
        })
    }
}

impl ToolBuilder<ToolHandler, Untyped> {
    /// Checks the tool (name and description non-empty, input schema an object schema that
    /// compiles) and compiles its argument validator. The error names the tool and the field.
    pub fn build(self) -> Result<Tool, PrimitiveError> {
        self.build_checked(|arguments| arguments)
    }
}

impl<Arguments> ToolBuilder<ToolHandler, Typed<Arguments>>
where
    Arguments: DeserializeOwned,
{
    /// Checks the tool (name and description non-empty, the derived schema an object schema)
    /// and compiles its argument checks. The error names the tool and the field.
    pub fn build(self) -> Result<Tool, PrimitiveError> {
        self.build_checked(ArgumentCheck::decoding::<Arguments>)
    }
}

/// A registry operation was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistryError {
    /// A tool with this name is already registered; the rejected tool is returned.
    #[error(
        "a tool named {name:?} is already registered; use `register_overwriting` to replace it, \
         or give the new tool another name"
    )]
    AlreadyRegistered {
        /// The contested name.
        name: String,
        /// The tool that was not registered.
        rejected: Box<Tool>,
    },
    /// Two merged registries hold a tool of the same name and no policy says which wins.
    #[error(
        "cannot merge tool registries: two tools are named {name:?} and neither the incoming \
         tool's `on_collision` nor the merge policy settles it; set one of them to \
         `CollisionPolicy::Replace` or `CollisionPolicy::Keep`"
    )]
    MergeCollision {
        /// The contested name.
        name: String,
    },
}

impl ToolRegistryError {
    /// The original's error code (`E_TOOL_ALREADY_REGISTERED` for both variants).
    pub fn code(&self) -> &'static str {
        "E_TOOL_ALREADY_REGISTERED"
    }

    /// The contested tool name.
    pub fn name(&self) -> &str {
        match self {
            Self::AlreadyRegistered { name, .. } | Self::MergeCollision { name } => name,
        }
    }
}

/// The tools a turn offers the model, in insertion order, some of them possibly hidden.
///
/// Hiding keeps a tool registered but out of [`visible`](Self::visible); names may be hidden
/// before their tool is registered. Cloning is cheap (tools are shared).
///
/// ```
/// use adk::primitives::{Tool, ToolRegistry};
///
/// fn tool(name: &str) -> Tool {
///     Tool::builder(name).description("demo").handler(|_, _| async { Ok("ok") }).build().unwrap()
/// }
///
/// let mut tools = ToolRegistry::from_tools([tool("search"), tool("fetch")])?;
/// tools.hide(["fetch"]);
/// let visible: Vec<String> = tools.visible().iter().map(|tool| tool.name().to_owned()).collect();
/// assert_eq!(visible, ["search"]);
///
/// let refused = tools.register(tool("search")).unwrap_err();
/// assert_eq!(refused.code(), "E_TOOL_ALREADY_REGISTERED");
/// # Ok::<(), adk::primitives::ToolRegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Tool>,
    hidden: HashSet<String>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry of `tools` in order; refuses a repeated name.
    pub fn from_tools(tools: impl IntoIterator<Item = Tool>) -> Result<Self, ToolRegistryError> {
        let mut registry = Self::new();
        for tool in tools {
            registry.register(tool)?;
        }
        Ok(registry)
    }

    /// Adds `tool` at the end; refuses it (handing it back in the error) when its name is taken.
    pub fn register(&mut self, tool: Tool) -> Result<(), ToolRegistryError> {
        if self.contains(tool.name()) {
            return Err(ToolRegistryError::AlreadyRegistered {
                name: tool.name().to_owned(),
                rejected: Box::new(tool),
            });
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Adds `tool`, replacing a tool of the same name in its position; returns the replaced one.
    pub fn register_overwriting(&mut self, tool: Tool) -> Option<Tool> {
        match self.position(tool.name()) {
            Some(index) => Some(std::mem::replace(&mut self.tools[index], tool)),
            None => {
                self.tools.push(tool);
                None
            }
        }
    }

    /// Removes the tool named `name` and forgets that it was hidden; `None` when absent.
    pub fn unregister(&mut self, name: &str) -> Option<Tool> {
        self.hidden.remove(name);
        self.position(name).map(|index| self.tools.remove(index))
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    /// Whether a tool named `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every tool, hidden or not, in insertion order.
    pub fn all(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools not hidden, in insertion order.
    pub fn visible(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .filter(|tool| !self.hidden.contains(tool.name()))
            .cloned()
            .collect()
    }

    /// The registered tools that are hidden, in insertion order.
    pub fn hidden(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .filter(|tool| self.hidden.contains(tool.name()))
            .cloned()
            .collect()
    }

    /// Whether `name` is hidden (registered or not).
    pub fn is_hidden(&self, name: &str) -> bool {
        self.hidden.contains(name)
    }

    /// Hides `names`; names with no tool yet are remembered.
    pub fn hide<Name: Into<String>>(&mut self, names: impl IntoIterator<Item = Name>) {
        self.hidden.extend(names.into_iter().map(Into::into));
    }

    /// Shows `names` again.
    pub fn unhide<Name: AsRef<str>>(&mut self, names: impl IntoIterator<Item = Name>) {
        for name in names {
            self.hidden.remove(name.as_ref());
        }
    }

    /// Hides exactly `names`, showing everything else.
    pub fn set_hidden<Name: Into<String>>(&mut self, names: impl IntoIterator<Item = Name>) {
        self.hidden = names.into_iter().map(Into::into).collect();
    }

    /// Shows every tool.
    pub fn clear_hidden(&mut self) {
        self.hidden.clear();
    }

    /// Removes every ephemeral tool (and its hidden flag); returns them in order. A dispatch
    /// does this to its own `tools` when it is acknowledged, before any `on_ack` handler the
    /// executor registered runs.
    pub fn prune_ephemeral(&mut self) -> Vec<Tool> {
        let (pruned, kept): (Vec<Tool>, Vec<Tool>) =
            self.tools.drain(..).partition(Tool::ephemeral);
        self.tools = kept;
        for tool in &pruned {
            self.hidden.remove(tool.name());
        }
        pruned
    }

    /// The number of registered tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Merges `registries` left to right into a new registry; the inputs are not changed.
    ///
    /// On a name collision the incoming tool's own [`on_collision`](Tool::on_collision) decides
    /// first (`Replace` wins, `Keep` loses); only when it is `Fail` does `policy` decide, and a
    /// `Fail` there is a [`ToolRegistryError::MergeCollision`]. A replacing tool takes the
    /// replaced one's position. Each surviving tool keeps the hidden flag it had in the
    /// registry it came from. Meeting the very same tool again (a clone of it, as when a
    /// registry is merged with itself) is not a collision.
    ///
    /// ```
    /// use adk::primitives::{CollisionPolicy, Tool, ToolRegistry};
    ///
    /// fn tool(name: &str, description: &str) -> Tool {
    ///     Tool::builder(name).description(description)
    ///         .handler(|_, _| async { Ok("ok") }).build().unwrap()
    /// }
    ///
    /// let base = ToolRegistry::from_tools([tool("search", "v1")])?;
    /// let update = ToolRegistry::from_tools([tool("search", "v2")])?;
    /// let merged = ToolRegistry::merge([&base, &update], CollisionPolicy::Replace)?;
    /// assert_eq!(merged.get("search").unwrap().description(), "v2");
    /// assert!(ToolRegistry::merge([&base, &update], CollisionPolicy::Fail).is_err());
    /// # Ok::<(), adk::primitives::ToolRegistryError>(())
    /// ```
    pub fn merge<'registry>(
        registries: impl IntoIterator<Item = &'registry ToolRegistry>,
        policy: CollisionPolicy,
    ) -> Result<Self, ToolRegistryError> {
        let mut merged = Self::new();
        for registry in registries {
            for incoming in &registry.tools {
                let incoming_hidden = registry.hidden.contains(incoming.name());
                let Some(index) = merged.position(incoming.name()) else {
                    merged.tools.push(incoming.clone());
                    merged.set_flag(incoming.name(), incoming_hidden);
                    continue;
                };
                if merged.tools[index].is_same(incoming) {
                    continue;
                }
                let decision = match incoming.on_collision() {
                    CollisionPolicy::Fail => policy,
                    own => own,
                };
                match decision {
                    CollisionPolicy::Replace => {
                        merged.tools[index] = incoming.clone();
                        merged.set_flag(incoming.name(), incoming_hidden);
                    }
                    CollisionPolicy::Keep => {}
                    CollisionPolicy::Fail => {
                        return Err(ToolRegistryError::MergeCollision {
                            name: incoming.name().to_owned(),
                        });
                    }
                }
            }
        }
        Ok(merged)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.tools.iter().position(|tool| tool.name() == name)
    }

    fn set_flag(&mut self, name: &str, hidden: bool) {
        if hidden {
            self.hidden.insert(name.to_owned());
        } else {
            self.hidden.remove(name);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::primitives::ArgumentViolation;

    fn tool(name: &str) -> Tool {
        described(name, "demo", CollisionPolicy::Fail)
    }

    fn described(name: &str, description: &str, on_collision: CollisionPolicy) -> Tool {
        Tool::builder(name)
            .description(description)
            .on_collision(on_collision)
            .handler(|_, _| async { Ok("ok") })
            .build()
            .unwrap()
    }

    fn ephemeral(name: &str) -> Tool {
        Tool::builder(name)
            .description("demo")
            .ephemeral(true)
            .handler(|_, _| async { Ok("ok") })
            .build()
            .unwrap()
    }

    fn names(tools: &[Tool]) -> Vec<&str> {
        tools.iter().map(Tool::name).collect()
    }

    #[test]
    fn an_empty_tool_name_is_rejected() {
        let error = Tool::builder("")
            .description("d")
            .handler(|_, _| async { Ok("") })
            .build()
            .unwrap_err();
        assert_eq!(error.field(), "name");
        assert_eq!(error.code(), "E_INVALID_INITIAL_TOOL_VALUE");
    }

    #[test]
    fn an_empty_description_is_rejected() {
        let error = Tool::builder("t")
            .handler(|_, _| async { Ok("") })
            .build()
            .unwrap_err();
        assert_eq!(error.field(), "description");
    }

    #[test]
    fn an_input_schema_that_is_not_an_object_schema_is_rejected() {
        let error = Tool::builder("t")
            .description("d")
            .input_schema(json!({"type": "string"}))
            .handler(|_, _| async { Ok("") })
            .build()
            .unwrap_err();
        assert_eq!(error.field(), "input_schema");
    }

    #[test]
    fn an_input_schema_that_does_not_compile_is_rejected_naming_the_tool() {
        let error = Tool::builder("forecast")
            .description("d")
            .input_schema(json!({
                "type": "object",
                "properties": {"days": {"type": "integr"}}
            }))
            .handler(|_, _| async { Ok("") })
            .build()
            .unwrap_err();
        assert_eq!(error.field(), "input_schema");
        assert_eq!(error.id(), Some("forecast"));
        assert!(error.rule().contains("not a valid JSON Schema"), "{error}");
    }

    #[test]
    fn a_schema_referencing_a_remote_document_is_rejected_without_fetching_it() {
        let error = Tool::builder("remote")
            .description("d")
            .input_schema(json!({
                "type": "object",
                "properties": {"x": {"$ref": "https://example.invalid/schema.json"}}
            }))
            .handler(|_, _| async { Ok("") })
            .build()
            .unwrap_err();
        assert_eq!(error.field(), "input_schema");
    }

    fn forecast_tool() -> Tool {
        Tool::builder("forecast")
            .description("d")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1}
                },
                "required": ["city"],
                "additionalProperties": false
            }))
            .handler(|_, _| async { Ok("") })
            .build()
            .unwrap()
    }

    #[test]
    fn validation_lists_every_violation_with_its_pointer() {
        let error = forecast_tool()
            .validate(json!({"days": 0, "unit": "C"}))
            .unwrap_err();
        let mut pointers: Vec<(&str, &str)> = error
            .violations()
            .iter()
            .map(|violation| (violation.pointer(), violation.schema_pointer()))
            .collect();
        pointers.sort_unstable();
        assert_eq!(
            pointers,
            [
                ("", "/additionalProperties"),
                ("", "/required"),
                ("/days", "/properties/days/minimum"),
            ]
        );
        let text = error.to_string();
        assert!(text.contains("3 violations"), "{text}");
        assert!(text.contains("at /days:"), "{text}");
        assert!(text.contains("\"city\" is a required property"), "{text}");
        assert_eq!(error.into_args(), json!({"days": 0, "unit": "C"}));
    }

    #[test]
    fn valid_arguments_come_back_unchanged() {
        let args = json!({"city": "Oslo", "days": 2});
        assert_eq!(forecast_tool().validate(args.clone()).unwrap(), args);
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code, reason = "the fields are read through serde only")]
    struct Coordinates {
        latitude: f64,
        longitude: f64,
        label: Option<String>,
    }

    fn typed_tool() -> Tool {
        Tool::typed::<Coordinates>("locate")
            .description("d")
            .handler(|coordinates: Coordinates, _| async move {
                Ok(format!(
                    "{:.1},{:.1}",
                    coordinates.latitude, coordinates.longitude
                ))
            })
            .build()
            .unwrap()
    }

    #[test]
    fn a_typed_tool_derives_its_schema_from_the_argument_type() {
        let tool = typed_tool();
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["latitude", "longitude"]));
        assert_eq!(schema["properties"]["latitude"]["type"], "number");
        assert!(schema.get("$schema").is_none());
        let error = tool.validate(json!({"latitude": "north"})).unwrap_err();
        assert_eq!(error.violations().len(), 2);
    }

    #[tokio::test]
    async fn a_typed_handler_receives_the_deserialized_struct() {
        let tool = typed_tool();
        let args = tool
            .validate(json!({"latitude": 59.91, "longitude": 10.75}))
            .unwrap();
        let output = tool.call(args, tool.invocation("c")).await.unwrap();
        assert!(matches!(output, ToolOutput::Text(ref text) if text == "59.9,10.8"));
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code, reason = "the fields are read through serde only")]
    struct Trip {
        from: Coordinates,
        to: Coordinates,
    }

    #[test]
    fn nested_argument_types_are_validated_through_their_local_references() {
        let tool = Tool::typed::<Trip>("trip")
            .description("d")
            .handler(|_: Trip, _| async { Ok("ok") })
            .build()
            .unwrap();
        assert!(tool.input_schema()["$defs"]["Coordinates"].is_object());
        let error = tool
            .validate(json!({
                "from": {"latitude": 1.0, "longitude": 2.0},
                "to": {"latitude": "north", "longitude": 2.0}
            }))
            .unwrap_err();
        let pointers: Vec<&str> = error
            .violations()
            .iter()
            .map(ArgumentViolation::pointer)
            .collect();
        assert_eq!(pointers, ["/to/latitude"]);
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Even {
        #[schemars(with = "u32")]
        #[serde(deserialize_with = "even")]
        value: u32,
    }

    fn even<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        let value = <u32 as serde::Deserialize>::deserialize(deserializer)?;
        if value % 2 == 0 {
            Ok(value)
        } else {
            Err(serde::de::Error::custom(format!("{value} is odd")))
        }
    }

    #[tokio::test]
    async fn typed_arguments_that_pass_the_schema_but_do_not_deserialize_are_invalid() {
        let tool = Tool::typed::<Even>("even")
            .description("d")
            .handler(|even: Even, _| async move { Ok(even.value.to_string()) })
            .build()
            .unwrap();
        let error = tool.validate(json!({"value": 3})).unwrap_err();
        assert_eq!(error.code(), "E_INVALID_TOOL_ARGS");
        assert!(
            error.violations()[0].message().contains("3 is odd"),
            "{error}"
        );
        let skipped_validation = tool
            .call(json!({"value": 3}), tool.invocation("c"))
            .await
            .unwrap_err();
        assert!(skipped_validation.to_string().contains("3 is odd"));
    }

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

    #[test]
    fn registration_keeps_insertion_order() {
        let registry = ToolRegistry::from_tools([tool("b"), tool("a"), tool("c")]).unwrap();
        assert_eq!(names(registry.all()), ["b", "a", "c"]);
    }

    #[test]
    fn registering_a_taken_name_is_refused_and_hands_the_tool_back() {
        let mut registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        let error = registry.register(tool("a")).unwrap_err();
        assert!(error.to_string().contains("register_overwriting"));
        assert!(
            matches!(error, ToolRegistryError::AlreadyRegistered { ref rejected, .. } if rejected.name() == "a")
        );
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn from_tools_refuses_duplicate_names() {
        let error = ToolRegistry::from_tools([tool("a"), tool("a")]).unwrap_err();
        assert_eq!(error.code(), "E_TOOL_ALREADY_REGISTERED");
        assert_eq!(error.name(), "a");
    }

    #[test]
    fn overwriting_keeps_position() {
        let mut registry = ToolRegistry::from_tools([tool("a"), tool("b"), tool("c")]).unwrap();
        let replaced = registry.register_overwriting(described("b", "new", CollisionPolicy::Fail));
        assert_eq!(
            replaced
                .map(|tool| tool.description().to_owned())
                .as_deref(),
            Some("demo")
        );
        assert_eq!(names(registry.all()), ["a", "b", "c"]);
        assert_eq!(registry.get("b").unwrap().description(), "new");
    }

    #[test]
    fn unregistering_an_absent_tool_is_a_no_op() {
        let mut registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        assert!(registry.unregister("zzz").is_none());
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn unregistering_also_unhides() {
        let mut registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        registry.hide(["a"]);
        registry.unregister("a");
        registry.register(tool("a")).unwrap();
        assert_eq!(registry.visible().len(), 1);
    }

    #[test]
    fn hiding_unknown_names_is_accepted_and_applies_on_registration() {
        let mut registry = ToolRegistry::new();
        registry.hide(["later"]);
        registry.register(tool("later")).unwrap();
        assert!(registry.visible().is_empty());
        assert_eq!(names(&registry.hidden()), ["later"]);
    }

    #[test]
    fn set_hidden_replaces_the_hidden_set_and_clear_hidden_shows_all() {
        let mut registry = ToolRegistry::from_tools([tool("a"), tool("b")]).unwrap();
        registry.hide(["a"]);
        registry.set_hidden(["b"]);
        assert_eq!(names(&registry.visible()), ["a"]);
        registry.unhide(["b"]);
        assert_eq!(registry.visible().len(), 2);
        registry.hide(["a", "b"]);
        registry.clear_hidden();
        assert_eq!(registry.visible().len(), 2);
    }

    #[test]
    fn pruning_removes_ephemeral_tools_and_their_hidden_flags() {
        let mut registry =
            ToolRegistry::from_tools([tool("kept"), ephemeral("gone"), tool("also")]).unwrap();
        registry.hide(["gone"]);
        let pruned = registry.prune_ephemeral();
        assert_eq!(names(&pruned), ["gone"]);
        assert_eq!(names(registry.all()), ["kept", "also"]);
        assert!(!registry.is_hidden("gone"));
    }

    #[test]
    fn merge_fails_on_collision_when_no_policy_settles_it() {
        let left = ToolRegistry::from_tools([tool("a")]).unwrap();
        let right = ToolRegistry::from_tools([tool("a")]).unwrap();
        let error = ToolRegistry::merge([&left, &right], CollisionPolicy::Fail).unwrap_err();
        assert!(matches!(error, ToolRegistryError::MergeCollision { ref name } if name == "a"));
    }

    #[test]
    fn the_incoming_tools_own_policy_decides_before_the_merge_policy() {
        let base =
            ToolRegistry::from_tools([described("a", "base", CollisionPolicy::Fail)]).unwrap();
        let keeper =
            ToolRegistry::from_tools([described("a", "keep", CollisionPolicy::Keep)]).unwrap();
        let replacer =
            ToolRegistry::from_tools([described("a", "replace", CollisionPolicy::Replace)])
                .unwrap();

        let kept = ToolRegistry::merge([&base, &keeper], CollisionPolicy::Replace).unwrap();
        assert_eq!(kept.get("a").unwrap().description(), "base");

        let replaced = ToolRegistry::merge([&base, &replacer], CollisionPolicy::Fail).unwrap();
        assert_eq!(replaced.get("a").unwrap().description(), "replace");

        let by_policy = ToolRegistry::merge(
            [
                &base,
                &ToolRegistry::from_tools([described("a", "new", CollisionPolicy::Fail)]).unwrap(),
            ],
            CollisionPolicy::Keep,
        )
        .unwrap();
        assert_eq!(by_policy.get("a").unwrap().description(), "base");
    }

    #[test]
    fn merge_propagates_hidden_flags_of_surviving_tools_and_leaves_inputs_alone() {
        let mut left = ToolRegistry::from_tools([tool("a"), tool("b")]).unwrap();
        left.hide(["a"]);
        let mut right = ToolRegistry::from_tools([
            described("b", "right", CollisionPolicy::Replace),
            tool("c"),
        ])
        .unwrap();
        right.hide(["b"]);
        let merged = ToolRegistry::merge([&left, &right], CollisionPolicy::Fail).unwrap();
        assert_eq!(names(merged.all()), ["a", "b", "c"]);
        assert_eq!(names(&merged.hidden()), ["a", "b"]);
        assert_eq!(left.get("b").unwrap().description(), "demo");
        assert_eq!(names(&left.hidden()), ["a"]);
    }

    #[test]
    fn merging_a_registry_with_itself_is_not_a_collision() {
        let registry = ToolRegistry::from_tools([tool("a")]).unwrap();
        let merged = ToolRegistry::merge([&registry, &registry], CollisionPolicy::Fail).unwrap();
        assert_eq!(merged.len(), 1);
    }
}

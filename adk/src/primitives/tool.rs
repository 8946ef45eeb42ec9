//! [`Tool`]: a function the model can call, and [`ToolRegistry`]: the ordered set of tools a
//! turn offers, with hiding and merging.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::error::Checker;
use super::{Media, PrimitiveError, PrimitiveKind, SpooledArtifact};

/// The stored form of a tool's handler: an async function of the arguments and the invocation.
///
/// [`ToolBuilder::handler`] builds one from an ordinary closure; you rarely name this type.
pub type ToolHandler = Arc<
    dyn Fn(Value, ToolInvocation) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync,
>;

/// What a handler learns about the call it serves. Cheap to clone.
///
/// Today it carries the tool's name, the call id and the tool's `meta`; later versions add
/// access to storage and events without changing how handlers are written.
///
/// ```
/// use adk::primitives::ToolInvocation;
///
/// let invocation = ToolInvocation::new("weather", "call-1");
/// assert_eq!(invocation.tool_name(), "weather");
/// assert_eq!(invocation.call_id(), "call-1");
/// assert!(invocation.meta().is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct ToolInvocation {
    tool_name: Arc<str>,
    call_id: Arc<str>,
    meta: Arc<Map<String, Value>>,
}

impl ToolInvocation {
    /// An invocation of `tool_name` identified by `call_id`, with empty `meta`.
    pub fn new(tool_name: impl Into<String>, call_id: impl Into<String>) -> Self {
        Self {
            tool_name: Arc::from(tool_name.into()),
            call_id: Arc::from(call_id.into()),
            meta: Arc::new(Map::new()),
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

    /// The tool's `meta`, as configured when it was built.
    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
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
/// [`source`](std::error::Error::source).
///
/// ```
/// use adk::primitives::ToolError;
///
/// let from_text = ToolError::new("city not found");
/// let from_io = ToolError::new(std::io::Error::other("disk full"));
/// assert_eq!(from_text.to_string(), "the tool handler failed: city not found");
/// assert_eq!(from_io.code(), "E_TOOL_DOWNSTREAM_ERROR");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("the tool handler failed: {source}")]
pub struct ToolError {
    #[source]
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
    meta: Map<String, Value>,
    ephemeral: bool,
    trusted: bool,
    on_collision: CollisionPolicy,
    handler: ToolHandler,
}

/// A function the model can call: a name, a description, a JSON Schema for its arguments and
/// an async handler. Cheap to clone (`Arc` inside); not serializable, since it holds code.
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
    /// Starts building a tool named `name`. [`ToolBuilder::build`] exists only once a handler
    /// is given, so a tool without one does not compile.
    pub fn builder(name: impl Into<String>) -> ToolBuilder {
        ToolBuilder {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            meta: Map::new(),
            ephemeral: false,
            trusted: false,
            on_collision: CollisionPolicy::Fail,
            handler: (),
        }
    }

    /// Runs the handler. Arguments are passed as given (schema validation is not done here).
    pub fn call(
        &self,
        args: Value,
        invocation: ToolInvocation,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.parts.handler)(args, invocation)
    }

    /// An invocation of this tool for `call_id`, carrying the tool's `meta`.
    pub fn invocation(&self, call_id: impl Into<String>) -> ToolInvocation {
        ToolInvocation::new(self.parts.name.as_str(), call_id).with_meta(self.parts.meta.clone())
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

/// Builds a [`Tool`]; `Handler` is `()` until [`handler`](Self::handler) is called, and only
/// then does [`build`](ToolBuilder::build) exist.
#[must_use = "a tool builder does nothing until `build` is called"]
pub struct ToolBuilder<Handler = ()> {
    name: String,
    description: String,
    input_schema: Value,
    meta: Map<String, Value>,
    ephemeral: bool,
    trusted: bool,
    on_collision: CollisionPolicy,
    handler: Handler,
}

impl<Handler> ToolBuilder<Handler> {
    /// What the tool does, for the model (required, non-empty).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The JSON Schema of the arguments: an object schema (`"type": "object"`). Defaults to
    /// `{"type": "object"}`.
    pub fn input_schema(mut self, input_schema: Value) -> Self {
        self.input_schema = input_schema;
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

    /// The async function run for each call. It may return anything convertible into a
    /// [`ToolOutput`] (`String`, `&str`, `Vec<u8>`, a [`SpooledArtifact`], [`Media`]…).
    pub fn handler<Function, Output, Returned>(self, handler: Function) -> ToolBuilder<ToolHandler>
    where
        Function: Fn(Value, ToolInvocation) -> Output + Send + Sync + 'static,
        Output: Future<Output = Result<Returned, ToolError>> + Send + 'static,
        Returned: Into<ToolOutput>,
    {
        let handler: ToolHandler = Arc::new(move |args, invocation| {
            let running = handler(args, invocation);
            Box::pin(async move { running.await.map(Into::into) })
        });
        self.with_stored_handler(handler)
    }

    /// Uses an already-stored handler, e.g. one taken from another tool.
    pub fn with_stored_handler(self, handler: ToolHandler) -> ToolBuilder<ToolHandler> {
        ToolBuilder {
            name: self.name,
            description: self.description,
            input_schema: self.input_schema,
            meta: self.meta,
            ephemeral: self.ephemeral,
            trusted: self.trusted,
            on_collision: self.on_collision,
            handler,
        }
    }
}

impl ToolBuilder<ToolHandler> {
    /// Checks the tool: name and description non-empty, input schema an object schema.
    pub fn build(self) -> Result<Tool, PrimitiveError> {
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
        Ok(Tool {
            parts: Arc::new(ToolParts {
                name: self.name,
                description: self.description,
                input_schema: self.input_schema,
                meta: self.meta,
                ephemeral: self.ephemeral,
                trusted: self.trusted,
                on_collision: self.on_collision,
                handler: self.handler,
            }),
        })
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

    /// Removes every ephemeral tool (and its hidden flag); returns them in order.
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

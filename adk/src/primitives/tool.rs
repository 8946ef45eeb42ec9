//! [`Tool`]: a function the model can call — a name, a description, a JSON Schema for its
//! arguments and a handler — and [`ToolBuilder`], which makes one.
//!
//! A tool checks its arguments against its JSON Schema before its handler runs (the validator
//! is compiled once, when the tool is built). A tool built with [`Tool::typed`] takes a
//! `Deserialize` struct instead of raw JSON, and its schema is derived from that struct. What a
//! handler receives and returns is in `tool_invocation`, the registry in `tool_registry`.

use std::fmt;
use std::future::Future;

use futures_util::future::BoxFuture;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::error::Checker;
use super::tool_arguments::{ArgumentCheck, InvalidToolArgs};
use super::tool_bounds::{ToolArguments, TypedToolHandler};
use super::tool_effect::{Declared, EffectDeclared, KeyFunction, ToolEffect, Undeclared};
use super::tool_invocation::{
    CarriedContext, CarriedStorage, ToolError, ToolHandler, ToolInvocation, ToolOutput,
};
use super::tool_registry::CollisionPolicy;
use super::{PrimitiveError, PrimitiveKind};

struct ToolParts {
    name: String,
    description: String,
    input_schema: Value,
    arguments: ArgumentCheck,
    meta: Arc<Map<String, Value>>,
    ephemeral: bool,
    trusted: bool,
    on_collision: CollisionPolicy,
    effect: ToolEffect,
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
        ToolBuilder::start(name.into(), json!({"type": "object"}), Untyped)
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
    ///     .read_only()
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
    pub fn typed<Arguments>(
        name: impl Into<String>,
    ) -> ToolBuilder<(), Typed<Arguments>, Undeclared>
    where
        Arguments: ToolArguments,
    {
        let generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|settings| settings.meta_schema = None)
            .into_generator();
        let schema = generator.into_root_schema_for::<Arguments>().to_value();
        ToolBuilder::start(
            name.into(),
            schema,
            Typed {
                decode: decode::<Arguments>,
                check: decodes::<Arguments>,
            },
        )
    }

    /// Checks `args` against the input schema (and, for a [typed](Self::typed) tool, that
    /// they deserialize into its argument type). Returns them unchanged when they pass, or
    /// every violation, with the arguments, when they do not.
    pub fn validate(&self, args: Value) -> Result<Value, InvalidToolArgs> {
        self.parts.arguments.check(&self.parts.name, args)
    }

    /// Runs the handler. Arguments are passed as given: call [`validate`](Self::validate)
    /// first, or let a dispatch's `execute_tool` do both.
    ///
    /// For an idempotent tool, the invocation is given the call's
    /// [idempotency key](ToolInvocation::idempotency_key) first (unless it carries one); when
    /// no key can be derived (a typed tool's arguments do not deserialize), the call fails
    /// with that error and the handler does not run.
    pub fn call(
        &self,
        args: Value,
        mut invocation: ToolInvocation,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        if invocation.idempotency_key.is_none() {
            match self
                .parts
                .effect
                .key(&self.parts.name, invocation.call_id(), &args)
            {
                Ok(key) => invocation.idempotency_key = key.map(Arc::from),
                Err(error) => return Box::pin(async move { Err(ToolError::from(error)) }),
            }
        }
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
        storage: CarriedStorage,
        storage_context: CarriedContext,
    ) -> ToolInvocation {
        ToolInvocation {
            tool_name: Arc::from(self.parts.name.as_str()),
            call_id: Arc::from(call_id),
            checksum: Some(Arc::from(checksum)),
            idempotency_key: None,
            meta: Arc::clone(&self.parts.meta),
            dispatch: Some((Arc::from(dispatch_id), iteration)),
            storage,
            storage_context,
            gates: <super::TurnGates as super::InvocationGates>::standalone(),
            state: <super::TurnState as super::InvocationState>::standalone(),
            defers_ledger_result: false,
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
    ///
    /// [`ToolRegistry::prune_ephemeral`]: super::ToolRegistry::prune_ephemeral
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

    /// What running it does outside the process (see [`ToolEffect`]).
    pub fn effect(&self) -> &ToolEffect {
        &self.parts.effect
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

    pub(super) fn is_same(&self, other: &Tool) -> bool {
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
            .field("effect", &self.parts.effect)
            .finish_non_exhaustive()
    }
}

/// Marks a [`ToolBuilder`] whose handler takes the arguments as JSON ([`Tool::builder`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Untyped;

/// Marks a [`ToolBuilder`] whose handler takes `Arguments`, a `Deserialize` struct
/// ([`Tool::typed`]).
///
/// It carries the decoding of `Arguments`, so the builder's methods need no bound of their
/// own: an argument type that is not [`ToolArguments`] is reported once, at `Tool::typed`.
pub struct Typed<Arguments> {
    decode: fn(&Value) -> Result<Arguments, serde_json::Error>,
    check: fn(&Value) -> Result<(), serde_json::Error>,
}

fn decode<Arguments: DeserializeOwned>(args: &Value) -> Result<Arguments, serde_json::Error> {
    Arguments::deserialize(args)
}

fn decodes<Arguments: DeserializeOwned>(args: &Value) -> Result<(), serde_json::Error> {
    Arguments::deserialize(args).map(drop)
}

impl<Arguments> fmt::Debug for Typed<Arguments> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "Typed<{}>", std::any::type_name::<Arguments>())
    }
}

/// Builds a [`Tool`]. `Handler` is `()` until [`handler`](Self::handler) is called, and only
/// then does [`build`](ToolBuilder::build) exist. `Arguments` is [`Untyped`] (JSON arguments,
/// any schema through [`input_schema`](Self::input_schema)) or [`Typed`] (a struct whose
/// derived schema cannot be replaced). `Effect` is [`Undeclared`] until the tool's
/// [`ToolEffect`] is declared ([`read_only`](Self::read_only),
/// [`idempotent_by`](Self::idempotent_by), [`idempotent_on_arguments`](Self::idempotent_on_arguments),
/// [`idempotent_per_call`](Self::idempotent_per_call), [`at_most_once`](Self::at_most_once)),
/// then [`Declared`]: a typed tool builds only once declared; an untyped one that declares
/// nothing is at-most-once.
#[must_use = "a tool builder does nothing until `build` is called"]
pub struct ToolBuilder<Handler = (), Arguments = Untyped, Effect = Undeclared> {
    name: String,
    description: String,
    input_schema: Value,
    meta: Map<String, Value>,
    ephemeral: bool,
    trusted: bool,
    on_collision: CollisionPolicy,
    effect: Option<ToolEffect>,
    handler: Handler,
    arguments: Arguments,
    declared: PhantomData<Effect>,
}

impl<Arguments> ToolBuilder<(), Arguments, Undeclared> {
    fn start(name: String, input_schema: Value, arguments: Arguments) -> Self {
        Self {
            name,
            description: String::new(),
            input_schema,
            meta: Map::new(),
            ephemeral: false,
            trusted: false,
            on_collision: CollisionPolicy::Fail,
            effect: None,
            handler: (),
            arguments,
            declared: PhantomData,
        }
    }
}

impl<Handler, Arguments, Effect> ToolBuilder<Handler, Arguments, Effect> {
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
    ///
    /// [`ToolRegistry::prune_ephemeral`]: super::ToolRegistry::prune_ephemeral
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

    /// Declares the tool's effect as a value (see [`ToolEffect`]); the named methods
    /// ([`read_only`](Self::read_only)…) read better where the effect is fixed.
    pub fn effect(self, effect: ToolEffect) -> ToolBuilder<Handler, Arguments, Declared> {
        self.rebuild(self_handler, Some(effect))
    }

    /// The tool changes nothing outside the process: it may run any number of times, and a
    /// dispatch records nothing for it.
    pub fn read_only(self) -> ToolBuilder<Handler, Arguments, Declared> {
        self.effect(ToolEffect::read_only())
    }

    /// Running the tool twice may do its thing twice: it runs at most once per call, and when
    /// it is not known whether a call ran, it is not run again (see [`ToolEffect`]).
    pub fn at_most_once(self) -> ToolBuilder<Handler, Arguments, Declared> {
        self.effect(ToolEffect::at_most_once())
    }

    /// Idempotent under the checksum of the tool's name and arguments: calling it again with
    /// the same arguments has no further effect.
    pub fn idempotent_on_arguments(self) -> ToolBuilder<Handler, Arguments, Declared> {
        self.effect(ToolEffect::idempotent_on_arguments())
    }

    /// Idempotent under the key the caller gives, the call's id: the handler reads it from
    /// [`ToolInvocation::idempotency_key`] and passes it to the system it changes.
    pub fn idempotent_per_call(self) -> ToolBuilder<Handler, Arguments, Declared> {
        self.effect(ToolEffect::idempotent_per_call())
    }

    fn rebuild<Stored, State>(
        self,
        handler: impl FnOnce(Handler) -> Stored,
        effect: Option<ToolEffect>,
    ) -> ToolBuilder<Stored, Arguments, State> {
        ToolBuilder {
            name: self.name,
            description: self.description,
            input_schema: self.input_schema,
            meta: self.meta,
            ephemeral: self.ephemeral,
            trusted: self.trusted,
            on_collision: self.on_collision,
            effect: effect.or(self.effect),
            handler: handler(self.handler),
            arguments: self.arguments,
            declared: PhantomData,
        }
    }

    fn with_handler<Stored>(self, handler: Stored) -> ToolBuilder<Stored, Arguments, Effect> {
        self.rebuild(|_| handler, None)
    }
}

fn self_handler<Handler>(handler: Handler) -> Handler {
    handler
}

impl<Handler, Effect> ToolBuilder<Handler, Untyped, Effect> {
    /// The JSON Schema of the arguments: an object schema (`"type": "object"`). Defaults to
    /// `{"type": "object"}`.
    pub fn input_schema(mut self, input_schema: Value) -> Self {
        self.input_schema = input_schema;
        self
    }

    /// The async function run for each call, given the validated arguments as JSON. It may
    /// return anything convertible into a [`ToolOutput`] (`String`, `&str`, `Vec<u8>`, a
    /// [`SpooledArtifact`], [`Media`]…).
    ///
    /// [`SpooledArtifact`]: super::SpooledArtifact
    /// [`Media`]: super::Media
    pub fn handler<Function, Output, Returned>(
        self,
        handler: Function,
    ) -> ToolBuilder<ToolHandler, Untyped, Effect>
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
    pub fn with_stored_handler(
        self,
        handler: ToolHandler,
    ) -> ToolBuilder<ToolHandler, Untyped, Effect> {
        self.with_handler(handler)
    }

    /// Idempotent under the key `key` derives from the arguments (as JSON): calling the tool
    /// again under the same key has no further effect. The handler reads the key from
    /// [`ToolInvocation::idempotency_key`].
    pub fn idempotent_by<Function, Key>(
        self,
        key: Function,
    ) -> ToolBuilder<Handler, Untyped, Declared>
    where
        Function: Fn(&Value) -> Key + Send + Sync + 'static,
        Key: Into<String>,
    {
        self.effect(ToolEffect::idempotent_by_json(key))
    }
}

impl<Handler, Arguments: 'static, Effect> ToolBuilder<Handler, Typed<Arguments>, Effect> {
    /// Idempotent under the key `key` derives from the typed arguments: calling the tool again
    /// under the same key has no further effect. The closure takes `&Arguments`, the tool's own
    /// argument type (any other does not compile); the handler reads the key from
    /// [`ToolInvocation::idempotency_key`].
    ///
    /// ```
    /// use adk::primitives::{EffectKind, Tool};
    /// use serde::Deserialize;
    /// use serde_json::json;
    ///
    /// #[derive(Deserialize, schemars::JsonSchema)]
    /// struct Refund { order: String, cents: u64 }
    ///
    /// let refund = Tool::typed::<Refund>("refund")
    ///     .description("Refunds an order.")
    ///     .idempotent_by(|args: &Refund| format!("refund-{}", args.order))
    ///     .handler(|args: Refund, invocation| async move {
    ///         let key = invocation.idempotency_key().unwrap_or_default().to_owned();
    ///         Ok(format!("refunded {} cents (key {key})", args.cents))
    ///     })
    ///     .build()?;
    /// assert_eq!(refund.effect().kind(), EffectKind::Idempotent);
    /// let key = refund.effect().key("refund", "c1", &json!({"order": "A7", "cents": 5}))?;
    /// assert_eq!(key.as_deref(), Some("refund-A7"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn idempotent_by<Function, Key>(
        self,
        key: Function,
    ) -> ToolBuilder<Handler, Typed<Arguments>, Declared>
    where
        Function: Fn(&Arguments) -> Key + Send + Sync + 'static,
        Key: Into<String>,
    {
        let decode = self.arguments.decode;
        let function: KeyFunction = Arc::new(move |args: &Value| {
            decode(args)
                .map(|arguments| key(&arguments).into())
                .map_err(|error| error.to_string())
        });
        self.effect(ToolEffect::idempotent_by_function(function))
    }

    /// The async function run for each call, given the arguments deserialized into
    /// `Arguments`. It may return anything convertible into a [`ToolOutput`].
    ///
    /// It takes `Arguments`, the type named in [`Tool::typed`], and a [`ToolInvocation`]
    /// ([`TypedToolHandler`]); a handler that takes another type does not compile, and the
    /// error says which type it must take.
    pub fn handler<Function, Output, Returned, Marker>(
        self,
        handler: Function,
    ) -> ToolBuilder<ToolHandler, Typed<Arguments>, Effect>
    where
        Function: TypedToolHandler<Arguments, Output, Marker> + Send + Sync + 'static,
        Output: Future<Output = Result<Returned, ToolError>> + Send + 'static,
        Returned: Into<ToolOutput>,
    {
        let decode = self.arguments.decode;
        let handler: ToolHandler = Arc::new(move |args: Value, invocation| {
            // `validate` already proved the arguments deserialize; a caller that skipped it
            // (`Tool::call` on raw JSON) gets the decode error as the handler's error.
            match decode(&args) {
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

impl<Arguments, Effect> ToolBuilder<ToolHandler, Arguments, Effect> {
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
                effect: self.effect.unwrap_or_else(ToolEffect::at_most_once),
                handler: self.handler,
            }),
        })
    }
}

impl<Effect> ToolBuilder<ToolHandler, Untyped, Effect> {
    /// Checks the tool (name and description non-empty, input schema an object schema that
    /// compiles) and compiles its argument validator. The error names the tool and the field.
    ///
    /// An untyped tool that declared no effect is [at-most-once](ToolEffect::at_most_once):
    /// its arguments are opaque JSON, so nothing says running it twice is harmless, and
    /// at-most-once is the effect that never repeats a side effect.
    pub fn build(self) -> Result<Tool, PrimitiveError> {
        self.build_checked(|arguments| arguments)
    }
}

impl<Arguments, Effect> ToolBuilder<ToolHandler, Typed<Arguments>, Effect> {
    /// Checks the tool (name and description non-empty, the derived schema an object schema)
    /// and compiles its argument checks. The error names the tool and the field.
    ///
    /// It compiles only once the tool's effect is declared ([`EffectDeclared`]): a typed tool
    /// says what running it does.
    pub fn build(self) -> Result<Tool, PrimitiveError>
    where
        Effect: EffectDeclared,
    {
        let check = self.arguments.check;
        self.build_checked(|arguments| arguments.decoding(check))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use crate::primitives::ArgumentViolation;

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
            .read_only()
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
            .read_only()
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
            .read_only()
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
}

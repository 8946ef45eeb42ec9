//! [`ToolEffect`]: what running a tool does to the world outside the process, declared when
//! the tool is built, and the typestate that makes a [typed](super::Tool::typed) tool declare it.
//!
//! Three effects:
//! - **read-only**: the tool changes nothing; running it again is harmless.
//! - **idempotent under a key**: running it again with the same key has no further effect (the
//!   key is derived from the arguments, or is the call's id); a handler reads the key from
//!   [`ToolInvocation::idempotency_key`](super::ToolInvocation::idempotency_key) and hands it
//!   to the system it changes.
//! - **at-most-once**: running it twice may do the thing twice, so it must not be re-run when
//!   it is not known whether it ran.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::tool_call::tool_call_checksum;

/// The stored form of a key closure: the arguments as JSON to the key, or why none can be made
/// (typed tools: the arguments do not deserialize).
pub(crate) type KeyFunction = Arc<dyn Fn(&Value) -> Result<String, String> + Send + Sync>;

/// No idempotency key could be derived for a call: a typed tool's key closure needs the
/// arguments as its argument type, and they do not deserialize into it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no idempotency key for a call of tool {tool:?}: the arguments do not deserialize into \
     the tool's argument type ({reason}); validate them against the tool first"
)]
pub struct EffectKeyError {
    /// The tool.
    pub tool: String,
    /// Why the arguments did not deserialize.
    pub reason: String,
}

/// The three kinds of [`ToolEffect`], without the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EffectKind {
    /// Changes nothing outside the process.
    ReadOnly,
    /// Running it again under the same key has no further effect.
    Idempotent,
    /// Running it twice may do the thing twice.
    AtMostOnce,
}

impl EffectKind {
    /// `"read_only"`, `"idempotent"` or `"at_most_once"`: the name stored in a ledger record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Idempotent => "idempotent",
            Self::AtMostOnce => "at_most_once",
        }
    }
}

impl fmt::Display for EffectKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

#[derive(Clone)]
enum KeySource {
    /// A closure over the arguments.
    Arguments(KeyFunction),
    /// The checksum of the tool's name and canonical arguments.
    ArgumentChecksum,
    /// The call's id, as the caller (the model) gave it.
    CallId,
}

/// What running a tool does outside the process. Every tool has one: a
/// [typed](super::Tool::typed) tool must declare it (its `build` does not compile otherwise);
/// an untyped one ([`Tool::builder`](super::Tool::builder)) that declares none is
/// [at-most-once](Self::at_most_once), the effect that never repeats a side effect.
///
/// ```
/// use adk::primitives::{EffectKind, ToolEffect};
/// use serde_json::json;
///
/// let effect = ToolEffect::idempotent_on_arguments();
/// assert_eq!(effect.kind(), EffectKind::Idempotent);
/// let key = effect.key("send", "call-1", &json!({"to": "ana"})).unwrap();
/// let same = effect.key("send", "call-2", &json!({"to": "ana"})).unwrap();
/// assert_eq!(key, same); // same arguments, same key, whatever the call
/// assert_eq!(ToolEffect::read_only().key("t", "c", &json!({})).unwrap(), None);
/// ```
#[derive(Clone)]
pub struct ToolEffect {
    kind: EffectKind,
    key: Option<KeySource>,
}

impl ToolEffect {
    /// The tool changes nothing outside the process; it may run any number of times.
    pub fn read_only() -> Self {
        Self {
            kind: EffectKind::ReadOnly,
            key: None,
        }
    }

    /// The tool may do its thing twice if it runs twice, so it runs at most once per call.
    pub fn at_most_once() -> Self {
        Self {
            kind: EffectKind::AtMostOnce,
            key: None,
        }
    }

    /// Idempotent under a key the closure derives from the arguments (as JSON; typed tools use
    /// [`ToolBuilder::idempotent_by`](super::ToolBuilder::idempotent_by) with their type).
    pub fn idempotent_by_json<Function, Key>(key: Function) -> Self
    where
        Function: Fn(&Value) -> Key + Send + Sync + 'static,
        Key: Into<String>,
    {
        Self::idempotent_by_function(Arc::new(move |args| Ok(key(args).into())))
    }

    pub(crate) fn idempotent_by_function(key: KeyFunction) -> Self {
        Self {
            kind: EffectKind::Idempotent,
            key: Some(KeySource::Arguments(key)),
        }
    }

    /// Idempotent under the checksum of the tool's name and its arguments (object keys in any
    /// order): the same arguments have the same effect once. MCP tools annotated
    /// `idempotentHint: true` get this effect.
    pub fn idempotent_on_arguments() -> Self {
        Self {
            kind: EffectKind::Idempotent,
            key: Some(KeySource::ArgumentChecksum),
        }
    }

    /// Idempotent under the key the caller gives: the call's id, which the model chose and
    /// which stays the same when the same call is run again.
    pub fn idempotent_per_call() -> Self {
        Self {
            kind: EffectKind::Idempotent,
            key: Some(KeySource::CallId),
        }
    }

    /// Which of the three effects it is.
    pub fn kind(&self) -> EffectKind {
        self.kind
    }

    /// Whether the tool changes nothing outside the process.
    pub fn is_read_only(&self) -> bool {
        self.kind == EffectKind::ReadOnly
    }

    /// The idempotency key of a call of `tool` with id `call_id` and arguments `args`; `None`
    /// for a read-only or at-most-once tool. Fails only when a typed tool's arguments do not
    /// deserialize into its argument type (a dispatch validates them before asking).
    pub fn key(
        &self,
        tool: &str,
        call_id: &str,
        args: &Value,
    ) -> Result<Option<String>, EffectKeyError> {
        match &self.key {
            None => Ok(None),
            Some(KeySource::Arguments(function)) => {
                function(args).map(Some).map_err(|reason| EffectKeyError {
                    tool: tool.to_owned(),
                    reason,
                })
            }
            Some(KeySource::ArgumentChecksum) => {
                let empty = Map::new();
                let object = args.as_object().unwrap_or(&empty);
                Ok(Some(tool_call_checksum(tool, object)))
            }
            Some(KeySource::CallId) => Ok(Some(call_id.to_owned())),
        }
    }
}

impl fmt::Debug for ToolEffect {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = match &self.key {
            None => None,
            Some(KeySource::Arguments(_)) => Some("derived from the arguments"),
            Some(KeySource::ArgumentChecksum) => Some("the arguments' checksum"),
            Some(KeySource::CallId) => Some("the call id"),
        };
        formatter
            .debug_struct("ToolEffect")
            .field("kind", &self.kind)
            .field("key", &key)
            .finish()
    }
}

/// Marks a [`ToolBuilder`](super::ToolBuilder) whose tool has not declared its effect yet.
#[derive(Debug, Clone, Copy, Default)]
pub struct Undeclared;

/// Marks a [`ToolBuilder`](super::ToolBuilder) whose tool has declared its effect.
#[derive(Debug, Clone, Copy, Default)]
pub struct Declared;

/// Holds for [`Declared`] only: a typed tool's `build` requires it, so a typed tool that says
/// nothing about its effect does not compile.
#[diagnostic::on_unimplemented(
    message = "this typed tool does not declare its effect",
    label = "`build` needs the tool's effect first",
    note = "declare it before `.build()`: `.read_only()` (changes nothing), \
            `.idempotent_by(|args| key)` (running it again under the same key does nothing more), \
            `.idempotent_on_arguments()`, `.idempotent_per_call()`, or `.at_most_once()` \
            (never re-run when it is not known whether it ran)"
)]
pub trait EffectDeclared: sealed::Sealed {}

impl EffectDeclared for Declared {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Declared {}
    impl Sealed for super::Undeclared {}
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_argument_checksum_key_ignores_key_order_and_the_call_id() {
        let effect = ToolEffect::idempotent_on_arguments();
        let one = effect.key("t", "a", &json!({"x": 1, "y": [1, 2]})).unwrap();
        let other = effect.key("t", "b", &json!({"y": [1, 2], "x": 1})).unwrap();
        assert_eq!(one, other);
        assert_ne!(one, effect.key("t", "a", &json!({"x": 2})).unwrap());
        assert_ne!(
            one,
            effect.key("u", "a", &json!({"x": 1, "y": [1, 2]})).unwrap()
        );
    }

    #[test]
    fn a_per_call_key_is_the_call_id() {
        let effect = ToolEffect::idempotent_per_call();
        assert_eq!(
            effect.key("t", "call-9", &json!({})).unwrap().as_deref(),
            Some("call-9")
        );
    }

    #[test]
    fn read_only_and_at_most_once_tools_have_no_key() {
        for effect in [ToolEffect::read_only(), ToolEffect::at_most_once()] {
            assert_eq!(effect.key("t", "c", &json!({"x": 1})).unwrap(), None);
        }
        assert!(ToolEffect::read_only().is_read_only());
        assert_eq!(ToolEffect::at_most_once().kind(), EffectKind::AtMostOnce);
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Order {
        id: u32,
    }

    fn keyed_order_tool(ran: Arc<std::sync::atomic::AtomicBool>) -> crate::primitives::Tool {
        crate::primitives::Tool::typed::<Order>("ship")
            .description("d")
            .idempotent_by(|order: &Order| format!("ship-{}", order.id))
            .handler(
                move |order: Order, invocation: crate::primitives::ToolInvocation| {
                    ran.store(true, std::sync::atomic::Ordering::SeqCst);
                    async move {
                        Ok(format!(
                            "{} under {:?}",
                            order.id,
                            invocation.idempotency_key()
                        ))
                    }
                },
            )
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn the_handler_of_an_idempotent_tool_sees_the_key_its_arguments_give() {
        let tool = keyed_order_tool(Arc::default());
        let output = tool
            .call(json!({"id": 4}), tool.invocation("c"))
            .await
            .unwrap();
        assert!(
            matches!(output, crate::primitives::ToolOutput::Text(ref text) if text == "4 under Some(\"ship-4\")"),
            "{output:?}"
        );
    }

    #[tokio::test]
    async fn a_key_set_on_the_invocation_is_kept() {
        let tool = keyed_order_tool(Arc::default());
        let invocation = tool.invocation("c").with_idempotency_key("recorded");
        let output = tool.call(json!({"id": 4}), invocation).await.unwrap();
        assert!(
            matches!(output, crate::primitives::ToolOutput::Text(ref text) if text.ends_with("Some(\"recorded\")")),
            "{output:?}"
        );
    }

    #[tokio::test]
    async fn without_a_key_the_handler_does_not_run() {
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let tool = keyed_order_tool(Arc::clone(&ran));
        let error = tool
            .call(json!({"id": "four"}), tool.invocation("c"))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no idempotency key"), "{error}");
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(
            tool.effect()
                .key("ship", "c", &json!({"id": 4}))
                .unwrap()
                .as_deref(),
            Some("ship-4")
        );
    }

    #[test]
    fn a_json_key_closure_sees_the_arguments() {
        let effect = ToolEffect::idempotent_by_json(|args| format!("order-{}", args["id"]));
        assert_eq!(
            effect.key("t", "c", &json!({"id": 7})).unwrap().as_deref(),
            Some("order-7")
        );
    }
}

//! What [`Tool::typed`](super::Tool::typed) asks of a tool's argument type and of its handler,
//! as traits whose compile errors say what is wrong in the kit's words, at the user's code: a
//! type without `Deserialize` or `JsonSchema` is reported at `Tool::typed::<Type>`, a handler
//! that takes another type at the handler.

use serde::de::DeserializeOwned;

use super::tool_invocation::ToolInvocation;

/// A typed tool's argument type: decoded from the model's JSON and described to it by a JSON
/// Schema, so `Deserialize` and `schemars::JsonSchema`, both derived:
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Refund {
///     order: String,
/// }
///
/// fn arguments<T: adk::primitives::ToolArguments>() {}
/// arguments::<Refund>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a typed tool's arguments: it must derive `serde::Deserialize` and `schemars::JsonSchema`",
    label = "`Tool::typed` derives the tool's schema from `{Self}` and decodes the model's arguments into it",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}` (and to the types of its fields), or build the tool with `Tool::builder` and a handler that takes `serde_json::Value`"
)]
pub trait ToolArguments: DeserializeOwned + schemars::JsonSchema + 'static {}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned + schemars::JsonSchema + 'static> ToolArguments for T {}

/// A typed tool's handler: a function or closure that takes the tool's `Arguments` (the type
/// named in [`Tool::typed`](super::Tool::typed)) and a [`ToolInvocation`], and returns a future.
/// Implemented for every such `Fn`; `Marker` is inferred and never written.
#[diagnostic::on_unimplemented(
    message = "this handler does not take the typed tool's arguments `{Arguments}`",
    label = "expected a handler that takes `{Arguments}`: `|args: {Arguments}, invocation| async move {{ ... }}`",
    note = "a typed tool's handler takes the type named in `Tool::typed::<{Arguments}>` and a `ToolInvocation`: change its first parameter's type to `{Arguments}`, or name the type it takes in `Tool::typed`"
)]
pub trait TypedToolHandler<Arguments, Output, Marker>:
    Fn(Arguments, ToolInvocation) -> Output
{
}

#[doc(hidden)]
pub mod marker {
    //! The markers of [`TypedToolHandler`](super::TypedToolHandler)'s two impls. With two
    //! candidate impls, rustc reports a handler of the wrong type in the trait's own words
    //! instead of explaining the `Fn` bound of one impl.

    /// The impl for every handler.
    pub enum Handler {}

    /// The impl that no type meets.
    pub enum Unreachable {}

    /// Implemented by no type.
    pub trait Never {}
}

#[diagnostic::do_not_recommend]
impl<Arguments, Output, Function> TypedToolHandler<Arguments, Output, marker::Handler> for Function where
    Function: Fn(Arguments, ToolInvocation) -> Output
{
}

#[diagnostic::do_not_recommend]
impl<Arguments, Output, Function> TypedToolHandler<Arguments, Output, marker::Unreachable>
    for Function
where
    Function: marker::Never + Fn(Arguments, ToolInvocation) -> Output,
{
}
